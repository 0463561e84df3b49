#include "ops/shape/concat.h"

#include <algorithm>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

// XLA's compile time grows faster than the operand count of one
// concatenate (on the CPU plugin: 1.0 s at 500 operands, 6.7 s at 2000),
// and its simplifier merges nested concatenates back into one. So many
// operands are joined in groups of this many, each group's result behind
// an optimization barrier (0.36 s at 500, 1.1 s at 2000, 2.5 s at 5000),
// at the price of one more copy of the data.
constexpr size_t kGroup = 32;

}  // namespace

hlo::Value lower_cat(hlo::Builder& b, const std::vector<hlo::Value>& xs, int64_t dim, ElementType out) {
  if (xs.empty()) throw hlo::HloError("aten::cat: no operands");
  // Parts empty along `dim` add nothing; leave them out of the program.
  std::vector<hlo::Value> parts;
  for (const hlo::Value& x : xs) {
    if (x.rank() <= dim) throw hlo::HloError("aten::cat: dimension out of range for " + x.type().to_string());
    if (x.dims()[dim] != 0) parts.push_back(convert_to(b, x, out));
  }
  if (parts.empty()) return convert_to(b, xs[0], out);
  while (parts.size() > kGroup) {
    std::vector<hlo::Value> groups;
    for (size_t i = 0; i < parts.size(); i += kGroup) {
      std::vector<hlo::Value> group(parts.begin() + i, parts.begin() + std::min(parts.size(), i + kGroup));
      groups.push_back(group.size() == 1 ? group[0] : b.optimization_barrier({b.concatenate(group, dim)})[0]);
    }
    parts = std::move(groups);
  }
  return parts.size() == 1 ? parts[0] : b.concatenate(parts, dim);
}

}  // namespace torch_tpu::ops
