#include "hlo/checks.h"

#include <algorithm>

namespace torch_tpu::hlo::check {

void fail(std::string_view op, const std::string& problem) {
  std::string message(op);
  message += ": ";
  message += problem;
  throw HloError(message);
}

void op_name(std::string_view name) {
  auto symbol_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$';
  };
  bool ok = !name.empty() && name.find('.') != std::string_view::npos &&
            name.front() != '.' && name.back() != '.';
  for (char c : name) ok = ok && symbol_char(c);
  if (!ok) {
    throw HloError("invalid op name '" + std::string(name) +
                   "' (expected dialect.op_name)");
  }
}

unsigned dtype_class(ElementType t) {
  if (t == ElementType::kPred) return kBool;
  if (is_signed_integer(t)) return kSignedInt;
  if (is_unsigned(t)) return kUnsignedInt;
  if (is_floating(t)) return kFloat;
  if (is_complex(t)) return kComplex;
  return 0;
}

namespace {

std::string describe_classes(unsigned mask) {
  static constexpr struct {
    unsigned bit;
    const char* name;
  } kNames[] = {{kBool, "i1"},
                {kSignedInt, "signed integer"},
                {kUnsignedInt, "unsigned integer"},
                {kFloat, "floating-point"},
                {kComplex, "complex"}};
  std::string out;
  for (const auto& entry : kNames) {
    if (!(mask & entry.bit)) continue;
    if (!out.empty()) out += " or ";
    out += entry.name;
  }
  return out;
}

}  // namespace

void dtype_in(std::string_view op, std::string_view what, ElementType t,
              unsigned allowed) {
  if (dtype_class(t) & allowed) return;
  fail(op, std::string(what) + " element type " + std::string(mlir_name(t)) +
               " is not supported (expects " + describe_classes(allowed) + ")");
}

void valid_type(std::string_view op, const TensorType& t) {
  if (static_cast<unsigned>(t.dtype) >= kNumElementTypes) {
    fail(op, "invalid element type");
  }
  int64_t elements = 0;
  try {
    elements = t.num_elements();
  } catch (const HloError& e) {
    fail(op, e.what());
  }
  // XLA aborts the process (rather than failing the compile) on shapes whose
  // byte size overflows, so refuse anything beyond any real device's memory
  // here; the dims are capped too because XLA multiplies them even when one
  // is zero.
  constexpr int64_t kMaxSize = int64_t{1} << 53;
  bool too_big = elements > kMaxSize / static_cast<int64_t>(element_size(t.dtype));
  for (int64_t d : t.dims) too_big = too_big || d > kMaxSize;
  if (too_big) fail(op, "tensor type " + t.to_string() + " is too large");
}

void same_type(std::string_view op, const TensorType& a, const TensorType& b) {
  if (a == b) return;
  const char* what = a.dims != b.dims ? "shapes" : "element types";
  fail(op, std::string("operand ") + what + " differ: " + a.to_string() +
               " vs " + b.to_string());
}

void same_dims(std::string_view op, const TensorType& a, const TensorType& b) {
  if (a.dims == b.dims) return;
  fail(op, "operand shapes differ: " + a.to_string() + " vs " + b.to_string());
}

void scalar(std::string_view op, std::string_view what, const TensorType& t) {
  if (t.is_scalar()) return;
  fail(op, std::string(what) + " must be a 0-dim tensor, got " + t.to_string());
}

void count(std::string_view op, std::string_view what, size_t actual,
           size_t expected) {
  if (actual == expected) return;
  fail(op, std::string(what) + " has " + std::to_string(actual) +
               " entries, expected " + std::to_string(expected));
}

void dim_in_range(std::string_view op, std::string_view what, int64_t dim,
                  int64_t rank) {
  if (dim >= 0 && dim < rank) return;
  fail(op, std::string(what) + " " + std::to_string(dim) +
               " is out of range for rank " + std::to_string(rank));
}

void unique_dims(std::string_view op, std::string_view what,
                 const std::vector<int64_t>& dims, int64_t rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    dim_in_range(op, what, dims[i], rank);
    if (std::find(dims.begin(), dims.begin() + i, dims[i]) !=
        dims.begin() + i) {
      fail(op, std::string(what) + " " + dims_to_string(dims) +
                   " repeats dimension " + std::to_string(dims[i]));
    }
  }
}

void sorted(std::string_view op, std::string_view what,
            const std::vector<int64_t>& dims) {
  if (std::is_sorted(dims.begin(), dims.end())) return;
  fail(op, std::string(what) + " " + dims_to_string(dims) +
               " must be sorted ascending");
}

void all_positive(std::string_view op, std::string_view what,
                  const std::vector<int64_t>& v) {
  for (int64_t x : v) {
    if (x < 1) {
      fail(op, std::string(what) + " " + dims_to_string(v) +
                   " must all be >= 1");
    }
  }
}

int64_t add(std::string_view op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(op, "size arithmetic overflows");
  return r;
}

int64_t mul(std::string_view op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(op, "size arithmetic overflows");
  return r;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace torch_tpu::hlo::check
