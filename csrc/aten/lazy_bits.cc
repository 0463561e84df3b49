#include "aten/lazy_bits.h"

#include <vector>

#include "ops/elementwise/unary.h"

namespace torch_tpu::aten {

at::Tensor resolve_lazy_bits(const at::Tensor& t) {
  const bool conj = t.is_conj(), neg = t.is_neg();
  OpCall call{"aten::resolve_conj", conj ? (neg ? "cn" : "c") : "n", {t}, {}};
  return run_op(call, [conj, neg](hlo::Builder& b, const std::vector<hlo::Value>& v,
                                  const std::vector<hlo::Value>&) {
    hlo::Value x = v[0];
    if (conj) x = ops::conjugate(b, x);
    if (neg) x = b.negate(x);
    return std::vector<hlo::Value>{x};
  }).at(0);
}

at::Tensor without_lazy_bits(const at::Tensor& t) {
  return (t.is_conj() || t.is_neg()) ? resolve_lazy_bits(t) : t;
}

TensorArg operand_without_lazy_bits(const at::Tensor& t) {
  return (t.is_conj() || t.is_neg()) ? TensorArg(resolve_lazy_bits(t)) : TensorArg::borrowed(t);
}

}  // namespace torch_tpu::aten
