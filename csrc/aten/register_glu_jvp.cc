// Forward-mode derivatives of glu and of its backward (torch.func.jvp,
// jacfwd, hessian through nn.GLU). PyTorch has no decomposition for these
// two ops; they are written here from tpu ops. With a = x[:h], b = x[h:]
// along dim and s = sigmoid(b):
//   glu = a s,  d glu = s da + glu (1 - s) db
//   glu_backward(g) = [g s, g a s (1 - s)], whose tangent in (g, a, b) is
//     [dg s + g s (1 - s) db,  s (1 - s) (dg a + g da + g a (1 - 2 s) db)].
#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sigmoid.h>
#include <torch/library.h>

namespace torch_tpu::aten {

namespace {

struct GluHalves {
  at::Tensor a, b, da, db;
};

GluHalves halves(const at::Tensor& x, const at::Tensor& dx, int64_t dim, int64_t half) {
  return {x.narrow(dim, 0, half), x.narrow(dim, half, half), dx.narrow(dim, 0, half), dx.narrow(dim, half, half)};
}

at::Tensor glu_jvp(const at::Tensor& glu, const at::Tensor& x, const at::Tensor& dx, int64_t dim_in) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, x.dim());
  const GluHalves h = halves(x, dx, dim, glu.size(dim));
  const at::Tensor s = at::sigmoid(h.b);
  return s * h.da + glu * at::rsub(s, 1) * h.db;
}

at::Tensor glu_backward_jvp(const at::Tensor& grad_x, const at::Tensor& grad_glu, const at::Tensor& x,
                            const at::Tensor& dgrad_glu, const at::Tensor& dx, int64_t dim_in) {
  (void)grad_x;  // recomputed from grad_glu, as its pieces are needed apart
  const int64_t dim = at::maybe_wrap_dim(dim_in, x.dim());
  const GluHalves h = halves(x, dx, dim, grad_glu.size(dim));
  const at::Tensor s = at::sigmoid(h.b);
  const at::Tensor slope = s * at::rsub(s, 1);  // sigmoid'(b)
  const at::Tensor& g = grad_glu;
  const at::Tensor d_first = dgrad_glu * s + g * slope * h.db;
  const at::Tensor d_second =
      slope * (dgrad_glu * h.a + g * h.da + g * h.a * at::rsub(s * 2, 1) * h.db);
  return at::cat({d_first, d_second}, dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("glu_jvp", glu_jvp);
  m.impl("glu_backward_jvp", glu_backward_jvp);
}

}  // namespace torch_tpu::aten
