// ATen glue for upsampling: upsample_nearest1d/2d/3d,
// _upsample_nearest_exact1d/2d/3d, upsample_linear1d, upsample_bilinear2d,
// upsample_trilinear3d, upsample_bicubic2d and the antialiased
// _upsample_bilinear2d_aa / _upsample_bicubic2d_aa, with their backward ops.
// F.interpolate and the .vec overloads are composite in ATen: they compute
// the output size and reach these. Lowerings: csrc/ops/nn/upsample.cc.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/nn/upsample.h"

namespace torch_tpu::aten {

namespace {

using ops::UpsampleMode;
using Scales = std::vector<std::optional<double>>;

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, double v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

const char* op_name(UpsampleMode mode, size_t n, bool backward) {
  static const char* names[4][3][2] = {
      {{"aten::upsample_nearest1d", "aten::upsample_nearest1d_backward"},
       {"aten::upsample_nearest2d", "aten::upsample_nearest2d_backward"},
       {"aten::upsample_nearest3d", "aten::upsample_nearest3d_backward"}},
      {{"aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact1d_backward"},
       {"aten::_upsample_nearest_exact2d", "aten::_upsample_nearest_exact2d_backward"},
       {"aten::_upsample_nearest_exact3d", "aten::_upsample_nearest_exact3d_backward"}},
      {{"aten::upsample_linear1d", "aten::upsample_linear1d_backward"},
       {"aten::upsample_bilinear2d", "aten::upsample_bilinear2d_backward"},
       {"aten::upsample_trilinear3d", "aten::upsample_trilinear3d_backward"}},
      {{"aten::upsample_bicubic1d", "aten::upsample_bicubic1d_backward"},
       {"aten::upsample_bicubic2d", "aten::upsample_bicubic2d_backward"},
       {"aten::upsample_bicubic3d", "aten::upsample_bicubic3d_backward"}},
  };
  if (mode == UpsampleMode::kLinearAntialias) {
    return backward ? "aten::_upsample_bilinear2d_aa_backward" : "aten::_upsample_bilinear2d_aa";
  }
  if (mode == UpsampleMode::kCubicAntialias) {
    return backward ? "aten::_upsample_bicubic2d_aa_backward" : "aten::_upsample_bicubic2d_aa";
  }
  const int m = mode == UpsampleMode::kNearest ? 0 : mode == UpsampleMode::kNearestExact ? 1
                : mode == UpsampleMode::kLinear ? 2 : 3;
  return names[m][n - 1][backward ? 1 : 0];
}

// ATen's upsample_{n}d_common_check: rank n + 2 and positive spatial sizes
// on both sides.
void check_sizes(at::IntArrayRef input, at::IntArrayRef output, size_t n) {
  TORCH_CHECK(output.size() == n, "It is expected output_size equals to ", n, ", but got size ", output.size());
  TORCH_CHECK(input.size() == n + 2, "It is expected input_size equals to ", n + 2, ", but got size ",
              input.size());
  bool positive = true;
  for (size_t i = 0; i < n; ++i) positive = positive && input[i + 2] > 0 && output[i] > 0;
  TORCH_CHECK(positive, "Input and output sizes should be greater than 0, but got input ",
              input.slice(2), " and output ", output);
}

void check_dtype(const at::Tensor& t, UpsampleMode mode, const char* op) {
  const c10::ScalarType s = t.scalar_type();
  const bool nearest = mode == UpsampleMode::kNearest || mode == UpsampleMode::kNearestExact;
  const bool ok = c10::isFloatingType(s) || (nearest && s == at::kByte);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", op + 6, "\" not implemented for '", c10::toString(s), "'");
  to_element_type(s, op);
}

std::string key_of(UpsampleMode mode, bool align_corners, const Scales& scales) {
  std::string key(1, static_cast<char>(mode));
  key.push_back(align_corners ? 'a' : '-');
  for (const auto& s : scales) {
    key.push_back(s ? 's' : '-');
    if (s) put(key, *s);
  }
  return key;
}

at::Tensor upsample(const at::Tensor& self, c10::SymIntArrayRef output_sym, UpsampleMode mode, bool align_corners,
                    const Scales& scales) {
  const size_t n = scales.size();
  const char* op = op_name(mode, n, false);
  const auto output = C10_AS_INTARRAYREF_SLOW(output_sym).vec();
  check_sizes(self.sizes(), output, n);
  TORCH_CHECK(self.numel() != 0 || self.size(1) != 0, "Non-empty ", n + 2,
              "D data tensor expected but got a tensor with sizes ", self.sizes());
  check_dtype(self, mode, op);
  std::vector<int64_t> out_dims = {self.size(0), self.size(1)};
  out_dims.insert(out_dims.end(), output.begin(), output.end());
  if (self.numel() == 0) return at::empty(out_dims, self.options());
  std::string attributes = key_of(mode, align_corners, scales);
  for (int64_t o : output) put(attributes, o);
  OpCall call{op, std::move(attributes), {self}, {}};
  return in_memory_format_of(
      run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
        return std::vector<hlo::Value>{ops::lower_upsample(b, t[0], mode, align_corners, output, scales)};
      }).at(0),
      self);
}

at::Tensor upsample_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_sym,
                             c10::SymIntArrayRef input_sym, UpsampleMode mode, bool align_corners,
                             const Scales& scales) {
  const size_t n = scales.size();
  const char* op = op_name(mode, n, true);
  const auto output = C10_AS_INTARRAYREF_SLOW(output_sym).vec();
  const auto input = C10_AS_INTARRAYREF_SLOW(input_sym).vec();
  check_sizes(input, output, n);
  check_dtype(grad_output, mode, op);
  std::vector<int64_t> expected = {input[0], input[1]};
  expected.insert(expected.end(), output.begin(), output.end());
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(expected), "Expected grad_output to have the same shape as ",
              "output; output.size(", 0, ") = ", expected, " but got grad_output.size() = ", grad_output.sizes());
  if (grad_output.numel() == 0) return at::zeros(input, grad_output.options());
  std::string attributes = key_of(mode, align_corners, scales);
  for (int64_t s : input) put(attributes, s);
  OpCall call{op, std::move(attributes), {grad_output}, {}};
  const at::Tensor grad_input =
      run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
        return std::vector<hlo::Value>{ops::lower_upsample_backward(b, t[0], input, mode, align_corners, scales)};
      }).at(0);
  // CPU's bicubic and 3-D nearest backward kernels (and their shape
  // functions) return contiguous gradients; the others keep grad_output's
  // memory format.
  const bool nearest = mode == UpsampleMode::kNearest || mode == UpsampleMode::kNearestExact;
  const bool cubic = mode == UpsampleMode::kCubic || mode == UpsampleMode::kCubicAntialias;
  if (cubic || (nearest && n == 3)) return grad_input;
  return in_memory_format_of(grad_input, grad_output);
}

using OptD = std::optional<double>;
using Sym = c10::SymIntArrayRef;

constexpr UpsampleMode kN = UpsampleMode::kNearest;
constexpr UpsampleMode kE = UpsampleMode::kNearestExact;
constexpr UpsampleMode kL = UpsampleMode::kLinear;
constexpr UpsampleMode kC = UpsampleMode::kCubic;

at::Tensor nearest1d(const at::Tensor& x, Sym o, OptD s) { return upsample(x, o, kN, false, {s}); }
at::Tensor nearest2d(const at::Tensor& x, Sym o, OptD h, OptD w) { return upsample(x, o, kN, false, {h, w}); }
at::Tensor nearest3d(const at::Tensor& x, Sym o, OptD d, OptD h, OptD w) { return upsample(x, o, kN, false, {d, h, w}); }
at::Tensor exact1d(const at::Tensor& x, Sym o, OptD s) { return upsample(x, o, kE, false, {s}); }
at::Tensor exact2d(const at::Tensor& x, Sym o, OptD h, OptD w) { return upsample(x, o, kE, false, {h, w}); }
at::Tensor exact3d(const at::Tensor& x, Sym o, OptD d, OptD h, OptD w) { return upsample(x, o, kE, false, {d, h, w}); }
at::Tensor linear1d(const at::Tensor& x, Sym o, bool a, OptD s) { return upsample(x, o, kL, a, {s}); }
at::Tensor bilinear2d(const at::Tensor& x, Sym o, bool a, OptD h, OptD w) { return upsample(x, o, kL, a, {h, w}); }
at::Tensor trilinear3d(const at::Tensor& x, Sym o, bool a, OptD d, OptD h, OptD w) {
  return upsample(x, o, kL, a, {d, h, w});
}
at::Tensor bicubic2d(const at::Tensor& x, Sym o, bool a, OptD h, OptD w) { return upsample(x, o, kC, a, {h, w}); }
at::Tensor bilinear2d_aa(const at::Tensor& x, Sym o, bool a, OptD h, OptD w) {
  return upsample(x, o, UpsampleMode::kLinearAntialias, a, {h, w});
}
at::Tensor bicubic2d_aa(const at::Tensor& x, Sym o, bool a, OptD h, OptD w) {
  return upsample(x, o, UpsampleMode::kCubicAntialias, a, {h, w});
}

at::Tensor nearest1d_bw(const at::Tensor& g, Sym o, Sym i, OptD s) { return upsample_backward(g, o, i, kN, false, {s}); }
at::Tensor nearest2d_bw(const at::Tensor& g, Sym o, Sym i, OptD h, OptD w) {
  return upsample_backward(g, o, i, kN, false, {h, w});
}
at::Tensor nearest3d_bw(const at::Tensor& g, Sym o, Sym i, OptD d, OptD h, OptD w) {
  return upsample_backward(g, o, i, kN, false, {d, h, w});
}
at::Tensor exact1d_bw(const at::Tensor& g, Sym o, Sym i, OptD s) { return upsample_backward(g, o, i, kE, false, {s}); }
at::Tensor exact2d_bw(const at::Tensor& g, Sym o, Sym i, OptD h, OptD w) {
  return upsample_backward(g, o, i, kE, false, {h, w});
}
at::Tensor exact3d_bw(const at::Tensor& g, Sym o, Sym i, OptD d, OptD h, OptD w) {
  return upsample_backward(g, o, i, kE, false, {d, h, w});
}
at::Tensor linear1d_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD s) {
  return upsample_backward(g, o, i, kL, a, {s});
}
at::Tensor bilinear2d_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD h, OptD w) {
  return upsample_backward(g, o, i, kL, a, {h, w});
}
at::Tensor trilinear3d_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD d, OptD h, OptD w) {
  return upsample_backward(g, o, i, kL, a, {d, h, w});
}
at::Tensor bicubic2d_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD h, OptD w) {
  return upsample_backward(g, o, i, kC, a, {h, w});
}
at::Tensor bilinear2d_aa_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD h, OptD w) {
  return upsample_backward(g, o, i, UpsampleMode::kLinearAntialias, a, {h, w});
}
at::Tensor bicubic2d_aa_bw(const at::Tensor& g, Sym o, Sym i, bool a, OptD h, OptD w) {
  return upsample_backward(g, o, i, UpsampleMode::kCubicAntialias, a, {h, w});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("upsample_nearest1d", nearest1d);
  m.impl("upsample_nearest2d", nearest2d);
  m.impl("upsample_nearest3d", nearest3d);
  m.impl("_upsample_nearest_exact1d", exact1d);
  m.impl("_upsample_nearest_exact2d", exact2d);
  m.impl("_upsample_nearest_exact3d", exact3d);
  m.impl("upsample_linear1d", linear1d);
  m.impl("upsample_bilinear2d", bilinear2d);
  m.impl("upsample_trilinear3d", trilinear3d);
  m.impl("upsample_bicubic2d", bicubic2d);
  m.impl("upsample_nearest1d_backward", nearest1d_bw);
  m.impl("upsample_nearest2d_backward", nearest2d_bw);
  m.impl("upsample_nearest3d_backward", nearest3d_bw);
  m.impl("_upsample_nearest_exact1d_backward", exact1d_bw);
  m.impl("_upsample_nearest_exact2d_backward", exact2d_bw);
  m.impl("_upsample_nearest_exact3d_backward", exact3d_bw);
  m.impl("upsample_linear1d_backward", linear1d_bw);
  m.impl("upsample_bilinear2d_backward", bilinear2d_bw);
  m.impl("upsample_trilinear3d_backward", trilinear3d_bw);
  m.impl("upsample_bicubic2d_backward", bicubic2d_bw);
  m.impl("_upsample_bilinear2d_aa", bilinear2d_aa);
  m.impl("_upsample_bicubic2d_aa", bicubic2d_aa);
  m.impl("_upsample_bilinear2d_aa_backward", bilinear2d_aa_bw);
  m.impl("_upsample_bicubic2d_aa_backward", bicubic2d_aa_bw);
}

}  // namespace torch_tpu::aten
