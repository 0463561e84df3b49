// Linear algebra: dot_general, convolution, cholesky, triangular_solve, fft.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kDefault: return "DEFAULT";
    case Precision::kHigh: return "HIGH";
    case Precision::kHighest: return "HIGHEST";
  }
  return "DEFAULT";
}

// precision_config is only printed when it asks for more than the default.
void append_precision(text::AttrList& attrs, Precision p) {
  if (p == Precision::kDefault) return;
  std::string& out = attrs.key("precision_config");
  for (int i = 0; i < 2; ++i) {
    out += i ? ", " : "[";
    out += "#stablehlo<precision ";
    out += precision_name(p);
    out += '>';
  }
  out += ']';
}

void append_dot_field(std::string& out, std::string_view name,
                      const std::vector<int64_t>& dims) {
  if (dims.empty()) return;
  if (out.back() != '<') out += ", ";
  out += name;
  out += " = ";
  text::append_int_list(out, dims);
}

void check_same_dtype(std::string_view op, const Value& lhs, const Value& rhs) {
  if (lhs.dtype() == rhs.dtype()) return;
  check::fail(op, "operand element types differ: " + lhs.type().to_string() +
                      " vs " + rhs.type().to_string());
}

// One side's batch + contracting dims: in range and never both.
void check_dot_side(std::string_view op, std::string_view side,
                    const std::vector<int64_t>& batch,
                    const std::vector<int64_t>& contracting, int64_t rank) {
  std::vector<int64_t> all = batch;
  all.insert(all.end(), contracting.begin(), contracting.end());
  check::unique_dims(op, std::string(side) + " batching + contracting dims",
                     all, rank);
}

// Letters of one conv dimension-number group: `first`/`second` at their
// dims, spatial dim i printed as i.
void append_conv_layout(std::string_view op, std::string& out,
                        std::string_view what, int64_t first_dim, char first,
                        int64_t second_dim, char second,
                        const std::vector<int64_t>& spatial) {
  std::vector<int64_t> all = {first_dim, second_dim};
  all.insert(all.end(), spatial.begin(), spatial.end());
  const auto rank = static_cast<int64_t>(all.size());
  check::unique_dims(op, what, all, rank);
  std::vector<int64_t> spatial_index_at(static_cast<size_t>(rank), -1);
  for (size_t i = 0; i < spatial.size(); ++i) {
    spatial_index_at[spatial[i]] = static_cast<int64_t>(i);
  }
  out += '[';
  for (int64_t d = 0; d < rank; ++d) {
    if (d) out += ", ";
    if (d == first_dim) {
      out += first;
    } else if (d == second_dim) {
      out += second;
    } else {
      text::append_int(out, spatial_index_at[d]);
    }
  }
  out += ']';
}

std::vector<int64_t> spatial_or_default(std::string_view op,
                                        std::string_view what,
                                        const std::vector<int64_t>& v,
                                        size_t n) {
  if (v.empty()) return std::vector<int64_t>(n, 1);
  check::count(op, what, v.size(), n);
  check::all_positive(op, what, v);
  return v;
}

// Leading (batch) dims of a matrix operand: rank >= 2, square if `square`.
void check_matrix(std::string_view op, std::string_view what, const Value& a,
                  bool square) {
  if (a.rank() < 2 ||
      (square && a.dims()[a.rank() - 1] != a.dims()[a.rank() - 2])) {
    check::fail(op, std::string(what) + " must be a " +
                        (square ? "square " : "") +
                        "matrix (batch), got " + a.type().to_string());
  }
}

}  // namespace

Value Builder::dot_general(const Value& lhs, const Value& rhs,
                           const DotDims& dims, Precision precision,
                           std::optional<ElementType> result_dtype) {
  constexpr std::string_view op = "stablehlo.dot_general";
  check_operand(op, lhs);
  check_operand(op, rhs);
  check::dtype_in(op, "operand", lhs.dtype(), check::kNumeric);
  check_same_dtype(op, lhs, rhs);
  check::count(op, "rhs_batching_dimensions", dims.rhs_batch_dims.size(),
               dims.lhs_batch_dims.size());
  check::count(op, "rhs_contracting_dimensions",
               dims.rhs_contracting_dims.size(),
               dims.lhs_contracting_dims.size());
  check_dot_side(op, "lhs", dims.lhs_batch_dims, dims.lhs_contracting_dims,
                 lhs.rank());
  check_dot_side(op, "rhs", dims.rhs_batch_dims, dims.rhs_contracting_dims,
                 rhs.rank());
  auto check_pairs = [&](const std::vector<int64_t>& l,
                         const std::vector<int64_t>& r, const char* what) {
    for (size_t i = 0; i < l.size(); ++i) {
      if (lhs.dims()[l[i]] != rhs.dims()[r[i]]) {
        check::fail(op, std::string(what) + " dimension sizes differ: lhs " +
                            lhs.type().to_string() + " dim " +
                            std::to_string(l[i]) + " vs rhs " +
                            rhs.type().to_string() + " dim " +
                            std::to_string(r[i]));
      }
    }
  };
  check_pairs(dims.lhs_batch_dims, dims.rhs_batch_dims, "batching");
  check_pairs(dims.lhs_contracting_dims, dims.rhs_contracting_dims,
              "contracting");

  TensorType result(result_dtype.value_or(lhs.dtype()), {});
  for (int64_t d : dims.lhs_batch_dims) result.dims.push_back(lhs.dims()[d]);
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!check::contains(dims.lhs_batch_dims, d) &&
        !check::contains(dims.lhs_contracting_dims, d)) {
      result.dims.push_back(lhs.dims()[d]);
    }
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!check::contains(dims.rhs_batch_dims, d) &&
        !check::contains(dims.rhs_contracting_dims, d)) {
      result.dims.push_back(rhs.dims()[d]);
    }
  }

  text::AttrList attrs;
  std::string& numbers = attrs.key("dot_dimension_numbers");
  numbers += "#stablehlo.dot<";
  append_dot_field(numbers, "lhs_batching_dimensions", dims.lhs_batch_dims);
  append_dot_field(numbers, "rhs_batching_dimensions", dims.rhs_batch_dims);
  append_dot_field(numbers, "lhs_contracting_dimensions",
                   dims.lhs_contracting_dims);
  append_dot_field(numbers, "rhs_contracting_dimensions",
                   dims.rhs_contracting_dims);
  numbers += '>';
  append_precision(attrs, precision);
  return append_op1(op, {lhs, rhs}, result, attrs.str());
}

Value Builder::convolution(const Value& lhs, const Value& rhs,
                           const ConvOptions& options) {
  constexpr std::string_view op = "stablehlo.convolution";
  check_operand(op, lhs);
  check_operand(op, rhs);
  check::dtype_in(op, "operand", lhs.dtype(), check::kNumeric);
  check_same_dtype(op, lhs, rhs);
  const ConvDims& cd = options.dims;
  const size_t n = cd.input_spatial_dims.size();
  check::count(op, "kernel spatial dims", cd.kernel_spatial_dims.size(), n);
  check::count(op, "output spatial dims", cd.output_spatial_dims.size(), n);
  if (lhs.rank() != static_cast<int64_t>(n + 2) ||
      rhs.rank() != static_cast<int64_t>(n + 2)) {
    check::fail(op, "with " + std::to_string(n) +
                        " spatial dims the operands need rank " +
                        std::to_string(n + 2) + ", got " +
                        lhs.type().to_string() + " and " +
                        rhs.type().to_string());
  }
  std::string layout = "#stablehlo.conv<";
  append_conv_layout(op, layout, "input dimension numbers", cd.input_batch_dim,
                     'b', cd.input_feature_dim, 'f', cd.input_spatial_dims);
  layout += 'x';
  append_conv_layout(op, layout, "kernel dimension numbers",
                     cd.kernel_output_feature_dim, 'o',
                     cd.kernel_input_feature_dim, 'i', cd.kernel_spatial_dims);
  layout += "->";
  append_conv_layout(op, layout, "output dimension numbers",
                     cd.output_batch_dim, 'b', cd.output_feature_dim, 'f',
                     cd.output_spatial_dims);
  layout += '>';

  const std::vector<int64_t> strides =
      spatial_or_default(op, "window_strides", options.window_strides, n);
  const std::vector<int64_t> lhs_dilation =
      spatial_or_default(op, "lhs_dilation", options.lhs_dilation, n);
  const std::vector<int64_t> rhs_dilation =
      spatial_or_default(op, "rhs_dilation", options.rhs_dilation, n);
  std::vector<std::pair<int64_t, int64_t>> padding = options.padding;
  if (padding.empty()) padding.resize(n, {0, 0});
  check::count(op, "padding", padding.size(), n);

  const int64_t groups = options.feature_group_count;
  const int64_t batch_groups = options.batch_group_count;
  if (groups < 1 || batch_groups < 1 || (groups > 1 && batch_groups > 1)) {
    check::fail(op, "feature_group_count and batch_group_count must be >= 1 "
                    "and not both > 1");
  }
  const int64_t batch = lhs.dims()[cd.input_batch_dim];
  const int64_t in_features = lhs.dims()[cd.input_feature_dim];
  const int64_t kernel_in = rhs.dims()[cd.kernel_input_feature_dim];
  const int64_t kernel_out = rhs.dims()[cd.kernel_output_feature_dim];
  if (in_features % groups != 0 || in_features / groups != kernel_in ||
      kernel_out % groups != 0) {
    check::fail(op, "input features (" + std::to_string(in_features) +
                        ") / feature_group_count (" + std::to_string(groups) +
                        ") must equal kernel input features (" +
                        std::to_string(kernel_in) +
                        "), and kernel output features (" +
                        std::to_string(kernel_out) + ") must divide by it");
  }
  if (batch % batch_groups != 0 || kernel_out % batch_groups != 0) {
    check::fail(op, "batch (" + std::to_string(batch) +
                        ") and kernel output features (" +
                        std::to_string(kernel_out) +
                        ") must divide by batch_group_count (" +
                        std::to_string(batch_groups) + ")");
  }

  TensorType result(options.result_dtype.value_or(lhs.dtype()),
                    std::vector<int64_t>(n + 2, 0));
  result.dims[cd.output_batch_dim] = batch / batch_groups;
  result.dims[cd.output_feature_dim] = kernel_out;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = lhs.dims()[cd.input_spatial_dims[i]];
    const int64_t k = rhs.dims()[cd.kernel_spatial_dims[i]];
    const int64_t dilated_in =
        in == 0 ? 0 : check::add(op, check::mul(op, in - 1, lhs_dilation[i]), 1);
    const int64_t padded = check::add(
        op, dilated_in, check::add(op, padding[i].first, padding[i].second));
    const int64_t window =
        k == 0 ? 0 : check::add(op, check::mul(op, k - 1, rhs_dilation[i]), 1);
    result.dims[cd.output_spatial_dims[i]] =
        padded < window ? 0 : (padded - window) / strides[i] + 1;
  }

  text::AttrList attrs;
  attrs.i64("batch_group_count", batch_groups)
      .raw("dimension_numbers", layout)
      .i64("feature_group_count", groups)
      .i64_array("lhs_dilation", lhs_dilation);
  // Zero spatial dims have no padding rows; the default is no padding.
  if (n > 0) text::append_pairs(attrs.key("padding"), padding);
  append_precision(attrs, options.precision);
  attrs.i64_array("rhs_dilation", rhs_dilation)
      .i64_array("window_strides", strides);
  return append_op1(op, {lhs, rhs}, result, attrs.str());
}

Value Builder::cholesky(const Value& a, bool lower) {
  constexpr std::string_view op = "stablehlo.cholesky";
  check_operand(op, a);
  check::dtype_in(op, "operand", a.dtype(), check::kFloatOrComplex);
  check_matrix(op, "operand", a, /*square=*/true);
  text::AttrList attrs;
  attrs.boolean("lower", lower);
  return append_op1(op, {a}, a.type(), attrs.str());
}

Value Builder::triangular_solve(const Value& a, const Value& b, bool left_side,
                                bool lower, bool unit_diagonal,
                                Transpose transpose_a) {
  constexpr std::string_view op = "stablehlo.triangular_solve";
  check_operand(op, a);
  check_operand(op, b);
  check::dtype_in(op, "operand", a.dtype(), check::kFloatOrComplex);
  check_same_dtype(op, a, b);
  check_matrix(op, "a", a, /*square=*/true);
  check_matrix(op, "b", b, /*square=*/false);
  const int64_t rank = a.rank();
  bool ok = b.rank() == rank;
  for (int64_t i = 0; ok && i < rank - 2; ++i) ok = a.dims()[i] == b.dims()[i];
  if (ok) {
    const int64_t shared = b.dims()[left_side ? rank - 2 : rank - 1];
    ok = shared == a.dims()[rank - 1];
  }
  if (!ok) {
    check::fail(op, "a " + a.type().to_string() + " and b " +
                        b.type().to_string() + " do not fit (left_side = " +
                        (left_side ? "true" : "false") + ")");
  }
  const char* transpose_name = transpose_a == Transpose::kTranspose ? "TRANSPOSE"
                               : transpose_a == Transpose::kAdjoint ? "ADJOINT"
                                                                    : "NO_TRANSPOSE";
  text::AttrList attrs;
  attrs.boolean("left_side", left_side)
      .boolean("lower", lower)
      .raw("transpose_a",
           std::string("#stablehlo<transpose ") + transpose_name + ">")
      .boolean("unit_diagonal", unit_diagonal);
  return append_op1(op, {a, b}, b.type(), attrs.str());
}

Value Builder::fft(const Value& x, FftType type,
                   std::vector<int64_t> fft_length) {
  constexpr std::string_view op = "stablehlo.fft";
  check_operand(op, x);
  const size_t n = fft_length.size();
  if (n < 1 || n > 3 || static_cast<size_t>(x.rank()) < n) {
    check::fail(op, "fft_length " + dims_to_string(fft_length) +
                        " must have 1 to 3 entries, at most the rank of " +
                        x.type().to_string());
  }
  check::all_positive(op, "fft_length", fft_length);
  TensorType result = x.type();
  std::vector<int64_t> expected_tail = fft_length;
  const char* type_name = "FFT";
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
      type_name = type == FftType::kFft ? "FFT" : "IFFT";
      check::dtype_in(op, "operand", x.dtype(), check::kComplex);
      break;
    case FftType::kRfft:
      type_name = "RFFT";
      if (x.dtype() != ElementType::kF32 && x.dtype() != ElementType::kF64) {
        check::fail(op, "RFFT needs f32 or f64, got " + x.type().to_string());
      }
      result.dtype = x.dtype() == ElementType::kF64 ? ElementType::kC128
                                                    : ElementType::kC64;
      result.dims.back() = fft_length.back() / 2 + 1;
      break;
    case FftType::kIrfft:
      type_name = "IRFFT";
      check::dtype_in(op, "operand", x.dtype(), check::kComplex);
      result.dtype = x.dtype() == ElementType::kC128 ? ElementType::kF64
                                                     : ElementType::kF32;
      expected_tail.back() = fft_length.back() / 2 + 1;
      result.dims.back() = fft_length.back();
      break;
  }
  const std::vector<int64_t> tail(x.dims().end() - n, x.dims().end());
  if (tail != expected_tail) {
    check::fail(op, std::string(type_name) + " with fft_length " +
                        dims_to_string(fft_length) +
                        " needs trailing dims " + dims_to_string(expected_tail) +
                        ", got " + x.type().to_string());
  }
  text::AttrList attrs;
  attrs.i64_array("fft_length", fft_length)
      .raw("fft_type", std::string("#stablehlo<fft_type ") + type_name + ">");
  return append_op1(op, {x}, result, attrs.str());
}

}  // namespace torch_tpu::hlo
