// Complex elementary functions where XLA's own complex lowerings fall short
// of what CPU (C99 Annex G, as libstdc++ implements it) gives:
// - sin, cos, sinh, cosh lose all accuracy for small imaginary parts and turn
//   an overflowing cosh(y) * 0 into NaN; they are computed here from their
//   real and imaginary parts with real sin / cos / sinh / cosh;
// - sqrt and the inverse functions ignore the sign of a zero part, so they
//   pick the wrong side of a branch cut (sqrt(-4 - 0i) = +2i); they are
//   computed in the first quadrant and moved back by the functions'
//   symmetries (f(conj z) = conj f(z); odd functions also f(-z) = -f(z));
// - exp, log, sqrt, sin, cos, tan and their hyperbolic forms give NaN for
//   most infinite or NaN parts and drop the sign of zero parts; here they
//   give the special values of C99 Annex G as glibc (CPU's kernels) picks
//   them where the standard leaves a sign open.
#pragma once

#include <functional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

hlo::Value complex_sin(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_cos(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_sinh(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_cosh(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_exp(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_log(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_sqrt(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_tan(hlo::Builder& b, const hlo::Value& z);
hlo::Value complex_tanh(hlo::Builder& b, const hlo::Value& z);

// f(z) for f with f(conj z) = conj f(z), evaluated where the imaginary
// part is +0 or positive; `odd` functions are evaluated in the first
// quadrant (real part +0 or positive too).
hlo::Value by_symmetry(hlo::Builder& b, const hlo::Value& z, bool odd,
                       const std::function<hlo::Value(const hlo::Value&)>& f);

// 2^z as exp(z ln 2), the real factor applied part by part: XLA's complex
// power turns a real argument that overflows into inf + NaN i.
hlo::Value complex_exp2(hlo::Builder& b, const hlo::Value& z);

}  // namespace torch_tpu::ops
