// ATen glue for the factories that compute values: arange (and through it
// torch.arange / range forms that ATen routes to arange.start_out).
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/factory/ranges.h"

namespace torch_tpu::aten {

namespace {

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out) {
  int64_t n = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_tpu", [&] {
    n = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  at::native::resize_output(out, {n});
  const ElementType type = to_element_type(out.scalar_type(), "aten::arange");
  const ElementType compute = ops::arange_compute_type(type);
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(n);
  OpCall call{"aten::arange", std::move(attributes), {}, {{compute, start}, {compute, step}}};
  run_op_into(call, [n, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_arange(b, s[0], s[1], n, type)};
  }, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", arange_out);
}

}  // namespace torch_tpu::aten
