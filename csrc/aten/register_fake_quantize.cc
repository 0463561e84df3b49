// Fake quantization, the float arithmetic of quantization-aware training:
// the per-tensor and per-channel fake_quantize ops with their gradient
// masks, the learnable variants and their gradients, and the fused
// moving-average observer + fake quantization of torch.ao's default QAT
// qconfig; plus dequantize() of an ordinary tensor (a cast to float).
//
// Written in terms of other tpu ops with CPU's formulas (ATen's fake
// quantization kernels, FusedObsFakeQuant, quant_utils'
// ChooseQuantizationParams): x / scale rounded half to even, plus the zero
// point, clamped (NaN to quant_min, as C's fmax does), and the mask of the
// values inside the range. Where CPU reads a tensor on the host
// (scale.item(), observer_on.item(), ...), these select on the device
// instead, so a QAT step never waits for the device. Differences: the
// quantization parameters are computed in float where CPU uses double
// (the scale can differ in its last bit), and out-of-range integer zero
// points are not refused (CPU's check reads them on the host).
#include <ATen/core/Tensor.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/where.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdlib>
#include <limits>
#include <tuple>
#include <vector>

namespace torch_tpu::aten {

namespace {

using at::Tensor;

// CPU computes in float, or in double for double inputs.
c10::ScalarType compute_type(const Tensor& x) { return x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

// fmin(fmax(q, lo), hi) as C computes it: NaN gives lo.
Tensor clamp_nan_low(const Tensor& q, int64_t lo, int64_t hi) { return at::where(q.isnan(), lo, q.clamp(lo, hi)); }

// The one element of a tensor CPU reads with item(), as a 0-dim tensor.
Tensor only_element(const Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.numel() == 1, op, ": expected ", what, " with one element, got ", t.numel());
  return t.reshape({});
}

// `v` [C] shaped to broadcast along `axis` of x.
Tensor along(const Tensor& v, const Tensor& x, int64_t axis) {
  std::vector<int64_t> shape(x.dim(), 1);
  shape[axis] = v.numel();
  return v.reshape(shape);
}

void check_range(int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.");
}

// The fake-quantized x and its mask from the unclamped quantized values q
// (computed type), the zero point and the scale (float), broadcastable.
std::tuple<Tensor, Tensor> from_quantized(const Tensor& x, const Tensor& q, const Tensor& zero_point,
                                          const Tensor& scale, int64_t quant_min, int64_t quant_max) {
  Tensor levels = clamp_nan_low(q, quant_min, quant_max).sub(zero_point.to(q.scalar_type()));
  Tensor output = levels.to(at::kFloat).mul(scale).to(x.scalar_type());
  Tensor mask = q.ge(quant_min).logical_and(q.le(quant_max));
  return {output, mask};
}

// Per tensor: zero_point + round(x * (1 / scale)), the reciprocal in float.
std::tuple<Tensor, Tensor> per_tensor(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                      int64_t quant_min, int64_t quant_max) {
  const c10::ScalarType type = compute_type(x);
  Tensor inverse = scale.to(at::kFloat).reciprocal().to(type);
  Tensor q = x.to(type).mul(inverse).round().add(zero_point.to(type));
  return from_quantized(x, q, zero_point, scale.to(at::kFloat), quant_min, quant_max);
}

std::tuple<Tensor, Tensor> fake_quantize_per_tensor_cachemask(const Tensor& self, double scale, int64_t zero_point,
                                                              int64_t quant_min, int64_t quant_max) {
  check_range(quant_min, quant_max);
  TORCH_CHECK(zero_point >= quant_min && zero_point <= quant_max,
              "`zero_point` must be between `quant_min` and `quant_max`.");
  const float inverse = 1.0f / static_cast<float>(scale);
  const c10::ScalarType type = compute_type(self);
  Tensor q = self.to(type).mul(static_cast<double>(inverse)).round().add(zero_point);
  Tensor levels = clamp_nan_low(q, quant_min, quant_max).sub(zero_point);
  Tensor output = levels.to(at::kFloat).mul(static_cast<double>(static_cast<float>(scale))).to(self.scalar_type());
  return {output, q.ge(quant_min).logical_and(q.le(quant_max))};
}

std::tuple<Tensor, Tensor> fake_quantize_per_tensor_cachemask_tensor_qparams(const Tensor& self, const Tensor& scale,
                                                                             const Tensor& zero_point,
                                                                             const Tensor& fake_quant_enabled,
                                                                             int64_t quant_min, int64_t quant_max) {
  const char* op = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams";
  check_range(quant_min, quant_max);
  // CPU reads the zero point as an integer (toInt truncates a float one).
  Tensor zp = only_element(zero_point, op, "zero_point").to(at::kLong);
  auto [output, mask] = per_tensor(self, only_element(scale, op, "scale"), zp, quant_min, quant_max);
  Tensor enabled = only_element(fake_quant_enabled, op, "fake_quant_enabled").ne(0);
  return {at::where(enabled, output, self), mask.logical_or(enabled.logical_not())};
}

void check_per_channel(const char* op, const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                       int64_t axis, int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(scale.scalar_type() == at::kFloat, op, ": Scale must be Float, found ", scale.scalar_type());
  const c10::ScalarType zp = zero_point.scalar_type();
  TORCH_CHECK(zp == at::kInt || zp == at::kFloat || zp == at::kHalf, op,
              ": Zero-point must be Int32, Float or Half, found ", zp);
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(axis >= 0 && axis < self.dim(), "`axis` must be between 0 and number of dimensions of input");
  TORCH_CHECK(scale.numel() == self.size(axis),
              "dimensions of scale and zero-point are not consistent with input tensor");
  check_range(quant_min, quant_max);
}

std::tuple<Tensor, Tensor> per_channel(const Tensor& self, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                                       int64_t quant_min, int64_t quant_max) {
  const c10::ScalarType type = compute_type(self);
  Tensor sc = along(scale.to(at::kFloat), self, axis);
  Tensor zp = along(zero_point, self, axis);
  Tensor scaled = self.to(type).mul(sc.reciprocal().to(type));
  // A float zero point is added before rounding (the affine quantizer's
  // round(x / scale + zero_point)); an integer one after.
  Tensor q = c10::isFloatingType(zp.scalar_type()) ? scaled.add(zp.to(type)).round()
                                                    : scaled.round().add(zp.to(type));
  return from_quantized(self, q, zp, sc, quant_min, quant_max);
}

std::tuple<Tensor, Tensor> fake_quantize_per_channel_cachemask(const Tensor& self, const Tensor& scale,
                                                               const Tensor& zero_point, int64_t axis,
                                                               int64_t quant_min, int64_t quant_max) {
  check_per_channel("fake_quantize_per_channel_affine", self, scale, zero_point, axis, quant_min, quant_max);
  return per_channel(self, scale, zero_point, axis, quant_min, quant_max);
}

// ---- learnable scale and zero point --------------------------------------------------------

void check_learnable(const char* op, const Tensor& grad, const Tensor& x, const Tensor& scale,
                     const Tensor& zero_point, int64_t quant_min, int64_t quant_max) {
  for (const Tensor* t : {&grad, &x, &scale, &zero_point}) {
    TORCH_CHECK(t->scalar_type() == at::kFloat, op, ": expected float tensors, got ", t->scalar_type());
  }
  TORCH_CHECK(x.numel() == grad.numel(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0,
              "`quant_min` should be less than or equal to `quant_max`, and the quantization range should include 0.");
}

// The gradients of a learnable fake quantization at x, for the zero point
// and scale (broadcast to x) CPU's kernels use:
// (dX, dScale, dZeroPoint), elementwise.
std::tuple<Tensor, Tensor, Tensor> learnable_gradients(const Tensor& grad, const Tensor& x, const Tensor& scale,
                                                       const Tensor& zero_point, int64_t quant_min,
                                                       int64_t quant_max, double grad_factor) {
  Tensor inverse = scale.reciprocal();
  Tensor q = x.mul(inverse).add(zero_point).round();
  Tensor below = q.lt(quant_min).logical_or(q.isnan());
  Tensor above = q.gt(quant_max);
  Tensor inside = below.logical_or(above).logical_not();
  Tensor dx = grad.mul(inside);
  Tensor fake = q.clamp(quant_min, quant_max).sub(zero_point).mul(scale);
  Tensor dscale_inside = grad.mul(fake.sub(x)).mul(inverse).mul(grad_factor);
  Tensor bound = at::where(below, zero_point.neg().add(quant_min), zero_point.neg().add(quant_max));
  Tensor dscale = at::where(inside, dscale_inside, grad.mul(bound).mul(grad_factor));
  Tensor dzero_point = at::where(inside, 0.0, grad.neg().mul(scale).mul(grad_factor));
  return {dx, dscale, dzero_point};
}

Tensor learnable_per_tensor(const Tensor& self, const Tensor& scale, const Tensor& zero_point, int64_t quant_min,
                            int64_t quant_max, double /*grad_factor*/) {
  const char* op = "_fake_quantize_learnable_per_tensor_affine";
  check_range(quant_min, quant_max);
  // The zero point rounded to an integer in range (CPU's
  // _get_zero_point_from_tensor, forward form).
  Tensor zp = only_element(zero_point, op, "zero_point").to(at::kFloat).round().clamp(quant_min, quant_max);
  return std::get<0>(per_tensor(self, only_element(scale, op, "scale"), zp, quant_min, quant_max));
}

std::tuple<Tensor, Tensor, Tensor> learnable_per_tensor_backward(const Tensor& grad, const Tensor& self,
                                                                 const Tensor& scale, const Tensor& zero_point,
                                                                 int64_t quant_min, int64_t quant_max,
                                                                 double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_tensor_affine_backward";
  check_learnable(op, grad, self, scale, zero_point, quant_min, quant_max);
  if (self.numel() <= 0) return {self, scale, zero_point};
  Tensor sc = only_element(scale, op, "scale");
  // The backward form: zero_point + 0.5, clamped, truncated.
  Tensor zp = only_element(zero_point, op, "zero_point").add(0.5).clamp(quant_min, quant_max).trunc();
  auto [dx, dscale, dzero_point] = learnable_gradients(grad, self, sc, zp, quant_min, quant_max, grad_factor);
  return {dx, dscale.sum().unsqueeze(0), dzero_point.sum().unsqueeze(0)};
}

Tensor learnable_per_channel(const Tensor& self, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                             int64_t quant_min, int64_t quant_max, double /*grad_factor*/) {
  check_range(quant_min, quant_max);
  Tensor zp = zero_point.round().clamp(quant_min, quant_max).to(at::kInt);
  check_per_channel("_fake_quantize_learnable_per_channel_affine", self, scale, zp, axis, quant_min, quant_max);
  return std::get<0>(per_channel(self, scale, zp, axis, quant_min, quant_max));
}

std::tuple<Tensor, Tensor, Tensor> learnable_per_channel_backward(const Tensor& grad, const Tensor& self,
                                                                  const Tensor& scale, const Tensor& zero_point,
                                                                  int64_t axis, int64_t quant_min,
                                                                  int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_channel_affine_backward";
  check_learnable(op, grad, self, scale, zero_point, quant_min, quant_max);
  TORCH_CHECK(axis >= 0 && axis < self.dim(), "`axis` must be between 0 and number of dimensions of input");
  if (self.numel() <= 0) return {self, scale, zero_point};
  Tensor zp = along(zero_point.round().clamp(quant_min, quant_max), self, axis);
  auto [dx, dscale, dzero_point] =
      learnable_gradients(grad, self, along(scale, self, axis), zp, quant_min, quant_max, grad_factor);
  std::vector<int64_t> others;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != axis) others.push_back(d);
  }
  return {dx, dscale.sum(others), dzero_point.sum(others)};
}

// ---- the fused moving-average observer ------------------------------------------------------

// quant_utils::ChooseQuantizationParams (fbgemm's), elementwise over the
// observed ranges, in float: (scale, zero point as an integral float).
std::tuple<Tensor, Tensor> choose_qparams(const Tensor& observed_min, const Tensor& observed_max, int64_t quant_min,
                                          int64_t quant_max, bool preserve_sparsity) {
  Tensor lo = observed_min.to(at::kFloat), hi = observed_max.to(at::kFloat);
  if (preserve_sparsity) {
    const int64_t symmetric_min = -((quant_max - quant_min) / 2 + 1), symmetric_max = (quant_max - quant_min) / 2;
    Tensor largest = at::maximum(lo.div(symmetric_min).abs(), hi.div(symmetric_max).abs());
    Tensor straddles = lo.lt(0).logical_and(hi.gt(0));
    lo = at::where(straddles, largest.mul(symmetric_min), lo);
    hi = at::where(straddles, largest.mul(symmetric_max), hi);
  }
  // The range holds 0, so that 0 is exactly representable.
  lo = lo.clamp_max(0);
  hi = hi.clamp_min(0);
  const double levels = static_cast<double>(quant_max - quant_min);
  Tensor scale = hi.sub(lo).div(levels);
  scale = at::where(scale.eq(0).logical_or(scale.reciprocal().isinf()), 0.1, scale);
  // Scales below float16's smallest normal are raised to it, the range
  // scaled with them.
  constexpr double kSmallest = 6.1e-5f;
  Tensor small = scale.lt(kSmallest);
  Tensor amplifier = scale.reciprocal().mul(kSmallest);
  Tensor lo_small = at::where(lo.eq(0), lo, at::where(hi.eq(0), -kSmallest * levels, lo.mul(amplifier)));
  Tensor hi_small = at::where(lo.eq(0), kSmallest * levels, at::where(hi.eq(0), hi, hi.mul(amplifier)));
  lo = at::where(small, lo_small, lo);
  hi = at::where(small, hi_small, hi);
  scale = at::where(small, kSmallest, scale);
  // The zero point from whichever end adds the smaller terms.
  Tensor lo_steps = lo.div(scale), hi_steps = hi.div(scale);
  Tensor from_min = lo_steps.neg().add(quant_min), from_max = hi_steps.neg().add(quant_max);
  Tensor min_error = lo_steps.abs().neg().add(std::abs(quant_min));
  Tensor max_error = hi_steps.abs().neg().add(std::abs(quant_max));
  Tensor zero_point = at::where(min_error.lt(max_error), from_min, from_max);
  if (preserve_sparsity) {
    zero_point = at::where(lo.lt(0).logical_and(hi.gt(0)), static_cast<double>(quant_min + quant_max) / 2, zero_point);
  }
  zero_point = at::where(zero_point.lt(quant_min), static_cast<double>(quant_min),
                         at::where(zero_point.gt(quant_max), static_cast<double>(quant_max), zero_point.round()));
  return {scale, zero_point};
}

// running + c (current - running), or current where running is infinite
// (not observed yet).
Tensor moving_average(const Tensor& running, const Tensor& current, double averaging_const) {
  Tensor moved = running.add(current.sub(running).mul(static_cast<double>(static_cast<float>(averaging_const))));
  return at::where(running.isinf(), current, moved);
}

std::tuple<Tensor, Tensor> fused_moving_avg_obs_fq_helper(const Tensor& self, const Tensor& observer_on,
                                                          const Tensor& fake_quant_on, Tensor& running_min,
                                                          Tensor& running_max, Tensor& scale, Tensor& zero_point,
                                                          double averaging_const, int64_t quant_min,
                                                          int64_t quant_max, int64_t ch_axis,
                                                          bool per_row_fake_quant, bool symmetric_quant) {
  const char* op = "fused_moving_avg_obs_fake_quant";
  Tensor observe = only_element(observer_on, op, "observer_on").ne(0);
  Tensor quantize = only_element(fake_quant_on, op, "fake_quant_on").ne(0);
  Tensor current_min, current_max;
  if (per_row_fake_quant) {
    TORCH_CHECK(ch_axis == 0, "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0");
    Tensor rows = self.dim() == 2 ? self : self.flatten(1);
    if (running_min.numel() == 0) {
      const int64_t channels = self.size(ch_axis);
      running_min.resize_({channels}).fill_(std::numeric_limits<float>::infinity());
      running_max.resize_({channels}).fill_(-std::numeric_limits<float>::infinity());
      scale.resize_({channels});
      zero_point.resize_({channels});
    }
    std::tie(current_min, current_max) = rows.aminmax(1);
  } else {
    std::tie(current_min, current_max) = self.aminmax();
  }
  running_min.copy_(at::where(observe, moving_average(running_min, current_min, averaging_const), running_min));
  running_max.copy_(at::where(observe, moving_average(running_max, current_max, averaging_const), running_max));

  auto [new_scale, new_zero_point] = choose_qparams(running_min, running_max, quant_min, quant_max, symmetric_quant);
  check_range(quant_min, quant_max);
  Tensor output, mask;
  if (per_row_fake_quant) {
    // An integer zero point, as CPU passes it (added after rounding).
    std::tie(output, mask) = per_channel(self, new_scale, new_zero_point.to(at::kInt), ch_axis, quant_min, quant_max);
  } else {
    std::tie(output, mask) =
        per_tensor(self, new_scale.reshape({}), new_zero_point.reshape({}), quant_min, quant_max);
  }
  scale.copy_(at::where(quantize, new_scale.reshape(scale.sizes()).to(scale.scalar_type()), scale));
  zero_point.copy_(
      at::where(quantize, new_zero_point.reshape(zero_point.sizes()).to(zero_point.scalar_type()), zero_point));
  return {at::where(quantize, output, self), mask.logical_or(quantize.logical_not())};
}

// dequantize() of a tensor that is not quantized (no tpu tensor is) is a
// cast to float, as on CPU and CUDA.
Tensor dequantize(const Tensor& self) { return self.to(at::kFloat); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fake_quantize_per_tensor_affine_cachemask", fake_quantize_per_tensor_cachemask);
  m.impl("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
         fake_quantize_per_tensor_cachemask_tensor_qparams);
  m.impl("fake_quantize_per_channel_affine_cachemask", fake_quantize_per_channel_cachemask);
  m.impl("_fake_quantize_learnable_per_tensor_affine", learnable_per_tensor);
  m.impl("_fake_quantize_learnable_per_tensor_affine_backward", learnable_per_tensor_backward);
  m.impl("_fake_quantize_learnable_per_channel_affine", learnable_per_channel);
  m.impl("_fake_quantize_learnable_per_channel_affine_backward", learnable_per_channel_backward);
  m.impl("_fused_moving_avg_obs_fq_helper", fused_moving_avg_obs_fq_helper);
  m.impl("dequantize.self", dequantize);
}

}  // namespace torch_tpu::aten
