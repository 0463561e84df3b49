// Samplers that draw until they accept: Gamma (Marsaglia and Tsang's
// method, boosted below shape 1), Dirichlet (normalized Gammas) and
// Poisson (Knuth's product of uniforms below rate 10, Hormann's
// transformed rejection PTRS from 10) and Binomial (inversion or BTRS),
// the algorithms PyTorch's CPU
// kernels use, as one HLO while loop over rounds for all elements.
//
// A round draws fresh counters for every element, so how many rounds run
// depends on the values drawn. The loop therefore draws from its own stream,
// keyed by the generator's (seed, offset), and the op advances the
// generator by a fixed amount (one counter per element); rounds stop once
// every element accepted, after at most kMaxRounds (each round accepts at
// least ~90% of the remaining elements, so the cap is never reached in
// practice; an element left over would be NaN, never a biased value).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Gamma(alpha, 1) samples of alpha's shape, as `out`; at least the smallest
// normal number of `out` (as CPU, also for alpha = 0); NaN for a NaN or
// negative alpha (CPU returns the smallest normal number there too).
hlo::Value lower_standard_gamma(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                const hlo::Value& alpha, ElementType out);

// Dirichlet(alpha) over alpha's last dim.
hlo::Value lower_sample_dirichlet(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                  const hlo::Value& alpha, ElementType out);

// Poisson(rate) counts of rate's shape, as `out` (rate's floating type);
// NaN for a NaN or negative rate (the ATen glue raises CPU's error).
hlo::Value lower_poisson(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const hlo::Value& rate,
                         ElementType out);

// Binomial(count, prob) counts (count and prob of one shape), as `out`:
// inversion by geometric jumps when count * min(p, 1 - p) < 10, BTRS
// (Hormann's transformed rejection) otherwise, as CPU. NaN for NaN inputs.
hlo::Value lower_binomial(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const hlo::Value& count,
                          const hlo::Value& prob, ElementType out);

}  // namespace torch_tpu::ops
