// ATen glue for _weight_norm_interface and its backward, which
// torch._weight_norm (weight_norm's hook and parametrization) calls for a
// norm over every dim but the first or the last. Lowering:
// csrc/ops/nn/weight_norm.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/nn/weight_norm.h"

namespace torch_tpu::aten {

namespace {

using at::Tensor;
using Values = std::vector<hlo::Value>;

int64_t checked_dim(const Tensor& v, const Tensor& g, int64_t dim, const char* op) {
  TORCH_CHECK(v.dim() > 0 && (dim == 0 || dim == v.dim() - 1), op,
              ": the fused weight norm applies to the first or the last dim, got dim ", dim, " for v of size ",
              v.sizes());
  TORCH_CHECK(g.numel() == v.size(dim), op, ": expected g with ", v.size(dim), " elements (v's size along dim ",
              dim, "), got g of size ", g.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(v.scalar_type()), op, ": not implemented for '",
                              c10::toString(v.scalar_type()), "'");
  TORCH_CHECK(g.scalar_type() == v.scalar_type(), op, ": expected g of dtype ", v.scalar_type(), ", got ",
              g.scalar_type());
  to_element_type(v.scalar_type(), op);
  return dim;
}

std::tuple<Tensor, Tensor> weight_norm(const Tensor& v, const Tensor& g, int64_t dim_in) {
  const int64_t dim = checked_dim(v, g, dim_in, "_weight_norm_interface");
  OpCall call{"aten::_weight_norm_interface", std::string(1, static_cast<char>(dim == 0 ? 'f' : 'l')), {v, g}, {}};
  auto r = run_op(call, [dim](hlo::Builder& b, const Values& t, const Values&) {
    ops::WeightNorm w = ops::lower_weight_norm(b, t[0], t[1], dim);
    return Values{w.w, w.norms};
  });
  return {r.at(0), r.at(1)};
}

std::tuple<Tensor, Tensor> weight_norm_backward(const Tensor& grad_w, const Tensor& v, const Tensor& g,
                                                const Tensor& norms, int64_t dim_in) {
  const char* op = "_weight_norm_interface_backward";
  const int64_t dim = checked_dim(v, g, dim_in, op);
  TORCH_CHECK(grad_w.sizes() == v.sizes() && grad_w.scalar_type() == v.scalar_type(), op,
              ": expected grad_w of v's size and dtype, got ", grad_w.sizes(), " ", grad_w.scalar_type());
  TORCH_CHECK(norms.numel() == g.numel(), op, ": expected norms of g's size, got ", norms.sizes());
  OpCall call{"aten::_weight_norm_interface_backward", std::string(1, static_cast<char>(dim == 0 ? 'f' : 'l')),
              {grad_w, v, g, norms}, {}};
  auto r = run_op(call, [dim](hlo::Builder& b, const Values& t, const Values&) {
    ops::WeightNormGrads grads = ops::lower_weight_norm_backward(b, t[0], t[1], t[2], t[3], dim);
    return Values{grads.v, grads.g};
  });
  return {r.at(0), r.at(1)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_weight_norm_interface", weight_norm);
  m.impl("_weight_norm_interface_backward", weight_norm_backward);
}

}  // namespace torch_tpu::aten
