// Small building blocks of the matrix decompositions and solvers
// (cholesky.cc, lu.cc, qr.cc, jacobi.cc): batched matrices are [..., rows, cols].
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops::matrix {

// Batch dims of x (all but the last two).
std::vector<int64_t> batch_dims(const hlo::Value& x);

// x with its last two dims swapped (conjugated too when `conjugate` and
// x is complex).
hlo::Value transpose(hlo::Builder& b, const hlo::Value& x, bool conjugate);

// A boolean [..., rows, cols] mask of `shape`: col - row >= k (upper) or
// col - row <= k (lower), as triu / tril with diagonal k.
hlo::Value triangle_mask(hlo::Builder& b, const std::vector<int64_t>& shape, bool upper, int64_t k);

// x with the elements outside the triangle zeroed.
hlo::Value keep_triangle(hlo::Builder& b, const hlo::Value& x, bool upper, int64_t k);

// The identity matrix (rectangular allowed) of `shape` and `dtype`.
hlo::Value identity(hlo::Builder& b, ElementType dtype, const std::vector<int64_t>& shape);

// The main diagonal [..., min(rows, cols)].
hlo::Value diagonal(hlo::Builder& b, const hlo::Value& x);

// Batched x @ y over equal batch dims, at HIGHEST precision (a TPU would
// otherwise multiply f32 in bf16 passes).
hlo::Value matmul(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y);

// A reduction's combining step: &hlo::Builder::add, multiply,
// maximum_in_reduction or minimum_in_reduction.
using Combine = hlo::Value (hlo::Builder::*)(const hlo::Value&, const hlo::Value&);

// Sum / max / min / product over dimension `dim` (removed).
hlo::Value reduce(hlo::Builder& b, const hlo::Value& x, int64_t dim, Combine combine, double init);

// x [..., rows, cols] as [batch, rows, cols], batch the product of its
// batch dims.
hlo::Value flatten_batch(hlo::Builder& b, const hlo::Value& x);

// A real value as `dtype` (the real part of a complex one).
hlo::Value from_real(hlo::Builder& b, const hlo::Value& x, ElementType dtype);

// |x|^2 in x's real type.
hlo::Value abs_squared(hlo::Builder& b, const hlo::Value& x);

// a and b broadcast to the broadcast of their batch dims (their own last
// two dims kept).
void broadcast_batches(hlo::Builder& b, hlo::Value& x, hlo::Value& y, const char* op);

// x broadcast to `batch` + its last two dims.
hlo::Value broadcast_batch(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& batch);

}  // namespace torch_tpu::ops::matrix
