// ATen glue for the ops that reorder or pad elements: triu / tril, flip,
// roll, repeat, repeat_interleave (the Tensor-repeats index form),
// constant_pad_nd, reflection / replication padding (1d, 2d, 3d, with
// their backward) and linalg_cross. Shape checks and errors follow CPU;
// the lowerings live in csrc/ops/shape/{triangular,reorder,pad}.cc and
// csrc/ops/linalg/cross.cc. tile, repeat_interleave.self_int, F.pad's
// circular mode and torch.cross are composite in ATen and reach these.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <c10/util/accumulate.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/linalg/cross.h"
#include "ops/shape/pad.h"
#include "ops/shape/reorder.h"
#include "ops/shape/triangular.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, const std::vector<int64_t>& v) {
  put(key, static_cast<int64_t>(v.size()));
  for (int64_t x : v) put(key, x);
}

using Lower1 = std::function<hlo::Value(hlo::Builder&, const std::vector<hlo::Value>&, const std::vector<hlo::Value>&)>;

LoweringBody one_result(Lower1 lower) {
  return [lower = std::move(lower)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                    const std::vector<hlo::Value>& s) { return std::vector<hlo::Value>{lower(b, t, s)}; };
}

// ---- triu / tril -------------------------------------------------------------

OpCall triangular_call(const at::Tensor& self, int64_t diagonal, bool upper) {
  TORCH_CHECK(self.dim() >= 2, upper ? "triu" : "tril", ": input tensor must have at least 2 dimensions");
  to_element_type(self.scalar_type(), upper ? "aten::triu" : "aten::tril");
  std::string key;
  put(key, diagonal);
  return OpCall{upper ? "aten::triu" : "aten::tril", std::move(key), {self}, {}};
}

LoweringBody triangular_body(int64_t diagonal, bool upper) {
  return one_result([diagonal, upper](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return ops::lower_triangular(b, t[0], diagonal, upper);
  });
}

at::Tensor triangular(const at::Tensor& self, int64_t diagonal, bool upper) {
  OpCall call = triangular_call(self, diagonal, upper);
  return run_op(call, triangular_body(diagonal, upper)).at(0);
}

at::Tensor& triangular_into(const at::Tensor& self, int64_t diagonal, bool upper, at::Tensor& out, bool inplace) {
  OpCall call = triangular_call(self, diagonal, upper);
  check_exact(self.scalar_type(), out);
  prepare_out(out, self.sizes(), inplace);
  run_op_into(call, triangular_body(diagonal, upper), out);
  return out;
}

at::Tensor triu(const at::Tensor& s, int64_t d) { return triangular(s, d, true); }
at::Tensor tril(const at::Tensor& s, int64_t d) { return triangular(s, d, false); }
at::Tensor& triu_(at::Tensor& s, int64_t d) { return triangular_into(s, d, true, s, true); }
at::Tensor& tril_(at::Tensor& s, int64_t d) { return triangular_into(s, d, false, s, true); }
at::Tensor& triu_out(const at::Tensor& s, int64_t d, at::Tensor& out) { return triangular_into(s, d, true, out, false); }
at::Tensor& tril_out(const at::Tensor& s, int64_t d, at::Tensor& out) { return triangular_into(s, d, false, out, false); }

// ---- flip, roll, repeat ---------------------------------------------------------

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  to_element_type(self.scalar_type(), "aten::flip");
  const int64_t rank = self.dim();
  auto mask = at::dim_list_to_bitset(dims, static_cast<size_t>(std::max<int64_t>(rank, 1)));
  std::vector<int64_t> flipped;
  for (int64_t d = 0; d < rank; ++d) {
    if (mask[d]) flipped.push_back(d);
  }
  std::string key;
  put(key, flipped);
  const at::Tensor flipped_values =
      run_op(OpCall{"aten::flip", std::move(key), {self}, {}},
             one_result([flipped](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
               return ops::lower_flip(b, t[0], flipped);
             }))
          .at(0);
  return in_layout_of(flipped_values, self);  // CPU's flip keeps the input's layout
}

at::Tensor roll(const at::Tensor& self, c10::SymIntArrayRef shifts_sym, at::IntArrayRef dims_in) {
  TORCH_CHECK(!shifts_sym.empty(), "`shifts` required");
  to_element_type(self.scalar_type(), "aten::roll");
  std::vector<int64_t> shifts;
  for (const auto& s : shifts_sym) shifts.push_back(s.guard_int(__FILE__, __LINE__));
  std::vector<int64_t> dims;
  if (!(dims_in.empty() && shifts.size() == 1)) {
    TORCH_CHECK(shifts.size() == dims_in.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims_in.size());
    for (int64_t d : dims_in) dims.push_back(at::maybe_wrap_dim(d, self.dim()));
  }
  // Only the shift modulo each size shapes the program.
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t n = self.size(dims[i]);
    shifts[i] = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
  }
  if (dims.empty()) {
    const int64_t n = self.numel();
    shifts[0] = n == 0 ? 0 : ((shifts[0] % n) + n) % n;
  }
  std::string key;
  put(key, shifts);
  put(key, dims);
  at::Tensor rolled = run_op(OpCall{"aten::roll", std::move(key), {self}, {}},
                             one_result([shifts, dims](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                       const std::vector<hlo::Value>&) {
                               return ops::lower_roll(b, t[0], shifts, dims);
                             }))
                          .at(0);
  // CPU's roll keeps a channels_last input's format and is row-major
  // otherwise (a transposed input gives a contiguous result), as CUDA's.
  return dims.empty() ? rolled : in_memory_format_of(rolled, self);
}

at::Tensor repeat(const at::Tensor& self, c10::SymIntArrayRef repeats_sym) {
  std::vector<int64_t> repeats;
  for (const auto& r : repeats_sym) repeats.push_back(r.guard_int(__FILE__, __LINE__));
  TORCH_CHECK(repeats.size() >= static_cast<size_t>(self.dim()),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  to_element_type(self.scalar_type(), "aten::repeat");
  const int64_t extra = static_cast<int64_t>(repeats.size()) - self.dim();
  std::vector<int64_t> shape;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t size = static_cast<int64_t>(i) < extra ? 1 : self.size(static_cast<int64_t>(i) - extra);
    shape.push_back(repeats[i] * size);
  }
  for (int64_t s : shape) {
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", c10::IntArrayRef(shape));
  }
  std::string key;
  put(key, repeats);
  return run_op(OpCall{"aten::repeat", std::move(key), {self}, {}},
                one_result([repeats](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
                  return ops::lower_repeat(b, t[0], repeats);
                }))
      .at(0);
}

// repeat_interleave(repeats): index i repeated repeats[i] times. Without
// output_size the total is read back to the host (the result's size depends
// on it); with it, the sum and the signs are checked at the next sync.
at::Tensor repeat_interleave_tensor(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK_NOT_IMPLEMENTED(repeats.scalar_type() == c10::kLong || repeats.scalar_type() == c10::kInt,
                              "\"repeat_interleave_cpu\" not implemented for '", repeats.scalar_type(), "'");
  if (repeats.size(0) == 0) return at::empty({0}, repeats.options());
  const ElementType out = to_element_type(repeats.scalar_type());
  // [total, any count negative]
  auto totals = [](hlo::Builder& b, const hlo::Value& repeats) {
    const hlo::Value r = b.convert(repeats, ElementType::kS64);
    const auto s64 = hlo::TensorType::scalar(ElementType::kS64);
    const auto pred = hlo::TensorType::scalar(ElementType::kPred);
    auto total = b.reduce({r}, {b.constant_splat_int(0, s64)}, {0}, [](hlo::Builder& s, const std::vector<hlo::Value>& a) {
      return std::vector<hlo::Value>{s.add(a[0], a[1])};
    })[0];
    auto negative = b.reduce({b.compare(r, b.constant_splat_int(0, r.type()), "LT")}, {b.constant_splat_int(0, pred)},
                             {0}, [](hlo::Builder& s, const std::vector<hlo::Value>& a) {
                               return std::vector<hlo::Value>{s.or_(a[0], a[1])};
                             })[0];
    return std::pair<hlo::Value, hlo::Value>{total, negative};
  };
  if (output_size.has_value()) {
    // No sync: the indices, and the checks as flags read at the next sync.
    const int64_t total = output_size->guard_int(__FILE__, __LINE__);
    std::string key = "sized";
    put(key, total);
    auto r = run_op(OpCall{"aten::repeat_interleave", std::move(key), {repeats}, {}},
                    [total, out, totals](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                         const std::vector<hlo::Value>&) {
                      auto [sum, negative] = totals(b, t[0]);
                      // One error per call: the size's only when no repeat is negative.
                      hlo::Value mismatch = b.and_(b.not_(negative),
                                                   b.compare(sum, b.constant_splat_int(total, sum.type()), "NE"));
                      return std::vector<hlo::Value>{
                          b.convert(ops::lower_repeat_interleave_indices(b, t[0], total), out), negative, mismatch};
                    });
    defer_check(r[1], CheckError::kRuntime, "repeats can not be negative");
    defer_check(r[2], CheckError::kRuntime, "allocated size does not match required size");
    return r[0];
  }
  // The result's size is the total: read it (and the sign check) on the host.
  auto info = run_op(OpCall{"aten::repeat_interleave", "totals", {repeats}, {}},
                     [totals](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
                       auto [sum, negative] = totals(b, t[0]);
                       return std::vector<hlo::Value>{sum, negative};
                     });
  TORCH_CHECK(!info[1].item<bool>(), "repeats can not be negative");
  const int64_t total = info[0].item<int64_t>();
  std::string key = "index";
  put(key, total);
  return run_op(OpCall{"aten::repeat_interleave", std::move(key), {repeats}, {}},
                one_result([total, out](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                        const std::vector<hlo::Value>&) {
                  return b.convert(ops::lower_repeat_interleave_indices(b, t[0], total), out);
                }))
      .at(0);
}

// ---- constant_pad_nd --------------------------------------------------------------

at::Tensor constant_pad_nd(const at::Tensor& self, c10::SymIntArrayRef pad_sym, const c10::Scalar& value) {
  std::vector<int64_t> pad;
  for (const auto& p : pad_sym) pad.push_back(p.guard_int(__FILE__, __LINE__));
  TORCH_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  const int64_t rank = self.dim();
  const int64_t pairs = static_cast<int64_t>(pad.size() / 2);
  TORCH_CHECK(rank >= pairs, "Length of pad should be no more than twice the number of dimensions of the input. ",
              "Pad length is ", pad.size(), "while the input has ", rank, "dimensions.");
  const ElementType type = to_element_type(self.scalar_type(), "aten::constant_pad_nd");
  std::vector<int64_t> lows(rank, 0), highs(rank, 0);
  for (int64_t i = 0; i < pairs; ++i) {
    const int64_t d = rank - 1 - i;
    lows[d] = pad[2 * i];
    highs[d] = pad[2 * i + 1];
    const int64_t size = self.size(d) + lows[d] + highs[d];
    TORCH_CHECK(size >= 0, "The input size ", self.size(d), ", plus negative padding ", lows[d], " and ", highs[d],
                " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
  }
  std::string key;
  put(key, lows);
  put(key, highs);
  // CPU fills the border with fill_, which refuses a value the dtype cannot hold.
  OpCall call{"aten::constant_pad_nd", std::move(key), {self},
              {{type, checked_cast_scalar(value, self.scalar_type())}}};
  at::Tensor padded = run_op(call, one_result([lows, highs](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                             const std::vector<hlo::Value>& s) {
                                return ops::lower_constant_pad(b, t[0], s[0], lows, highs);
                              }))
                          .at(0);
  return in_memory_format_of(padded, self);  // CPU keeps a channels_last input's format
}

// ---- reflection / replication padding -------------------------------------------

using Pads = std::vector<std::pair<int64_t, int64_t>>;

// PyTorch lists padding innermost dimension first: (left, right, top, bottom, ...).
Pads pads_of(at::IntArrayRef padding) {
  Pads pads;
  for (size_t i = padding.size() / 2; i-- > 0;) pads.emplace_back(padding[2 * i], padding[2 * i + 1]);
  return pads;
}

std::vector<int64_t> padded_shape(const at::Tensor& self, const Pads& pads) {
  std::vector<int64_t> shape = self.sizes().vec();
  const size_t first = shape.size() - pads.size();
  for (size_t i = 0; i < pads.size(); ++i) shape[first + i] += pads[i].first + pads[i].second;
  return shape;
}

// CPU's checks of a D-dimensional index pad of `self`.
Pads check_index_pad(const at::Tensor& self, at::IntArrayRef padding, int64_t D, ops::PadMode mode) {
  TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * D, "padding size is expected to be ", 2 * D,
              ", but got: ", padding.size());
  const int64_t rank = self.dim();
  bool valid = rank == D + 1 || rank == D + 2;
  for (int64_t d = rank == D + 2 ? 1 : 0; valid && d < rank; ++d) valid = self.size(d) != 0;
  TORCH_CHECK(valid, "Expected ", D + 1, "D or ", D + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
              self.sizes());
  Pads pads = pads_of(padding);
  static const char* names[] = {"D", "H", "W"};
  for (int64_t i = 0; i < D; ++i) {
    const int64_t d = rank - D + i;
    const int64_t n = self.size(d);
    if (mode == ops::PadMode::kReflect) {
      TORCH_CHECK(pads[i].first < n && pads[i].second < n,
                  "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (",
                  pads[i].first, ", ", pads[i].second, ") at dimension ", d, " of input ", self.sizes());
    }
  }
  // As CPU: the output is refused only when none of its padded dimensions
  // is at least 1, so negative padding may empty some of them.
  std::string inputs, outputs;
  bool any_nonempty = false;
  for (int64_t i = 0; i < D; ++i) {
    const int64_t n = self.size(rank - D + i);
    const int64_t out = n + pads[i].first + pads[i].second;
    any_nonempty |= out >= 1;
    const char* name = names[3 - D + i];
    inputs += std::string(i ? ", " : "") + name + ": " + std::to_string(n);
    outputs += std::string(i ? " " : "") + name + ": " + std::to_string(out);
  }
  TORCH_CHECK(any_nonempty, "input (", inputs, ") is too small. Calculated output ", outputs);
  for (int64_t i = 0; i < D; ++i) {
    const int64_t out = self.size(rank - D + i) + pads[i].first + pads[i].second;
    TORCH_CHECK(out >= 0, "Trying to create tensor with negative dimension ", out, ": ",
                c10::IntArrayRef(padded_shape(self, pads)));
  }
  return pads;
}

std::string pad_key(ops::PadMode mode, const Pads& pads) {
  std::string key(1, static_cast<char>(mode));
  for (const auto& [l, h] : pads) {
    put(key, l);
    put(key, h);
  }
  return key;
}

const char* pad_name(ops::PadMode mode, int64_t D, bool backward) {
  static const char* names[2][2][3] = {
      {{"aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d"},
       {"aten::reflection_pad1d_backward", "aten::reflection_pad2d_backward", "aten::reflection_pad3d_backward"}},
      {{"aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"},
       {"aten::replication_pad1d_backward", "aten::replication_pad2d_backward", "aten::replication_pad3d_backward"}}};
  return names[mode == ops::PadMode::kReflect ? 0 : 1][backward ? 1 : 0][D - 1];
}

template <int64_t D, ops::PadMode M>
at::Tensor index_pad(const at::Tensor& self, c10::SymIntArrayRef padding_sym) {
  std::vector<int64_t> padding;
  for (const auto& p : padding_sym) padding.push_back(p.guard_int(__FILE__, __LINE__));
  Pads pads = check_index_pad(self, padding, D, M);
  to_element_type(self.scalar_type(), pad_name(M, D, false));
  const auto shape = padded_shape(self, pads);
  if (c10::multiply_integers(shape) == 0) return at::empty(shape, self.options());
  at::Tensor padded =
      run_op(OpCall{pad_name(M, D, false), pad_key(M, pads), {self}, {}},
             one_result([pads](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
               return ops::lower_index_pad(b, t[0], pads, M);
             }))
          .at(0);
  return in_memory_format_of(padded, self);  // CPU keeps a channels_last input's format
}

template <int64_t D, ops::PadMode M>
at::Tensor& index_pad_out(const at::Tensor& self, c10::SymIntArrayRef padding, at::Tensor& out) {
  at::Tensor result = index_pad<D, M>(self, padding);
  check_exact(self.scalar_type(), out);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

template <int64_t D, ops::PadMode M>
at::Tensor index_pad_backward(const at::Tensor& grad, const at::Tensor& self, c10::SymIntArrayRef padding_sym) {
  std::vector<int64_t> padding;
  for (const auto& p : padding_sym) padding.push_back(p.guard_int(__FILE__, __LINE__));
  Pads pads = check_index_pad(self, padding, D, M);
  const auto expected = padded_shape(self, pads);
  TORCH_CHECK(grad.sizes() == c10::IntArrayRef(expected), pad_name(M, D, true), ": grad_output size ", grad.sizes(),
              " does not match the padded input size ", c10::IntArrayRef(expected));
  to_element_type(grad.scalar_type(), pad_name(M, D, true));
  if (self.numel() == 0) return at::empty(self.sizes(), grad.options());
  if (grad.numel() == 0) return at::zeros(self.sizes(), grad.options());  // every input element was cut off
  std::string key = pad_key(M, pads);
  const std::vector<int64_t> input_dims = self.sizes().vec();
  put(key, input_dims);
  return run_op(OpCall{pad_name(M, D, true), std::move(key), {grad}, {}},
                one_result([pads, input_dims](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                              const std::vector<hlo::Value>&) {
                  return ops::lower_index_pad_backward(b, t[0], input_dims, pads, M);
                }))
      .at(0);
}

template <int64_t D, ops::PadMode M>
at::Tensor& index_pad_backward_out(const at::Tensor& grad, const at::Tensor& self, c10::SymIntArrayRef padding,
                                   at::Tensor& grad_input) {
  at::Tensor result = index_pad_backward<D, M>(grad, self, padding);
  at::native::resize_output(grad_input, result.sizes());
  grad_input.copy_(result);
  return grad_input;
}

// ---- linalg_cross -----------------------------------------------------------------

std::pair<OpCall, int64_t> cross_call(const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(d), " and ", other.size(d));
  at::infer_size(self.sizes(), other.sizes());
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", other.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"cross\" not implemented for 'Bool'");
  to_element_type(self.scalar_type(), "aten::linalg_cross");
  std::string key;
  put(key, d);
  return {OpCall{"aten::linalg_cross", std::move(key), {self, other}, {}}, d};
}

LoweringBody cross_body(int64_t d, ElementType out) {
  return one_result([d, out](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return ops::lower_cross(b, t[0], t[1], d, out);
  });
}

at::Tensor linalg_cross(const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  auto [call, d] = cross_call(self, other, dim);
  return run_op(call, cross_body(d, to_element_type(self.scalar_type()))).at(0);
}

at::Tensor& linalg_cross_out(const at::Tensor& self, const at::Tensor& other, int64_t dim, at::Tensor& out) {
  auto [call, d] = cross_call(self, other, dim);
  check_exact(self.scalar_type(), out);
  at::native::resize_output(out, at::infer_size(self.sizes(), other.sizes()));
  run_op_into(call, cross_body(d, to_element_type(self.scalar_type())), out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("triu", triu);
  m.impl("triu_", triu_);
  m.impl("triu.out", triu_out);
  m.impl("tril", tril);
  m.impl("tril_", tril_);
  m.impl("tril.out", tril_out);
  m.impl("flip", flip);
  m.impl("roll", roll);
  m.impl("repeat", repeat);
  m.impl("repeat_interleave.Tensor", repeat_interleave_tensor);
  m.impl("constant_pad_nd", constant_pad_nd);
  using ops::PadMode;
  m.impl("reflection_pad1d", index_pad<1, PadMode::kReflect>);
  m.impl("reflection_pad2d", index_pad<2, PadMode::kReflect>);
  m.impl("reflection_pad3d", index_pad<3, PadMode::kReflect>);
  m.impl("replication_pad1d", index_pad<1, PadMode::kReplicate>);
  m.impl("replication_pad2d", index_pad<2, PadMode::kReplicate>);
  m.impl("replication_pad3d", index_pad<3, PadMode::kReplicate>);
  m.impl("reflection_pad1d.out", index_pad_out<1, PadMode::kReflect>);
  m.impl("reflection_pad2d.out", index_pad_out<2, PadMode::kReflect>);
  m.impl("reflection_pad3d.out", index_pad_out<3, PadMode::kReflect>);
  m.impl("replication_pad1d.out", index_pad_out<1, PadMode::kReplicate>);
  m.impl("replication_pad2d.out", index_pad_out<2, PadMode::kReplicate>);
  m.impl("replication_pad3d.out", index_pad_out<3, PadMode::kReplicate>);
  m.impl("reflection_pad1d_backward", index_pad_backward<1, PadMode::kReflect>);
  m.impl("reflection_pad2d_backward", index_pad_backward<2, PadMode::kReflect>);
  m.impl("reflection_pad3d_backward", index_pad_backward<3, PadMode::kReflect>);
  m.impl("replication_pad1d_backward", index_pad_backward<1, PadMode::kReplicate>);
  m.impl("replication_pad2d_backward", index_pad_backward<2, PadMode::kReplicate>);
  m.impl("replication_pad3d_backward", index_pad_backward<3, PadMode::kReplicate>);
  m.impl("reflection_pad1d_backward.grad_input", index_pad_backward_out<1, PadMode::kReflect>);
  m.impl("reflection_pad2d_backward.grad_input", index_pad_backward_out<2, PadMode::kReflect>);
  m.impl("reflection_pad3d_backward.grad_input", index_pad_backward_out<3, PadMode::kReflect>);
  m.impl("replication_pad1d_backward.grad_input", index_pad_backward_out<1, PadMode::kReplicate>);
  m.impl("replication_pad2d_backward.grad_input", index_pad_backward_out<2, PadMode::kReplicate>);
  m.impl("replication_pad3d_backward.grad_input", index_pad_backward_out<3, PadMode::kReplicate>);
  m.impl("linalg_cross", linalg_cross);
  m.impl("linalg_cross.out", linalg_cross_out);
}

}  // namespace torch_tpu::aten
