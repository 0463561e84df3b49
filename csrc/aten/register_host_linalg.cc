// Linear algebra computed on the host: the general (non-Hermitian)
// eigendecomposition and the LDL factorization with Bunch-Kaufman pivoting.
// XLA has neither (JAX's eig runs on the CPU only), and PyTorch's own CUDA
// kernel for linalg_eig runs MAGMA's geev on the host too: the input is
// copied to the CPU, LAPACK computes, the results are copied back. So these
// synchronize like a read of the input, and in fused eager or a compiled
// graph they end the program before them. Their backward formulas are
// ordinary tpu ops.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

namespace torch_tpu::aten {
namespace {

void on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) { at::native::cpu_fallback(op, stack); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : {"linalg_eig", "linalg_eig.out", "_linalg_eigvals", "linalg_eigvals.out",
                         "linalg_ldl_factor_ex", "linalg_ldl_factor_ex.out", "linalg_ldl_solve",
                         "linalg_ldl_solve.out"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&on_host>());
  }
}

}  // namespace torch_tpu::aten
