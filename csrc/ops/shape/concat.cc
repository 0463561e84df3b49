#include "ops/shape/concat.h"

#include "ops/broadcast.h"

namespace torch_tpu::ops {

hlo::Value lower_cat(hlo::Builder& b, const std::vector<hlo::Value>& xs, int64_t dim, ElementType out) {
  if (xs.empty()) throw hlo::HloError("aten::cat: no operands");
  // Parts empty along `dim` add nothing; leave them out of the program.
  std::vector<hlo::Value> parts;
  for (const hlo::Value& x : xs) {
    if (x.rank() <= dim) throw hlo::HloError("aten::cat: dimension out of range for " + x.type().to_string());
    if (x.dims()[dim] != 0) parts.push_back(convert_to(b, x, out));
  }
  if (parts.empty()) return convert_to(b, xs[0], out);
  return parts.size() == 1 ? parts[0] : b.concatenate(parts, dim);
}

}  // namespace torch_tpu::ops
