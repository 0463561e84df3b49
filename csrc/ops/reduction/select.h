// Lowerings of selection along one dimension: kthvalue and median /
// nanmedian, without sorting.
//
// The k-th smallest value of a row is found bit by bit on its order keys
// (lower_order_key, read as unsigned integers): from the highest bit down,
// a bit is set when fewer than k keys lie below the value with it set. One
// count over the row per bit of the key (32 or 64), in a while loop, where
// a sort of the row costs n log n comparisons. Its index is the one a
// stable sort gives: the first position holding it, or, when equal values
// come before it in sorted order, the matching position found the same way
// over positions (that loop runs only when some row needs it). `dim` is
// wrapped by the ATen glue; a 0-dim input behaves like one element.
#pragma once

#include <cstdint>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// The k-th smallest element (1-based) along `dim`, NaN the greatest.
std::pair<hlo::Value, hlo::Value> lower_kthvalue(hlo::Builder& b, const hlo::Value& x, int64_t k, int64_t dim,
                                                 bool keepdim);

// The lower median along `dim`. median: NaN (the first one) when the row
// has a NaN; nanmedian (ignore_nan): the median of the non-NaN values (an
// all-NaN row gives NaN at its middle index; CPU's index there is whatever
// its nth_element leaves, so it may differ).
std::pair<hlo::Value, hlo::Value> lower_median(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool keepdim,
                                               bool ignore_nan);

}  // namespace torch_tpu::ops
