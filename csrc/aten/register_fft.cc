// ATen glue for the FFT primitives _fft_r2c, _fft_c2r and _fft_c2c (and
// their out= forms). torch.fft.* and stft are composite over these; they
// also handle n= (padding / cropping), dim wrapping and dtype promotion
// before calling here. Lowerings: csrc/ops/fft/fft.cc.
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/fft/fft.h"

namespace torch_tpu::aten {

namespace {

using ops::FftNorm;

std::vector<int64_t> checked_dims(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization,
                                  const char* op) {
  TORCH_CHECK(normalization >= 0 && normalization <= 2, op, ": invalid normalization mode ", normalization);
  TORCH_CHECK(!dim.empty(), op, ": expected at least one dimension to transform");
  std::vector<int64_t> dims;
  for (int64_t d : dim) {
    TORCH_CHECK_INDEX(d >= 0 && d < self.dim(), op, ": dimension ", d, " out of range for a ", self.dim(),
                      "-d tensor");
    TORCH_CHECK(std::find(dims.begin(), dims.end(), d) == dims.end(), op, ": dims must be unique");
    dims.push_back(d);
  }
  return dims;
}

void check_points(const at::Tensor& self, const std::vector<int64_t>& dims, const char* op) {
  for (int64_t d : dims) {
    TORCH_CHECK(self.size(d) >= 1, op, ": invalid number of data points (", self.size(d), ") specified");
  }
}

std::string key(const char* kind, const std::vector<int64_t>& dims, int64_t normalization, int64_t extra) {
  std::string k = kind;
  for (int64_t d : dims) k += std::to_string(d) + ",";
  k += "n" + std::to_string(normalization) + "x" + std::to_string(extra);
  return k;
}

at::Tensor& write_out(const at::Tensor& result, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ", result.dtype(),
              ", but got ", out.dtype(), " instead");
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor fft_r2c(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization, bool onesided) {
  constexpr const char* op = "aten::_fft_r2c";
  TORCH_CHECK(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble, op,
              ": expected a float or double tensor, got ", self.scalar_type());
  std::vector<int64_t> dims = checked_dims(self, dim, normalization, op);
  check_points(self, dims, op);
  OpCall call{op, key("r", dims, normalization, onesided), {self}, {}};
  return run_op(call, [dims, normalization, onesided](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                     const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_r2c(b, t[0], dims, static_cast<FftNorm>(normalization), onesided)};
         })
      .at(0);
}

at::Tensor fft_c2r(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization, c10::SymInt last_dim_size) {
  constexpr const char* op = "aten::_fft_c2r";
  TORCH_CHECK(self.is_complex(), op, ": expected a complex tensor, got ", self.scalar_type());
  to_element_type(self.scalar_type(), op);
  std::vector<int64_t> dims = checked_dims(self, dim, normalization, op);
  const int64_t last = last_dim_size.expect_int();
  TORCH_CHECK(last >= 1, op, ": invalid number of data points (", last, ") specified");
  check_points(self, std::vector<int64_t>(dims.begin(), dims.end() - 1), op);
  OpCall call{op, key("c", dims, normalization, last), {self}, {}};
  return run_op(call, [dims, normalization, last](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                 const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_c2r(b, t[0], dims, static_cast<FftNorm>(normalization), last)};
         })
      .at(0);
}

at::Tensor fft_c2c(const at::Tensor& self, c10::SymIntArrayRef dim, int64_t normalization, bool forward) {
  constexpr const char* op = "aten::_fft_c2c";
  TORCH_CHECK(self.is_complex(), op, ": expected a complex tensor, got ", self.scalar_type());
  to_element_type(self.scalar_type(), op);
  std::vector<int64_t> dims = checked_dims(self, C10_AS_INTARRAYREF_SLOW(dim), normalization, op);
  check_points(self, dims, op);
  OpCall call{op, key("z", dims, normalization, forward), {self}, {}};
  return run_op(call, [dims, normalization, forward](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                    const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_c2c(b, t[0], dims, static_cast<FftNorm>(normalization), forward)};
         })
      .at(0);
}

at::Tensor& fft_r2c_out(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization, bool onesided,
                        at::Tensor& out) {
  return write_out(fft_r2c(self, dim, normalization, onesided), out);
}

at::Tensor& fft_c2r_out(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization,
                        c10::SymInt last_dim_size, at::Tensor& out) {
  return write_out(fft_c2r(self, dim, normalization, std::move(last_dim_size)), out);
}

at::Tensor& fft_c2c_out(const at::Tensor& self, c10::SymIntArrayRef dim, int64_t normalization, bool forward,
                        at::Tensor& out) {
  return write_out(fft_c2c(self, dim, normalization, forward), out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_r2c", fft_r2c);
  m.impl("_fft_r2c.out", fft_r2c_out);
  m.impl("_fft_c2r", fft_c2r);
  m.impl("_fft_c2r.out", fft_c2r_out);
  m.impl("_fft_c2c", fft_c2c);
  m.impl("_fft_c2c.out", fft_c2c_out);
}

}  // namespace torch_tpu::aten
