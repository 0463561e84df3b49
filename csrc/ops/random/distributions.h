// Lowerings of the random distributions (uniform_, normal_, bernoulli,
// random_, exponential_, geometric_, log_normal_, cauchy_, multinomial,
// randperm) on the counter-based generator of ops/random/uniform.h.
//
// Every lowering takes the generator's 0-dim u64 `seed` and `offset` and
// its distribution parameters as runtime values (0-dim, or tensors that
// broadcast to `dims`), so a new seed, offset or parameter never
// recompiles. Each documents how many counters per element it draws; the
// ATen glue advances the generator by that much.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// The type a distribution on `out` computes in: f64 for f64 (and
// complex128), f32 otherwise, as CPU's accumulate types.
ElementType random_compute_type(ElementType out);

// Counters per element of `out`: uniform 1 (2 for complex), normal 2 (4
// for complex), log_normal 2, the others 1.
int64_t uniform_counters(ElementType out);
int64_t normal_counters(ElementType out);

// Uniform on [from, to) of `out` (floating or complex: both parts). `from`
// and `to` are 0-dim of random_compute_type(out); a value that rounds up to
// `to` in `out` becomes `from`, as CUDA does.
hlo::Value lower_uniform(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                         const hlo::Value& from, const hlo::Value& to, const std::vector<int64_t>& dims,
                         ElementType out);

// N(0, 1) of `dims` in `type` (f32 or f64) by Box-Muller; 2 counters per
// element.
hlo::Value standard_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const std::vector<int64_t>& dims, ElementType type);

// mean + std * N(0, 1) of `out` (floating, or complex with 0-dim mean and
// std: both parts drawn, each with `std`). mean and std broadcast to dims.
hlo::Value lower_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& mean, const hlo::Value& std, const std::vector<int64_t>& dims,
                        ElementType out);

// 1 with probability p (0-dim or broadcasting to dims), else 0, as `out`.
hlo::Value lower_bernoulli(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const hlo::Value& p, const std::vector<int64_t>& dims, ElementType out);

// Exp(lambd), strictly positive (a log capped at -eps/2 as CUDA does).
hlo::Value lower_exponential(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                             const hlo::Value& lambd, const std::vector<int64_t>& dims, ElementType out);

// Number of Bernoulli(p) trials to the first success: ceil(log u / log1p(-p)).
hlo::Value lower_geometric(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const hlo::Value& p, const std::vector<int64_t>& dims, ElementType out);

// exp(N(mean, std)); 2 counters per element.
hlo::Value lower_log_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                            const hlo::Value& mean, const hlo::Value& std, const std::vector<int64_t>& dims,
                            ElementType out);

// median + sigma * tan(pi * (u - 1/2)).
hlo::Value lower_cauchy(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& median, const hlo::Value& sigma, const std::vector<int64_t>& dims,
                        ElementType out);

// random_: from + (bits mod range) from 64 random bits, as `out` (floats
// through f32 for f16/bf16, as CPU casts). `from` is 0-dim s64, `range`
// 0-dim u64 where 0 means 2^64 (every int64).
hlo::Value lower_random(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& from, const hlo::Value& range, const std::vector<int64_t>& dims,
                        ElementType out);

struct MultinomialResult {
  hlo::Value samples;   // s64, [num_samples] or [rows, num_samples]
  hlo::Value negative;  // 0-dim i1: some probability is negative or nan
  hlo::Value infinite;  // 0-dim i1: some probability is +inf
  hlo::Value zero_sum;  // 0-dim i1: some row sums to 0
};

// multinomial of a 1-D or 2-D probability tensor (unnormalized weights).
// With replacement: inverse-CDF sampling (a binary search of the row's
// cumulative sums), never a zero-weight category; rows * num_samples
// counters. Without: the top num_samples of log p - log q, q ~ Exp(1)
// (exponential races); rows * categories counters.
MultinomialResult lower_multinomial(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                    const hlo::Value& probs, int64_t num_samples, bool replacement);

// A random permutation of 0 .. n-1 as `out`: iota sorted by 64-bit random
// keys; n counters.
hlo::Value lower_randperm(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, int64_t n,
                          ElementType out);

// 0-dim i1: some element of x is not in [lo, hi] (nan included); no upper
// bound when hi is nan.
hlo::Value lower_any_outside(hlo::Builder& b, const hlo::Value& x, double lo, double hi);

}  // namespace torch_tpu::ops
