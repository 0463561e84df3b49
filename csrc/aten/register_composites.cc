// Rare ops that PyTorch gives no decomposition for on a new device, written
// here in terms of other tpu ops (each of which has its own lowering):
// rsub, aminmax, count_nonzero, isin, trace, addbmm, renorm, histc, equal,
// norm (the legacy torch.norm kernels), channel_shuffle, unfold_backward,
// angle of real tensors, max_unpool2d / 3d (a scatter),
// im2col (strided slices stacked), col2im, _efficientzerotensor; plus one
// index_reduce (a scatter_reduce with the index spread along dim),
// _cdist_forward / _pdist_forward and their backward (over all pairwise
// differences); and
// small lowerings of their own: conj_physical (torch.fft.ihfft2 and friends
// need it), complex, polar and frexp;
// and ATen's own view_as_real / view_as_complex (metadata-only views; a
// program reads the complex storage through them as float pairs). They cost a few launches in strict
// eager and fuse like any other ops in fused eager and torch.compile.
#include <ATen/ExpandUtils.h>
#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/add.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/div.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/atan2.h>
#include <ATen/ops/clone.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/scatter.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/real.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/scatter_reduce.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tril_indices.h>
#include <ATen/ops/triu_indices.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/device_guard.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/elementwise/special.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::aten {

namespace {

using Tensor = at::Tensor;


Tensor tpu_rsub(const Tensor& self, const Tensor& other, const c10::Scalar& alpha) {
  return at::sub(other, self, alpha);
}

std::tuple<Tensor&, Tensor&> tpu_aminmax_out(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& min,
                                         Tensor& max) {
  TORCH_CHECK(self.numel() > 0 || (dim && self.dim() > 0 && self.size(*dim) > 0),
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
  check_out_dtype(min, self.scalar_type());
  check_out_dtype(max, self.scalar_type());
  std::vector<int64_t> dims;
  if (dim) dims.push_back(at::maybe_wrap_dim(*dim, self.dim()));
  write_out(min, at::amin(self, dims, keepdim));
  write_out(max, at::amax(self, dims, keepdim));
  return {min, max};
}

Tensor tpu_count_nonzero(const Tensor& self, c10::IntArrayRef dims) {
  return at::sum(at::ne(self, 0), dims, false, at::kLong);
}

// Few test values: every element against every one (CPU's rule for when
// that is cheaper). Otherwise the test values are sorted and each element
// looks itself up, in memory linear in the two sizes.
Tensor tpu_isin_impl(const Tensor& elements, const Tensor& test, bool invert) {
  const c10::ScalarType common = at::result_type(elements, test);
  Tensor hit;
  if (test.numel() < 10.0 * std::pow(static_cast<double>(elements.numel()), 0.145) || c10::isComplexType(common) ||
      common == at::kBool) {
    hit = at::any(at::eq(elements.unsqueeze(-1), test.reshape({-1})), -1);
  } else {
    Tensor sorted = std::get<0>(at::sort(test.reshape({-1}).to(common)));
    if (c10::isFloatingType(common)) {
      // NaNs sort last and would mislead the binary search; they match
      // nothing, so they become copies of the largest other value.
      const Tensor last_number = at::sub(at::sum(at::logical_not(at::isnan(sorted))), 1).clamp_min(0);
      sorted = at::where(at::isnan(sorted), sorted.index_select(0, last_number.reshape({1})), sorted);
    }
    const Tensor values = elements.to(common);
    const Tensor at_or_after = at::searchsorted(sorted, values.reshape({-1})).clamp_max(sorted.numel() - 1);
    hit = at::eq(sorted.index_select(0, at_or_after), values.reshape({-1})).reshape(elements.sizes());
  }
  return invert ? at::logical_not(hit) : hit;
}

Tensor& tpu_isin_tt_out(const Tensor& elements, const Tensor& test, bool, bool invert, Tensor& out) {
  return write_out(out, tpu_isin_impl(elements, test, invert));
}

Tensor& tpu_isin_ts_out(const Tensor& elements, const c10::Scalar& test, bool, bool invert, Tensor& out) {
  Tensor hit = at::eq(elements, test);
  return write_out(out, invert ? at::logical_not(hit) : hit);
}

Tensor& tpu_isin_st_out(const c10::Scalar& element, const Tensor& test, bool, bool invert, Tensor& out) {
  Tensor hit = at::any(at::eq(test, element).reshape({-1}), 0);
  return write_out(out, invert ? at::logical_not(hit) : hit);
}

Tensor tpu_trace(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return at::sum(self.diagonal());
}

// sum_b batch1[b] @ batch2[b] is one matrix product over the joined (b, k) axis.
Tensor tpu_addbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
              const c10::Scalar& alpha) {
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), "batch1 and batch2 must have same number of batches, got ", b1.size(0),
              " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x", b1.size(2), " and ",
              b2.size(1), "x", b2.size(2), ")");
  const int64_t joined = b1.size(0) * b1.size(2);
  return at::addmm(self, b1.transpose(0, 1).reshape({b1.size(1), joined}), b2.reshape({joined, b2.size(2)}), beta,
                   alpha);
}

Tensor& tpu_addbmm_out(const Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
                   const c10::Scalar& alpha, Tensor& out) {
  return write_out(out, tpu_addbmm(self, b1, b2, beta, alpha));
}

// CPU's addbmm_ is its out= form into self (a self that broadcasts is
// resized, with ATen's warning).
Tensor& tpu_addbmm_(Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
                    const c10::Scalar& alpha) {
  return tpu_addbmm_out(self, b1, b2, beta, alpha, self);
}

Tensor& tpu_renorm_out(const Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm, Tensor& out) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> others;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim) others.push_back(d);
  }
  Tensor norm = at::linalg_vector_norm(self, p, others, /*keepdim=*/true);
  const double limit = maxnorm.toDouble();
  Tensor factor = at::where(norm > limit, limit / (norm + 1e-7), at::ones_like(norm));
  return write_out(out, self * factor);
}

// Equal-width bins over [min, max] (the data's range when min == max); the
// top edge belongs to the last bin, values outside are ignored. Integer
// inputs are binned as CUDA bins them (CPU refuses them; Hugging Face's
// mixture-of-experts routing counts tokens per expert so on accelerators):
// bin = (x - min) * bins / (max - min) in integer arithmetic, counts of the
// input's dtype.
Tensor tpu_histc(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for dimension 0");
  const bool integral = c10::isIntegralType(self.scalar_type(), /*includeBool=*/false);
  // CPU's kernels' messages (the range of a complex input fails first).
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()) || integral, "\"",
                              c10::isComplexType(self.scalar_type()) ? "aminmax_cpu" : "histogram_cpu",
                              "\" not implemented for '", self.scalar_type(), "'");
  double lo_v = min.toDouble(), hi_v = max.toDouble();
  // NaN fails the finiteness check, as on CPU, not the order one.
  TORCH_CHECK(std::isnan(lo_v) || std::isnan(hi_v) || lo_v <= hi_v, "torch.histc: max must be larger than min");
  TORCH_CHECK(std::isfinite(lo_v) && std::isfinite(hi_v), "torch.histc: range of [", lo_v, ", ", hi_v,
              "] is not finite");
  // 16-bit floats are compared and counted in float32 (their positions
  // are computed below as CPU and CUDA compute them).
  const c10::ScalarType compute_type = integral                                    ? at::kLong
                                       : c10::elementSize(self.scalar_type()) < 4 ? at::kFloat
                                                                                   : self.scalar_type();
  const auto compute = self.options().dtype(compute_type);
  Tensor x = self.reshape({-1}).to(compute_type);
  // Float bounds take the input's dtype first, as CPU's and CUDA's kernels
  // read them (0.1 is 0.09998 in float16, so a float16 0.1 is in range).
  const auto bound = [&](const c10::Scalar& v) {
    return integral ? at::scalar_tensor(v.toLong(), compute)
                    : at::scalar_tensor(v.toDouble(), self.options()).to(compute_type);
  };
  Tensor lo = bound(min);
  Tensor hi = bound(max);
  // Integer bounds compare exactly (two beyond 2^53 can be equal doubles).
  if (integral ? min.toLong() == max.toLong() : lo_v == hi_v) {
    if (x.numel() > 0) {
      lo = at::min(x);
      hi = at::max(x);
      if (!integral) {  // CPU refuses data holding inf or NaN then: no finite bins
        defer_check(at::logical_not(at::logical_and(at::isfinite(lo), at::isfinite(hi))), CheckError::kRuntime,
                    "torch.histc: range of the data (its min and max) is not finite");
      }
    }
    Tensor same = at::eq(lo, hi);
    lo = at::where(same, lo - 1, lo);
    hi = at::where(same, hi + 1, hi);
  }
  Tensor pos;
  if (integral) {
    pos = at::div((x - lo) * bins, hi - lo, "trunc");
    if (self.scalar_type() == at::kLong || self.scalar_type() == at::kUInt64) {
      // (x - min) * bins can overflow int64 (CUDA's result is then
      // undefined): such a range is binned in float32 instead, which can
      // put a value within a bin width's 1e-7 of an edge in the next bin.
      const Tensor range = hi - lo;
      const Tensor overflows = at::logical_or(at::lt(range, 0), at::gt(range, INT64_MAX / bins));
      const Tensor approx = ((x.to(at::kFloat) - lo.to(at::kFloat)) * static_cast<double>(bins) /
                             (hi.to(at::kFloat) - lo.to(at::kFloat))).floor().to(at::kLong);
      pos = at::where(overflows, at::clamp_min(approx, 0), pos);
    }
  } else {
    Tensor scaled = (x - lo) * static_cast<double>(bins) / (hi - lo);
    if (compute_type != self.scalar_type()) {
      // CPU and CUDA compute the position in the 16-bit type, rounding
      // after each operation; only where that overflows (their result is
      // then undefined) does the float32 position stand.
      // The bin count takes the 16-bit type too (257 is 256 in bfloat16).
      const double bins16 = self.scalar_type() == at::kHalf
                                ? static_cast<float>(c10::Half(static_cast<float>(bins)))
                                : static_cast<float>(c10::BFloat16(static_cast<float>(bins)));
      const Tensor lo16 = lo.to(self.scalar_type()), hi16 = hi.to(self.scalar_type());
      const Tensor scaled16 = (self.reshape({-1}) - lo16) * bins16 / (hi16 - lo16);
      scaled = at::where(at::isfinite(scaled16), scaled16.to(compute_type), scaled);
    }
    pos = scaled.floor().to(at::kLong);
  }
  // A value just below max can round up to bin `bins`: it goes in the
  // last bin, as max itself does (CPU's rule).
  pos = at::clamp_max(pos, bins - 1);
  // Values outside [min, max] are counted in an extra bin, dropped after.
  Tensor inside = (x >= lo).logical_and(x <= hi);
  pos = at::where(inside, pos, at::scalar_tensor(bins, pos.options()));
  Tensor counts = at::zeros({bins + 1}, pos.options()).scatter_add_(0, pos, at::ones_like(pos));
  return counts.narrow(0, 0, bins).to(self.scalar_type());
}

Tensor& tpu_histc_out(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "torch.histogram: input tensor and hist tensor should have the same dtype, but got input ",
              self.scalar_type(), " and hist ", out.scalar_type());
  return write_out(out, tpu_histc(self, bins, min, max));
}

bool tpu_equal(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  // Values compare after type promotion, as on CPU and CUDA.
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::all(at::eq(self, other)).item<bool>();
}

Tensor& tpu_norm_dtype_out(const Tensor& self, const std::optional<c10::Scalar>& p, c10::IntArrayRef dim, bool keepdim,
                       c10::ScalarType dtype, Tensor& out) {
  return write_out(out, at::linalg_vector_norm(self, p.value_or(2), dim, keepdim, dtype));
}

Tensor& tpu_norm_out(const Tensor& self, const std::optional<c10::Scalar>& p, c10::IntArrayRef dim, bool keepdim,
                 Tensor& out) {
  return write_out(out, at::linalg_vector_norm(self, p.value_or(2), dim, keepdim));
}

Tensor tpu_channel_shuffle(const Tensor& self, c10::SymInt groups_sym) {
  const int64_t groups = groups_sym.expect_int();
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input to have at least 3 dimensions, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.", " Value of groups:", groups);
  const int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  std::vector<int64_t> split(self.sizes().begin(), self.sizes().end());
  split[1] = c / groups;
  split.insert(split.begin() + 1, groups);
  const Tensor shuffled = at::clone(self.reshape(split).transpose(1, 2), at::MemoryFormat::Contiguous);
  return in_memory_format_of(shuffled.view(self.sizes()), self);  // CPU keeps a channels_last input's format
}

// Window w's element j goes back to position w * step + j: one index_add
// of every window element (a slice add per element compiled one op per
// window element in fused eager: 33 s for istft with n_fft = 1024).
Tensor tpu_unfold_backward(const Tensor& grad, c10::SymIntArrayRef input_sizes_sym, int64_t dim, int64_t size,
                       int64_t step) {
  const c10::IntArrayRef input_sizes = C10_AS_INTARRAYREF_SLOW(input_sizes_sym);
  if (input_sizes.empty()) return at::clone(grad.reshape({}));
  dim = at::maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  Tensor result = at::zeros(input_sizes, grad.options());
  const int64_t windows = grad.size(dim);
  if (windows == 0 || size == 0) return result;
  const auto long_options = grad.options().dtype(at::kLong);
  const Tensor position = (at::arange(windows, long_options) * step).unsqueeze(1) + at::arange(size, long_options);
  const Tensor elements = grad.movedim(-1, dim + 1).flatten(dim, dim + 1);  // [.., windows * size, ..]
  return result.index_add_(dim, position.reshape({-1}), elements);
}

Tensor tpu_angle(const Tensor& self) {
  if (self.is_complex()) return at::atan2(at::imag(self), at::real(self));
  const c10::ScalarType out = c10::isIntegralType(self.scalar_type(), true)
                                  ? c10::typeMetaToScalarType(c10::get_default_dtype())
                                  : self.scalar_type();
  Tensor x = self.to(out);
  Tensor zero = at::zeros_like(x);
  Tensor r = at::where(x < 0, at::full_like(x, M_PI), zero);
  return at::where(at::isnan(x), x, r);
}

Tensor& tpu_angle_out(const Tensor& self, Tensor& out) { return write_out(out, tpu_angle(self)); }

// Every input element goes to its flat index within its (n, c) plane.
Tensor tpu_max_unpool(const Tensor& self, const Tensor& indices, c10::IntArrayRef output_size, int64_t spatial,
                  const char* name) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, name, "(): Expected ", spatial + 1, "D or ",
              spatial + 2, "D tensor, but got ", self.sizes());
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == spatial, "There should be exactly ", spatial,
              " elements (depth, height, width) in output_size, but got ", output_size.size(), " elements.");
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, name, "(): Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  const bool batched = self.dim() == spatial + 2;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const Tensor idx = batched ? indices : indices.unsqueeze(0);
  int64_t plane = 1;
  for (int64_t s : output_size) plane *= s;
  std::vector<int64_t> shape{x.size(0), x.size(1)};
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  int64_t pooled = 1;  // elements per input plane (spelt out: an empty batch cannot infer a -1)
  for (int64_t i = x.dim() - spatial; i < x.dim(); ++i) pooled *= x.size(i);
  Tensor out = at::zeros({x.size(0), x.size(1), plane}, self.options())
                   .scatter(2, idx.reshape({x.size(0), x.size(1), pooled}), x.reshape({x.size(0), x.size(1), pooled}))
                   .view(shape);
  return batched ? out : out.squeeze(0);
}

Tensor tpu_max_unpool2d(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size) {
  // Contiguous whatever the input's format, as CUDA's kernel and PyTorch's
  // shape function make it (CPU's keeps a channels_last input's format).
  return tpu_max_unpool(self, indices, C10_AS_INTARRAYREF_SLOW(output_size), 2, "max_unpooling2d_forward_out");
}

Tensor& tpu_max_unpool2d_out(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size, Tensor& out) {
  return write_out(out, tpu_max_unpool2d(self, indices, output_size));
}

Tensor tpu_max_unpool3d(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size, c10::IntArrayRef,
                    c10::IntArrayRef) {
  return tpu_max_unpool(self, indices, C10_AS_INTARRAYREF_SLOW(output_size), 3, "max_unpooling3d_forward_out");
}

Tensor& tpu_max_unpool3d_out(const Tensor& self, const Tensor& indices, c10::SymIntArrayRef output_size,
                         c10::IntArrayRef stride, c10::IntArrayRef padding, Tensor& out) {
  return write_out(out, tpu_max_unpool3d(self, indices, output_size, stride, padding));
}

// Column (c, i, j) of block l is input[c, oy * sh + i * dh - ph, ox * sw + j * dw - pw].
Tensor tpu_im2col(const Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef dilation, c10::IntArrayRef padding,
              c10::IntArrayRef stride) {
  TORCH_CHECK(kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2,
              "im2col: kernel_size, dilation, padding and stride must have two elements");
  TORCH_CHECK(kernel[0] > 0 && kernel[1] > 0, "kernel size should be greater than zero, but got kernel_height: ",
              kernel[0], " kernel_width: ", kernel[1]);
  TORCH_CHECK(dilation[0] > 0 && dilation[1] > 0, "dilation should be greater than zero, but got dilation_height: ",
              dilation[0], " dilation_width: ", dilation[1]);
  TORCH_CHECK(padding[0] >= 0 && padding[1] >= 0, "padding should be non-negative, but got pad_height: ", padding[0],
              " pad_width: ", padding[1]);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0, "stride should be greater than zero, but got stride_height: ",
              stride[0], " stride_width: ", stride[1]);
  TORCH_CHECK((self.dim() == 3 && self.size(0) > 0) || (self.dim() == 4 && self.size(1) > 0),
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ", self.sizes());
  const bool batched = self.dim() == 4;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t h = x.size(2), w = x.size(3);
  const int64_t oh = (h + 2 * padding[0] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t ow = (w + 2 * padding[1] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  TORCH_CHECK(oh >= 1 && ow >= 1, "Given input with spatial size (", h, ", ", w, "), kernel_size=(", kernel[0], ", ",
              kernel[1], "), dilation=(", dilation[0], ", ", dilation[1], "), padding=(", padding[0], ", ", padding[1],
              "), calculated shape of the array of sliding blocks as (", oh, ", ", ow,
              "), but its components must be at least one.");
  const Tensor xp = at::constant_pad_nd(x, {padding[1], padding[1], padding[0], padding[0]}, 0);
  std::vector<Tensor> blocks;
  for (int64_t i = 0; i < kernel[0]; ++i) {
    for (int64_t j = 0; j < kernel[1]; ++j) {
      const int64_t y0 = i * dilation[0], x0 = j * dilation[1];
      blocks.push_back(xp.slice(2, y0, y0 + (oh - 1) * stride[0] + 1, stride[0])
                           .slice(3, x0, x0 + (ow - 1) * stride[1] + 1, stride[1]));
    }
  }
  Tensor cols = at::stack(blocks, 2).reshape({x.size(0), x.size(1) * kernel[0] * kernel[1], oh * ow});
  return batched ? cols : cols.squeeze(0);
}

Tensor& tpu_im2col_out(const Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef dilation, c10::IntArrayRef padding,
                   c10::IntArrayRef stride, Tensor& out) {
  return write_out(out, tpu_im2col(self, kernel, dilation, padding, stride));
}

// The adjoint of im2col: each kernel offset's block is added back at its
// strided place in the padded output.
Tensor tpu_col2im(const Tensor& self, c10::SymIntArrayRef output_size_sym, c10::IntArrayRef kernel,
                  c10::IntArrayRef dilation, c10::IntArrayRef padding, c10::IntArrayRef stride) {
  const c10::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(output_size.size() == 2 && kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 &&
                  stride.size() == 2,
              "col2im: output_size, kernel_size, dilation, padding and stride must have two elements");
  TORCH_CHECK((self.dim() == 2 || self.dim() == 3) && self.size(-1) > 0 && self.size(-2) > 0,
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
              "for input, but got: ", self.sizes());
  const int64_t kk = kernel[0] * kernel[1];
  TORCH_CHECK(kk > 0 && self.size(-2) % kk == 0, "Expected size of input's dimension 1 to be divisible by the "
              "product of kernel_size, but got input.size(1)=", self.size(-2), " and kernel_size=(", kernel[0], ", ",
              kernel[1], ").");
  const int64_t oh = (output_size[0] + 2 * padding[0] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t ow = (output_size[1] + 2 * padding[1] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  TORCH_CHECK(oh >= 1 && ow >= 1 && oh * ow == self.size(-1), "Given output_size=(", output_size[0], ", ",
              output_size[1], "), kernel_size=(", kernel[0], ", ", kernel[1], "), dilation=(", dilation[0], ", ",
              dilation[1], "), padding=(", padding[0], ", ", padding[1], "), stride=(", stride[0], ", ", stride[1],
              "), expected size of input's dimension 2 to match the calculated number of sliding blocks ", oh, " * ",
              ow, " = ", oh * ow, ", but got input.size(2)=", self.size(-1), ".");
  const bool batched = self.dim() == 3;
  const Tensor cols = batched ? self : self.unsqueeze(0);
  const int64_t n = cols.size(0), c = cols.size(1) / kk;
  const int64_t padded_h = output_size[0] + 2 * padding[0], padded_w = output_size[1] + 2 * padding[1];
  // Kernel tap (i, j) of block (y, x) lands at row i * dilation + y * stride
  // and the like column of the padded plane: one index_add of every
  // element (a slice add per tap compiled one op per tap in fused eager).
  const auto long_options = self.options().dtype(at::kLong);
  const Tensor rows = (at::arange(kernel[0], long_options) * dilation[0]).view({-1, 1, 1, 1}) +
                      (at::arange(oh, long_options) * stride[0]).view({1, 1, -1, 1});
  const Tensor columns = (at::arange(kernel[1], long_options) * dilation[1]).view({1, -1, 1, 1}) +
                         (at::arange(ow, long_options) * stride[1]).view({1, 1, 1, -1});
  const Tensor position = (rows * padded_w + columns).reshape({-1});
  Tensor out = at::zeros({n, c, padded_h * padded_w}, self.options())
                   .index_add_(2, position, cols.reshape({n, c, kk * oh * ow}))
                   .view({n, c, padded_h, padded_w});
  out = out.slice(2, padding[0], padding[0] + output_size[0]).slice(3, padding[1], padding[1] + output_size[1]);
  out = at::clone(out, at::MemoryFormat::Contiguous);
  return batched ? out : out.squeeze(0);
}

Tensor& tpu_col2im_out(const Tensor& self, c10::SymIntArrayRef output_size, c10::IntArrayRef kernel,
                       c10::IntArrayRef dilation, c10::IntArrayRef padding, c10::IntArrayRef stride, Tensor& out) {
  return write_out(out, tpu_col2im(self, output_size, kernel, dilation, padding, stride));
}

// A ZeroTensor, as CPU and CUDA make it: no storage, and the ZeroTensor
// dispatch key, so that forward-mode AD's missing tangents multiply as
// exact zeros (mul_zerotensor) instead of as zero-filled tensors, where
// 0 * inf would be NaN (the jvp of masked attention or of a saturated
// sigmoid). Ops without a ZeroTensor kernel see it as zeros through
// PyTorch's ZeroTensor fallback.
Tensor tpu_efficientzerotensor(c10::SymIntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                               std::optional<bool> /*pin_memory*/) {
  c10::Device target = device.value_or(c10::Device(c10::DeviceType::PrivateUse1));
  if (!target.has_index()) target.set_index(current_device_index());
  at::native::ZeroTensorAllocator allocator(target);
  const auto keys = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(C10_AS_INTARRAYREF_SLOW(size), &allocator, keys,
                                   dtype.value_or(c10::get_default_dtype_as_scalartype()), std::nullopt);
}

// ---- conj_physical ----------------------------------------------------------------

OpCall conj_call(const Tensor& self) { return OpCall{"aten::conj_physical", "", {self}, {}}; }

std::vector<hlo::Value> conj_body(hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
  return {ops::conjugate(b, t[0])};
}

Tensor& tpu_conj_physical_out(const Tensor& self, Tensor& out) {
  // CPU's unary TensorIterator refuses an out of another dtype (ihfft's out= goes through here).
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Found dtype ", out.scalar_type(), " but expected ",
              self.scalar_type());
  if (!self.is_complex()) return write_out(out, self);
  return write_out(out, run_op(conj_call(self), conj_body).at(0));
}

Tensor& tpu_conj_physical_(Tensor& self) {
  if (self.is_complex()) run_op_into(conj_call(self), conj_body, self);
  return self;
}

// ---- index_reduce -------------------------------------------------------------------

Tensor& tpu_index_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                             c10::string_view reduce, bool include_self, Tensor& out) {
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(index.dim() <= 1, "index_reduce_(): Index should have dimension 1 or 0 (got ", index.dim(), ")");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_reduce_(): Expected dtype int32/int64 for index but got: ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_reduce_(): self (", self.scalar_type(),
              ") and source (", source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(self.dim() == source.dim() || (self.dim() <= 1 && source.dim() <= 1),
              "index_reduce_(): Source and self must have the same number of dimensions");
  const int64_t count = source.dim() == 0 ? 1 : source.size(dim);
  TORCH_CHECK(index.numel() == count, "index_reduce_(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim) (", count, ")");
  // Source element i along dim goes to self's index[i] along dim.
  std::vector<int64_t> spread(std::max<int64_t>(source.dim(), 1), 1);
  spread[source.dim() == 0 ? 0 : dim] = index.numel();
  // CPU's IndexError (negative indices included), raised before the
  // scatter's own bounds error at the next sync.
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  if (index.numel() > 0) {
    defer_check(at::any(at::logical_or(at::lt(index, 0), at::ge(index, size))), CheckError::kIndex,
                "index_reduce: index out of range in self");
  }
  Tensor idx = index.to(at::kLong).reshape(spread);
  if (source.dim() > 0) idx = idx.expand(source.sizes());
  Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  Tensor base = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor r = at::scatter_reduce(base, self.dim() == 0 ? 0 : dim, idx, src, reduce, include_self);
  return write_out(out, self.dim() == 0 ? r.reshape({}) : r);
}

// ---- complex, polar ----------------------------------------------------------------

void check_complex_inputs(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble,
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(), " and ",
              b.scalar_type());
}

Tensor complex_like(const char* op, const Tensor& a, const Tensor& b, bool from_polar) {
  check_complex_inputs(a, b);
  const OpCall call{op, "", {a, b}, {}};
  const Tensor result = run_op(call, [from_polar](hlo::Builder& bld, const std::vector<hlo::Value>& t,
                                                  const std::vector<hlo::Value>&) {
                  const std::vector<int64_t> dims = ops::broadcast_shapes(t[0].dims(), t[1].dims(), "aten::complex");
                  hlo::Value x = ops::broadcast_to(bld, t[0], dims), y = ops::broadcast_to(bld, t[1], dims);
                  if (from_polar) return std::vector<hlo::Value>{
                      bld.complex(bld.multiply(x, bld.cosine(y)), bld.multiply(x, bld.sine(y)))};
                  return std::vector<hlo::Value>{bld.complex(x, y)};
                }).at(0);
  return in_iterator_layout(result, call.tensors);
}

// complex(out=) and polar(out=): CPU's message, checked before computing.
void check_complex_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_complex_inputs(a, b);
  const c10::ScalarType expected = c10::toComplexType(a.scalar_type());
  TORCH_CHECK(out.scalar_type() == expected, "Expected object of scalar type ", expected, " but got scalar type ",
              out.scalar_type(), " for argument 'out'");
}

Tensor& tpu_complex_out(const Tensor& real, const Tensor& imag, Tensor& out) {
  check_complex_out(real, imag, out);
  return write_out(out, complex_like("aten::complex", real, imag, false));
}

Tensor& tpu_polar_out(const Tensor& abs, const Tensor& angle, Tensor& out) {
  check_complex_out(abs, angle, out);
  return write_out(out, complex_like("aten::polar", abs, angle, true));
}

// ---- cdist / pdist --------------------------------------------------------------------

// The p-norm of the last dim of pairwise differences, as CPU defines it for
// p = 0 (count of nonzeros), 1, 2, inf and any other p.
Tensor p_norm_last(const Tensor& diff, double p) {
  if (p == 0) return at::sum(at::ne(diff, 0), {-1}, false, diff.scalar_type());
  const Tensor a = diff.abs();
  if (std::isinf(p)) {
    // No features: every distance is 0 (amax has no identity to give).
    if (a.size(-1) == 0) return at::zeros(a.sizes().slice(0, a.dim() - 1), a.options());
    return at::amax(a, {-1});
  }
  if (p == 1) return at::sum(a, {-1});
  if (p == 2) return at::sum(a * a, {-1}).sqrt();
  return at::sum(a.pow(p), {-1}).pow(1.0 / p);
}

// d dist / d x1 of each pair (diff = x1 - x2), 0 where dist is 0.
Tensor p_norm_grad(const Tensor& diff, const Tensor& dist, double p) {
  const Tensor d = dist.unsqueeze(-1);
  const Tensor zero = at::zeros_like(diff);
  if (p == 0) return zero;
  if (p == 1) return diff.sign();
  if (std::isinf(p)) return diff.sign() * at::eq(diff.abs(), d);
  Tensor g;
  if (p == 2) {
    g = diff / d;
  } else if (p < 2) {
    g = at::where(at::eq(diff, 0), zero, diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1));
  } else {
    g = diff * diff.abs().pow(p - 2) / d.pow(p - 1);
  }
  return at::where(at::eq(d, 0), zero, g);
}

void check_distance_input(const Tensor& x, double p, const char* api) {
  TORCH_CHECK(c10::isFloatingType(x.scalar_type()), api, " only supports floating-point dtypes, X1 got: ",
              x.scalar_type());
  TORCH_CHECK(p >= 0, api, " only supports non-negative p values");
}

Tensor tpu_cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t>) {
  check_distance_input(x1, p, "cdist");
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(x1.scalar_type() == x2.scalar_type(), "cdist: X1 and X2 must have the same dtype");
  return p_norm_last(x1.unsqueeze(-2) - x2.unsqueeze(-3), p);
}

Tensor tpu_cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p, const Tensor& cdist) {
  const Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  const Tensor g = at::sum(grad.unsqueeze(-1) * p_norm_grad(diff, cdist, p), {-2});
  return at::sum_to(g, x1.sizes());
}

// The (i < j) pairs of rows, in row-major order, as CPU lists them.
std::pair<Tensor, Tensor> upper_pairs(int64_t n, c10::Device device) {
  const Tensor ij = at::triu_indices(n, n, 1, at::TensorOptions().dtype(at::kLong)).to(device);
  return {ij.select(0, 0), ij.select(0, 1)};
}

// tril_indices / triu_indices depend only on three integers: PyTorch's own
// kernel lists them on the host and they are uploaded once (2 x count
// integers, the size of the result itself).
template <Tensor (*HostKernel)(int64_t, int64_t, int64_t, at::TensorOptions)>
Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, std::optional<c10::ScalarType> dtype,
                        std::optional<c10::Layout>, std::optional<c10::Device> device, std::optional<bool>) {
  return HostKernel(row, col, offset, at::TensorOptions().dtype(dtype.value_or(at::kLong)))
      .to(device.value_or(c10::Device(c10::DeviceType::PrivateUse1)));
}

Tensor tpu_pdist_forward(const Tensor& self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  check_distance_input(self, p, "pdist");
  const int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  auto [i, j] = upper_pairs(n, self.device());
  return p_norm_last(self.index_select(0, i) - self.index_select(0, j), p);
}

// Each row gets the gradient of its pairs with the rows after it (+) and
// before it (the same formula, the difference negated).
Tensor tpu_pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  const int64_t n = self.size(0);
  if (n <= 1 || pdist.numel() == 0) return at::zeros_like(self);
  auto [i, j] = upper_pairs(n, self.device());
  const Tensor diff = self.index_select(0, i) - self.index_select(0, j);
  const Tensor g = grad.unsqueeze(-1) * p_norm_grad(diff, pdist, p);
  return at::zeros_like(self).index_add(0, i, g).index_add(0, j, -g);
}

// ---- frexp -----------------------------------------------------------------------------

std::tuple<Tensor&, Tensor&> tpu_frexp_out(const Tensor& self, Tensor& mantissa, Tensor& exponent) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.scalar_type() == self.scalar_type(), "torch.frexp() expects mantissa to have dtype ",
              self.scalar_type(), " but got ", mantissa.scalar_type());
  TORCH_CHECK(exponent.scalar_type() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.scalar_type());
  auto r = run_op(OpCall{"aten::frexp", "", {self}, {}},
                  [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
                    auto [m, e] = ops::lower_frexp(b, t[0]);
                    return std::vector<hlo::Value>{m, e};
                  });
  write_out(mantissa, r[0]);
  write_out(exponent, r[1]);
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("rsub.Tensor", tpu_rsub);
  m.impl("aminmax.out", tpu_aminmax_out);
  m.impl("count_nonzero.dim_IntList", tpu_count_nonzero);
  m.impl("isin.Tensor_Tensor_out", tpu_isin_tt_out);
  m.impl("isin.Tensor_Scalar_out", tpu_isin_ts_out);
  m.impl("isin.Scalar_Tensor_out", tpu_isin_st_out);
  m.impl("trace", tpu_trace);
  m.impl("addbmm", tpu_addbmm);
  m.impl("addbmm.out", tpu_addbmm_out);
  m.impl("addbmm_", tpu_addbmm_);
  m.impl("renorm.out", tpu_renorm_out);
  m.impl("histc", tpu_histc);
  m.impl("histc.out", tpu_histc_out);
  m.impl("equal", tpu_equal);
  m.impl("norm.dtype_out", tpu_norm_dtype_out);
  m.impl("norm.out", tpu_norm_out);
  m.impl("channel_shuffle", tpu_channel_shuffle);
  m.impl("unfold_backward", tpu_unfold_backward);
  m.impl("angle", tpu_angle);
  m.impl("angle.out", tpu_angle_out);
  m.impl("tril_indices", triangle_indices<at::tril_indices>);
  m.impl("triu_indices", triangle_indices<at::triu_indices>);
  m.impl("max_unpool2d", tpu_max_unpool2d);
  m.impl("max_unpool2d.out", tpu_max_unpool2d_out);
  m.impl("max_unpool3d", tpu_max_unpool3d);
  m.impl("max_unpool3d.out", tpu_max_unpool3d_out);
  m.impl("im2col", tpu_im2col);
  m.impl("im2col.out", tpu_im2col_out);
  m.impl("col2im", tpu_col2im);
  m.impl("col2im.out", tpu_col2im_out);
  m.impl("_efficientzerotensor", tpu_efficientzerotensor);
  m.impl("conj_physical.out", tpu_conj_physical_out);
  m.impl("conj_physical_", tpu_conj_physical_);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("index_reduce.out", tpu_index_reduce_out);
  m.impl("complex.out", tpu_complex_out);
  m.impl("polar.out", tpu_polar_out);
  m.impl("frexp.Tensor_out", tpu_frexp_out);
  m.impl("_cdist_forward", tpu_cdist_forward);
  m.impl("_cdist_backward", tpu_cdist_backward);
  m.impl("_pdist_forward", tpu_pdist_forward);
  m.impl("_pdist_backward", tpu_pdist_backward);
  m.impl("view_as_complex", at::native::view_as_complex);
}

}  // namespace torch_tpu::aten
