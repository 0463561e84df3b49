// Lowerings of sorting and selection along one dimension: sort (values and
// s64 indices), topk, kthvalue, median / nanmedian and mode.
//
// One stable sort does them all (and mode): every type's order is mapped
// to signed integer keys, packed with their positions into one s64 and
// sorted alone, in one pass for types of up to 32 bits and two (low half,
// then high half) for 64-bit ones. NaN sorts as the greatest value (last ascending, first
// descending), and equal values keep their original order, as PyTorch's
// stable sort does. `dim` is wrapped by the ATen glue; a 0-dim input
// behaves like one element.
#pragma once

#include <cstdint>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// The positions that sort `order` (s32 or s64 keys, compared as signed
// integers) ascending along `dim`, equal keys in their original order.
hlo::Value lower_sort_positions(hlo::Builder& b, const hlo::Value& order, int64_t dim);

std::pair<hlo::Value, hlo::Value> lower_sort(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool descending);

// The k largest (smallest) elements along `dim`, in sorted order.
std::pair<hlo::Value, hlo::Value> lower_topk(hlo::Builder& b, const hlo::Value& x, int64_t k, int64_t dim,
                                             bool largest);

// The k-th smallest element (1-based) along `dim`.
std::pair<hlo::Value, hlo::Value> lower_kthvalue(hlo::Builder& b, const hlo::Value& x, int64_t k, int64_t dim,
                                                 bool keepdim);

// The lower median along `dim`. median: NaN (the first one) when the row
// has a NaN; nanmedian (ignore_nan): the median of the non-NaN values (an
// all-NaN row gives NaN at its middle index; CPU's index there is whatever
// its nth_element leaves, so it may differ).
std::pair<hlo::Value, hlo::Value> lower_median(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool keepdim,
                                               bool ignore_nan);

// The most frequent value along `dim` (the smallest of equally frequent
// ones) and the index of its last occurrence, as CPU's mode. NaNs count as
// one value.
std::pair<hlo::Value, hlo::Value> lower_mode(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool keepdim);

}  // namespace torch_tpu::ops
