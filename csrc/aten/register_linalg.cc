// ATen glue for the matrix products: dot, vdot, mv, mm, bmm and the fused
// addmv, addmm, baddbmm (functional, in-place and out= forms). Shape and
// dtype checks raise what CPU raises; everything else is one lowering in
// csrc/ops/linalg/matmul.cc. matmul, linear, einsum and friends are
// composite in ATen and reach these ops.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/lazy_bits.h"
#include "aten/matmul_precision.h"
#include "aten/op_runner.h"
#include "ops/elementwise/unary.h"
#include "ops/linalg/matmul.h"

namespace torch_tpu::aten {

namespace {

using ops::Product;

bool scalar_is(const c10::Scalar& s, double v) {
  if (s.isComplex()) return s.toComplexDouble() == c10::complex<double>(v, 0);
  if (s.isBoolean()) return s.toBool() == (v != 0);
  if (s.isIntegral(false)) return s.toLong() == static_cast<int64_t>(v) && v == static_cast<int64_t>(v);
  return s.toDouble() == v;
}

// The element type of a product's operands; bool has no products (CPU
// raises NotImplementedError too).
ElementType product_type(const at::Tensor& t, const char* kernel, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() != c10::ScalarType::Bool, "\"", kernel,
                              "\" not implemented for 'Bool'");
  return to_element_type(t.scalar_type(), op);
}

// beta * self + alpha * product, or the bare product (no self). beta = 0
// drops self from the program; beta = 1 and alpha = 1 are baked in, any
// other value is a runtime scalar so changing it never recompiles.
struct ProductCall {
  OpCall call;
  LoweringBody body;
};

// The operands are borrowed (every caller passes its own arguments and runs
// the call at once), or resolved: PyTorch lets lazily conjugated and negated
// views through to the products (x.mH @ y).
ProductCall product_call(const char* name, Product kind, const at::Tensor& lhs, const at::Tensor& rhs) {
  std::string attributes(1, static_cast<char>(kind));
  const hlo::Precision f32 = keyed_float32_precision(attributes, lhs.scalar_type());
  return {OpCall{name, std::move(attributes), {operand_without_lazy_bits(lhs), operand_without_lazy_bits(rhs)}, {}},
          [kind, f32](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
            return std::vector<hlo::Value>{ops::lower_product(b, kind, t[0], t[1], f32)};
          }};
}

ProductCall add_product_call(const char* name, Product kind, const at::Tensor& self, const at::Tensor& lhs,
                             const at::Tensor& rhs, const c10::Scalar& beta, const c10::Scalar& alpha) {
  const ElementType acc = ops::accumulation_type(to_element_type(lhs.scalar_type(), name));
  const bool beta_zero = scalar_is(beta, 0);
  const bool has_beta = !beta_zero && !scalar_is(beta, 1);
  const bool has_alpha = !scalar_is(alpha, 1);
  ProductCall p{OpCall{name, std::string(1, static_cast<char>(kind)), {}, {}}, {}};
  p.call.attributes.push_back(beta_zero ? '0' : has_beta ? 'b' : '1');
  p.call.attributes.push_back(has_alpha ? 'a' : '1');
  const hlo::Precision f32 = keyed_float32_precision(p.call.attributes, lhs.scalar_type());
  if (!beta_zero) p.call.tensors.push_back(operand_without_lazy_bits(self));
  p.call.tensors.push_back(operand_without_lazy_bits(lhs));
  p.call.tensors.push_back(operand_without_lazy_bits(rhs));
  if (has_beta) p.call.scalars.push_back({acc, beta});
  if (has_alpha) p.call.scalars.push_back({acc, alpha});
  p.body = [kind, beta_zero, has_beta, has_alpha, f32](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                       const std::vector<hlo::Value>& s) {
    const size_t first = beta_zero ? 0 : 1;
    std::optional<hlo::Value> self_value, beta_value, alpha_value;
    if (!beta_zero) self_value = t[0];
    if (has_beta) beta_value = s[0];
    if (has_alpha) alpha_value = s[has_beta ? 1 : 0];
    return std::vector<hlo::Value>{
        ops::lower_add_product(b, kind, self_value, t[first], t[first + 1], beta_value, alpha_value, f32)};
  };
  return p;
}

at::Tensor run(const ProductCall& p) { return run_op(p.call, p.body).at(0); }

at::Tensor& run_into(const ProductCall& p, at::Tensor& out, c10::IntArrayRef shape, c10::ScalarType dtype) {
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ", c10::scalarTypeToTypeMeta(dtype),
              ", but got ", out.dtype(), " instead");
  at::native::resize_output(out, shape);
  if (out.is_conj() || out.is_neg()) {
    // These ops skip ATen's conjugate fallback (CPU's BLAS reads the bits
    // itself): a lazily conjugated / negated out takes the value through
    // copy_, which writes its storage through the bit.
    out.copy_(run(p));
    return out;
  }
  run_op_into(p.call, p.body, out);
  return out;
}

void check_inplace(const at::Tensor& self, c10::IntArrayRef shape) {
  TORCH_CHECK(self.sizes() == shape, "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", shape, " should match");
}

// self of an add-product must expand to the product's shape.
void check_expands(const at::Tensor& self, c10::IntArrayRef shape) {
  TORCH_CHECK(self.dim() <= static_cast<int64_t>(shape.size()), "expand(", self.toString(), "{", self.sizes(),
              "}, size=", shape, "): the number of sizes provided (", shape.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  at::inferExpandGeometry_dimvector(self.sizes(), self.strides(), shape);
}

// ---- mm / addmm ----------------------------------------------------------

// `add`: addmm's wording of the rank errors.
std::vector<int64_t> check_mm(const at::Tensor& m1, const at::Tensor& m2, const char* name, bool add) {
  if (add) {
    TORCH_CHECK(m1.dim() == 2, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
    TORCH_CHECK(m2.dim() == 2, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  } else {
    TORCH_CHECK(m1.dim() == 2, "self must be a matrix");
    TORCH_CHECK(m2.dim() == 2, "mat2 must be a matrix");
  }
  TORCH_CHECK(m1.size(1) == m2.size(0), "mat1 and mat2 shapes cannot be multiplied (", m1.size(0), "x",
              m1.size(1), " and ", m2.size(0), "x", m2.size(1), ")");
  TORCH_CHECK(m1.scalar_type() == m2.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              m1.dtype(), " != ", m2.dtype());
  product_type(m1, "addmm_impl_cpu_", name);
  return {m1.size(0), m2.size(1)};
}

void check_add_dtype(const at::Tensor& self, const at::Tensor& m2) {
  TORCH_CHECK(self.scalar_type() == m2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", m2.scalar_type());
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  check_mm(self, mat2, "aten::mm", false);
  return run(product_call("aten::mm", Product::kMm, self, mat2));
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  auto shape = check_mm(self, mat2, "aten::mm", false);
  return run_into(product_call("aten::mm", Product::kMm, self, mat2), out, shape, self.scalar_type());
}

std::vector<int64_t> check_addmm(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2) {
  auto shape = check_mm(m1, m2, "aten::addmm", true);
  check_add_dtype(self, m2);
  check_expands(self, shape);
  return shape;
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  check_addmm(self, m1, m2);
  return run(add_product_call("aten::addmm", Product::kMm, self, m1, m2, beta, alpha));
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  auto shape = check_addmm(self, m1, m2);
  return run_into(add_product_call("aten::addmm", Product::kMm, self, m1, m2, beta, alpha), out, shape,
                  self.scalar_type());
}

at::Tensor& addmm_(at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const c10::Scalar& beta,
                   const c10::Scalar& alpha) {
  auto shape = check_addmm(self, m1, m2);
  check_inplace(self, shape);
  return run_into(add_product_call("aten::addmm", Product::kMm, self, m1, m2, beta, alpha), self, shape,
                  self.scalar_type());
}

// ---- bmm / baddbmm -------------------------------------------------------

std::vector<int64_t> check_bmm(const at::Tensor& b1, const at::Tensor& b2, const char* kernel) {
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b2.size(0) == b1.size(0) && b2.size(1) == b1.size(2),
              "Expected size for first two dimensions of batch2 tensor to be: [", b1.size(0), ", ", b1.size(2),
              "] but got: [", b2.size(0), ", ", b2.size(1), "].");
  TORCH_CHECK(b1.scalar_type() == b2.scalar_type(), "expected scalar type ", b1.scalar_type(),
              " but found ", b2.scalar_type());
  product_type(b1, kernel, "aten::bmm");
  return {b1.size(0), b1.size(1), b2.size(2)};
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  check_bmm(self, mat2, "bmm");
  return run(product_call("aten::bmm", Product::kBmm, self, mat2));
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  auto shape = check_bmm(self, mat2, "bmm");
  return run_into(product_call("aten::bmm", Product::kBmm, self, mat2), out, shape, self.scalar_type());
}

std::vector<int64_t> check_baddbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2) {
  auto shape = check_bmm(b1, b2, "baddbmm");
  TORCH_CHECK(self.scalar_type() == b1.scalar_type() && self.scalar_type() == b2.scalar_type(),
              "Input dtypes must be the same, got: input ", self.dtype(), ", batch1: ", b1.dtype(),
              ", batch2: ", b2.dtype());
  check_expands(self, shape);
  return shape;
}

at::Tensor baddbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                   const c10::Scalar& alpha) {
  check_baddbmm(self, b1, b2);
  return run(add_product_call("aten::baddbmm", Product::kBmm, self, b1, b2, beta, alpha));
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                        const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  auto shape = check_baddbmm(self, b1, b2);
  return run_into(add_product_call("aten::baddbmm", Product::kBmm, self, b1, b2, beta, alpha), out, shape,
                  self.scalar_type());
}

at::Tensor& baddbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                     const c10::Scalar& alpha) {
  auto shape = check_baddbmm(self, b1, b2);
  check_inplace(self, shape);
  return run_into(add_product_call("aten::baddbmm", Product::kBmm, self, b1, b2, beta, alpha), self, shape,
                  self.scalar_type());
}

// ---- mv / addmv ----------------------------------------------------------

std::vector<int64_t> check_mv(const at::Tensor* self, const at::Tensor& mat, const at::Tensor& vec) {
  const int64_t self_dim = self ? self->dim() : 1;
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1 && self_dim <= 1, "vector + matrix @ vector expected, got ",
              self_dim, ", ", mat.dim(), ", ", vec.dim());
  const int64_t self_numel = self ? self->numel() : mat.size(0);
  TORCH_CHECK(mat.size(1) == vec.size(0) && (mat.size(0) == self_numel || self_numel == 1),
              "size mismatch, got input (", self_numel, "), mat (", mat.size(0), "x",
              mat.size(1), "), vec (", vec.size(0), ")");
  const at::Tensor& first = self ? *self : vec;
  TORCH_CHECK(mat.scalar_type() == vec.scalar_type() && first.scalar_type() == mat.scalar_type(),
              "addmv input tensors must have the same dtype, but got ", first.scalar_type(), ", ",
              mat.scalar_type(), ", and ", vec.scalar_type());
  product_type(mat, "addmv_impl_cpu", "aten::addmv");
  return {mat.size(0)};
}

at::Tensor mv(const at::Tensor& self, const at::Tensor& vec) {
  check_mv(nullptr, self, vec);
  return run(product_call("aten::mv", Product::kMv, self, vec));
}

at::Tensor& mv_out(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
  auto shape = check_mv(nullptr, self, vec);
  return run_into(product_call("aten::mv", Product::kMv, self, vec), out, shape, self.scalar_type());
}

at::Tensor addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  check_mv(&self, mat, vec);
  return run(add_product_call("aten::addmv", Product::kMv, self, mat, vec, beta, alpha));
}

at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  auto shape = check_mv(&self, mat, vec);
  return run_into(add_product_call("aten::addmv", Product::kMv, self, mat, vec, beta, alpha), out, shape,
                  self.scalar_type());
}

at::Tensor& addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                   const c10::Scalar& alpha) {
  auto shape = check_mv(&self, mat, vec);
  check_inplace(self, shape);
  return run_into(add_product_call("aten::addmv", Product::kMv, self, mat, vec, beta, alpha), self, shape,
                  self.scalar_type());
}

// ---- dot / vdot ----------------------------------------------------------

void check_dot(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
              "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
              b.numel(), " elements respectively");
  product_type(a, "dot", "aten::dot");
}

at::Tensor dot(const at::Tensor& self, const at::Tensor& other) {
  check_dot(self, other);
  return run(product_call("aten::dot", Product::kDot, self, other));
}

// sum(conj(self) * other); for real types the same as dot.
at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) {
  check_dot(self, other);
  if (!self.is_complex()) return run(product_call("aten::vdot", Product::kDot, self, other));
  std::string attributes;
  const hlo::Precision f32 = keyed_float32_precision(attributes, self.scalar_type());
  OpCall call{"aten::vdot", std::move(attributes), {operand_without_lazy_bits(self), operand_without_lazy_bits(other)},
              {}};
  return run_op(call, [f32](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_product(b, Product::kDot, ops::conjugate(b, t[0]), t[1], f32)};
  }).at(0);
}

// ---- _int_mm --------------------------------------------------------------

// torch._int_mm (torchao's int8 matmuls): CPU's checks, in its order and
// words, naming this op.
void check_int_mm(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2, "_int_mm: Expected self to be of dimension 2 but got ", self.dim());
  TORCH_CHECK(mat2.dim() == 2, "_int_mm: Expected mat2 to be of dimension 2 but got ", mat2.dim());
  TORCH_CHECK(self.size(1) == mat2.size(0), "_int_mm: self.size(1) needs to match mat2.size(0) but got ",
              self.size(1), " and ", mat2.size(0));
  TORCH_CHECK(self.scalar_type() == at::kChar || self.scalar_type() == at::kByte,
              "_int_mm: Expected self dtype to be int8 or uint8 but got ", self.dtype());
  TORCH_CHECK(mat2.scalar_type() == at::kChar, "_int_mm: Expected mat2 dtype to be of type int8 but got ",
              mat2.dtype());
}

OpCall int_mm_call(const at::Tensor& self, const at::Tensor& mat2) {
  return {"aten::_int_mm", "", {operand_without_lazy_bits(self), operand_without_lazy_bits(mat2)}, {}};
}

std::vector<hlo::Value> int_mm_body(hlo::Builder& b, const std::vector<hlo::Value>& t,
                                    const std::vector<hlo::Value>&) {
  return {ops::lower_int_mm(b, t[0], t[1])};
}

at::Tensor int_mm(const at::Tensor& self, const at::Tensor& mat2) {
  check_int_mm(self, mat2);
  return run_op(int_mm_call(self, mat2), int_mm_body).at(0);
}

at::Tensor& int_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& result) {
  check_int_mm(self, mat2);
  TORCH_CHECK(result.scalar_type() == at::kInt, "_int_mm: Expected result dtype to be of type kInt but got ",
              result.dtype());
  TORCH_CHECK(result.size(0) == self.size(0), "_int_mm: Expected result.size(0) to be ",
              self.size(0), " but got ", result.size(0));
  TORCH_CHECK(result.size(1) == mat2.size(1), "_int_mm: Expected result.size(1) to be ",
              mat2.size(1), " but got ", result.size(1));
  at::native::resize_output(result, {self.size(0), mat2.size(1)});
  run_op_into(int_mm_call(self, mat2), int_mm_body, result);
  return result;
}

// ---- _weight_int8pack_mm ---------------------------------------------------

// torchao's int8 weight-only linear (CPU and MPS have this kernel): CPU's
// checks and words, naming this op. The weight need not be contiguous here.
at::Tensor weight_int8pack_mm(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scales) {
  const char* op = "_weight_int8pack_mm";
  TORCH_CHECK(self.dim() == 2, op, ": expect A to be 2D tensor.");
  const auto a = self.scalar_type();
  TORCH_CHECK(a == at::kFloat || a == at::kBFloat16 || a == at::kHalf, op,
              ": expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(mat2.scalar_type() == at::kChar, op, ": expect B to be int8 tensor.");
  TORCH_CHECK(mat2.dim() == 2 && mat2.size(1) == self.size(1), op, ": expect B to be 2D tensor with ", self.size(1),
              " columns, got ", mat2.sizes());
  TORCH_CHECK(scales.dim() == 1 && scales.size(0) == mat2.size(0), op,
              ": expect scales to be 1d tensor with size ", mat2.size(0));
  TORCH_CHECK(scales.scalar_type() == a, op, ": expect scales to have A's dtype ", self.dtype(), ", got ",
              scales.dtype());
  std::string attributes;
  const hlo::Precision f32 = keyed_float32_precision(attributes, a);
  OpCall call{"aten::_weight_int8pack_mm", std::move(attributes),
              {operand_without_lazy_bits(self), operand_without_lazy_bits(mat2), scales}, {}};
  return run_op(call, [f32](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_weight_int8_mm(b, t[0], t[1], t[2], f32)};
  }).at(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm", mm);
  m.impl("mm.out", mm_out);
  m.impl("addmm", addmm);
  m.impl("addmm_", addmm_);
  m.impl("addmm.out", addmm_out);
  m.impl("bmm", bmm);
  m.impl("bmm.out", bmm_out);
  m.impl("baddbmm", baddbmm);
  m.impl("baddbmm_", baddbmm_);
  m.impl("baddbmm.out", baddbmm_out);
  m.impl("mv", mv);
  m.impl("mv.out", mv_out);
  m.impl("addmv", addmv);
  m.impl("addmv_", addmv_);
  m.impl("addmv.out", addmv_out);
  m.impl("dot", dot);
  m.impl("vdot", vdot);
  m.impl("_int_mm", int_mm);
  m.impl("_int_mm.out", int_mm_out);
  m.impl("_weight_int8pack_mm", weight_int8pack_mm);
}

}  // namespace torch_tpu::aten
