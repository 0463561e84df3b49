// ATen glue for the FFT primitives _fft_r2c, _fft_c2r and _fft_c2c (and
// their out= forms). torch.fft.* and stft are composite over these; they
// also handle n= (padding / cropping), dim wrapping and dtype promotion
// before calling here. Lowerings: csrc/ops/fft/fft.cc.
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
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
  // CPU's out= kernels compute, then copy into out: any dtype the result casts to.
  TORCH_CHECK(c10::canCast(result.scalar_type(), out.scalar_type()), "Expected out tensor to have dtype ",
              result.dtype(), ", but got ", out.dtype(), " instead");
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// ---- result strides ----------------------------------------------------------------
// PyTorch's shape functions give FFT results on devices other than CUDA the
// strides of its MKL kernels (result_layout.h says why they must match):
// the untransformed dims outermost, in the input's stride order, then the
// transformed dims in the order the kernel ran them. Without MKL they are
// row-major.

// `dims` sorted by the input's strides, largest first (the last one kept
// last for a real-to-complex transform).
std::vector<int64_t> by_stride(std::vector<int64_t> dims, c10::IntArrayRef strides, bool exclude_last) {
  const auto end = dims.end() - (exclude_last ? 1 : 0);
  std::stable_sort(dims.begin(), end, [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  return dims;
}

// The strides of a transform over `dims` (in execution order) of an input
// with `in_strides`, giving a result of `out_sizes`.
std::vector<int64_t> transform_strides(c10::IntArrayRef in_strides, c10::IntArrayRef out_sizes,
                                       const std::vector<int64_t>& dims) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size());
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < ndim; ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) batch.push_back(d);
  }
  std::stable_sort(batch.begin(), batch.end(), [&](int64_t a, int64_t b) { return in_strides[a] > in_strides[b]; });
  std::vector<int64_t> strides(ndim);
  int64_t inner = 1;  // the transformed dims, row-major in their order
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    strides[*it] = inner;
    inner *= std::max<int64_t>(out_sizes[*it], 1);
  }
  int64_t batch_numel = 1;
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    strides[*it] = batch_numel * inner;
    batch_numel *= out_sizes[*it];
  }
  return strides;
}

at::Tensor in_fft_layout(const at::Tensor& result, const std::vector<int64_t>& strides) {
  if (!at::hasMKL() || result.numel() == 0) return result;
  return with_strides(result, strides);
}

at::Tensor fft_r2c(const at::Tensor& self, c10::IntArrayRef dim, int64_t normalization, bool onesided) {
  constexpr const char* op = "aten::_fft_r2c";
  TORCH_CHECK(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble, op,
              ": expected a float or double tensor, got ", self.scalar_type());
  std::vector<int64_t> dims = checked_dims(self, dim, normalization, op);
  check_points(self, dims, op);
  OpCall call{op, key("r", dims, normalization, onesided), {self}, {}};
  at::Tensor result = run_op(call, [dims, normalization, onesided](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                     const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_r2c(b, t[0], dims, static_cast<FftNorm>(normalization), onesided)};
         })
      .at(0);
  return in_fft_layout(result, transform_strides(self.strides(), result.sizes(), by_stride(dims, self.strides(), true)));
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
  at::Tensor result = run_op(call, [dims, normalization, last](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                 const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_c2r(b, t[0], dims, static_cast<FftNorm>(normalization), last)};
         })
      .at(0);
  // The kernel first runs the complex transforms of all but the last dim.
  std::vector<int64_t> in_strides = self.strides().vec();
  if (dims.size() > 1) {
    const std::vector<int64_t> c2c_dims(dims.begin(), dims.end() - 1);
    in_strides = transform_strides(self.strides(), self.sizes(), by_stride(c2c_dims, self.strides(), false));
  }
  return in_fft_layout(result, transform_strides(in_strides, result.sizes(), {dims.back()}));
}

at::Tensor fft_c2c(const at::Tensor& self, c10::SymIntArrayRef dim, int64_t normalization, bool forward) {
  constexpr const char* op = "aten::_fft_c2c";
  TORCH_CHECK(self.is_complex(), op, ": expected a complex tensor, got ", self.scalar_type());
  to_element_type(self.scalar_type(), op);
  std::vector<int64_t> dims = checked_dims(self, C10_AS_INTARRAYREF_SLOW(dim), normalization, op);
  check_points(self, dims, op);
  OpCall call{op, key("z", dims, normalization, forward), {self}, {}};
  at::Tensor result = run_op(call, [dims, normalization, forward](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                    const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_fft_c2c(b, t[0], dims, static_cast<FftNorm>(normalization), forward)};
         })
      .at(0);
  return in_fft_layout(result, transform_strides(self.strides(), result.sizes(), by_stride(dims, self.strides(), false)));
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
