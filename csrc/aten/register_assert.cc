// torch._assert_async: an assertion on a device value that does not wait for
// it. CUDA raises it as a device-side assert at a later sync; here it is a
// deferred check (aten/deferred_checks.h), raised at the next sync.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/op_runner.h"

namespace torch_tpu::aten {

namespace {

void assert_nonzero(const at::Tensor& self, std::string message) {
  // The shape is known now: CPU's message for a tensor that is not one value.
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
  to_element_type(self.scalar_type(), "aten::_assert_async");
  OpCall call{"aten::_assert_async", "", {self}, {}};
  at::Tensor is_zero = run_op(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                       const std::vector<hlo::Value>&) {
    hlo::Value x = b.reshape(t[0], {});
    if (x.dtype() == ElementType::kPred) return std::vector<hlo::Value>{b.not_(x)};
    if (is_complex(x.dtype())) {
      hlo::Value zero = b.constant_splat(0, hlo::TensorType(real_part_type(x.dtype()), {}));
      return std::vector<hlo::Value>{
          b.and_(b.compare(b.real(x), zero, "EQ"), b.compare(b.imag(x), zero, "EQ"))};
    }
    return std::vector<hlo::Value>{b.compare(x, b.constant_splat(0, x.type()), "EQ")};
  }).at(0);
  defer_check(is_zero, CheckError::kRuntime, std::move(message));
}

void assert_async(const at::Tensor& self) {
  assert_nonzero(self, "Expected Tensor with single nonzero value, but got zero");
}

void assert_async_msg(const at::Tensor& self, c10::string_view message) {
  assert_nonzero(self, message.empty() ? std::string("Assertion is failed") : std::string(message));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_assert_async", assert_async);
  m.impl("_assert_async.msg", assert_async_msg);
}

}  // namespace torch_tpu::aten
