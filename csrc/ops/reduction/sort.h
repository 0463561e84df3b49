// Lowerings of sorting along one dimension: sort (values and s64
// indices), topk and mode (kthvalue and median select without sorting:
// select.h).
//
// One stable sort does them all: every type's order is mapped to signed
// integer keys, packed with their positions into one s64 and sorted alone,
// in one pass for types of up to 32 bits and two (low half, then high
// half) for 64-bit ones. NaN sorts as the greatest value (last ascending,
// first descending), and equal values keep their original order, as
// PyTorch's stable sort does. `dim` is wrapped by the ATen glue; a 0-dim input
// behaves like one element.
#pragma once

#include <cstdint>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Keys whose order as signed integers (s32 for types of up to 32 bits, s64
// for 64-bit ones) is the order `x` sorts in: both zeros equal, NaN the
// greatest; descending complements them.
hlo::Value lower_order_key(hlo::Builder& b, const hlo::Value& x, bool descending);

// x's elements at `positions` (s64, x's shape but for `dim`) along `dim`,
// bit for bit: floats move as integers of their width.
hlo::Value lower_gather_bits(hlo::Builder& b, const hlo::Value& x, const hlo::Value& positions, int64_t dim);

// The positions that sort `order` (s32 or s64 keys, compared as signed
// integers) ascending along `dim`, equal keys in their original order.
hlo::Value lower_sort_positions(hlo::Builder& b, const hlo::Value& order, int64_t dim);

std::pair<hlo::Value, hlo::Value> lower_sort(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool descending);

// The k largest (smallest) elements along `dim`, in sorted order.
std::pair<hlo::Value, hlo::Value> lower_topk(hlo::Builder& b, const hlo::Value& x, int64_t k, int64_t dim,
                                             bool largest);

// The most frequent value along `dim` (the smallest of equally frequent
// ones) and the index of its last occurrence, as CPU's mode. NaNs count as
// one value.
std::pair<hlo::Value, hlo::Value> lower_mode(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool keepdim);

}  // namespace torch_tpu::ops
