#include "ops/linalg/matrix_util.h"

#include <algorithm>

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops::matrix {

std::vector<int64_t> batch_dims(const hlo::Value& x) { return {x.dims().begin(), x.dims().end() - 2}; }

hlo::Value transpose(hlo::Builder& b, const hlo::Value& x, bool conjugate) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d) perm.push_back(d);
  std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
  hlo::Value t = b.transpose(x, perm);
  return conjugate ? ops::conjugate(b, t) : t;
}

hlo::Value triangle_mask(hlo::Builder& b, const std::vector<int64_t>& shape, bool upper, int64_t k) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  hlo::TensorType t(ElementType::kS64, shape);
  hlo::Value diff = b.subtract(b.iota(t, rank - 1), b.iota(t, rank - 2));
  return b.compare(diff, b.constant_splat_int(k, t), upper ? "GE" : "LE");
}

hlo::Value keep_triangle(hlo::Builder& b, const hlo::Value& x, bool upper, int64_t k) {
  return b.select(triangle_mask(b, x.dims(), upper, k), x, b.constant_splat(0, x.type()));
}

hlo::Value identity(hlo::Builder& b, ElementType dtype, const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  hlo::TensorType t(ElementType::kS64, shape);
  hlo::TensorType out(dtype, shape);
  return b.select(b.compare(b.iota(t, rank - 1), b.iota(t, rank - 2), "EQ"), b.constant_splat(1, out),
                  b.constant_splat(0, out));
}

hlo::Value diagonal(hlo::Builder& b, const hlo::Value& x) {
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const int64_t k = std::min(rows, cols);
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  limits[x.rank() - 2] = k;
  limits[x.rank() - 1] = k;
  hlo::Value square = b.slice(x, starts, limits, strides);
  hlo::Value masked = b.select(b.compare(b.iota(hlo::TensorType(ElementType::kS64, square.dims()), x.rank() - 1),
                                         b.iota(hlo::TensorType(ElementType::kS64, square.dims()), x.rank() - 2),
                                         "EQ"),
                               square, b.constant_splat(0, square.type()));
  return reduce(b, masked, x.rank() - 1, &hlo::Builder::add, 0);
}

hlo::Value matmul(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  hlo::DotDims dims;
  const int64_t nb = x.rank() - 2;
  for (int64_t d = 0; d < nb; ++d) {
    dims.lhs_batch_dims.push_back(d);
    dims.rhs_batch_dims.push_back(d);
  }
  dims.lhs_contracting_dims = {nb + 1};
  dims.rhs_contracting_dims = {nb};
  return b.dot_general(x, y, dims, hlo::Precision::kHighest);
}

hlo::Value reduce(hlo::Builder& b, const hlo::Value& x, int64_t dim, Combine combine, double init) {
  const hlo::TensorType scalar = hlo::TensorType::scalar(x.dtype());
  return b.reduce({x}, {b.constant_splat(init, scalar)}, {dim},
                  [combine](hlo::Builder& r, const std::vector<hlo::Value>& args) {
                    return std::vector<hlo::Value>{(r.*combine)(args[0], args[1])};
                  })
      .at(0);
}

hlo::Value flatten_batch(hlo::Builder& b, const hlo::Value& x) {
  int64_t batch = 1;
  for (int64_t d : batch_dims(x)) batch *= d;
  return b.reshape(x, {batch, x.dims()[x.rank() - 2], x.dims()[x.rank() - 1]});
}

hlo::Value from_real(hlo::Builder& b, const hlo::Value& x, ElementType dtype) {
  if (!is_complex(dtype)) return x;
  return b.complex(x, b.constant_splat(0, x.type()));
}

hlo::Value abs_squared(hlo::Builder& b, const hlo::Value& x) {
  if (!is_complex(x.dtype())) return b.multiply(x, x);
  hlo::Value re = b.real(x), im = b.imag(x);
  return b.add(b.multiply(re, re), b.multiply(im, im));
}

hlo::Value broadcast_batch(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& batch) {
  std::vector<int64_t> dims = batch;
  dims.push_back(x.dims()[x.rank() - 2]);
  dims.push_back(x.dims()[x.rank() - 1]);
  return broadcast_to(b, x, dims);
}

void broadcast_batches(hlo::Builder& b, hlo::Value& x, hlo::Value& y, const char* op) {
  const std::vector<int64_t> batch = broadcast_shapes(batch_dims(x), batch_dims(y), op);
  x = broadcast_batch(b, x, batch);
  y = broadcast_batch(b, y, batch);
}

}  // namespace torch_tpu::ops::matrix
