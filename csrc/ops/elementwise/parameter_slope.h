// The derivative of a smooth function of a distribution parameter by a
// five-point central difference, all five points evaluated in one stacked
// computation (one while loop for an iterative function). Used by the
// reparameterization gradients of Gamma and Beta samples, whose CDFs'
// parameter derivatives have no closed form.
#pragma once

#include <functional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// The points a, a + h, a - h, a + 2h, a - 2h stacked on a new leading
// axis of size 5, and the way to lift other operands to that shape.
class FivePointStencil {
 public:
  FivePointStencil(hlo::Builder& b, const hlo::Value& a, const hlo::Value& h);

  const hlo::Value& points() const { return points_; }
  // v (of a's shape) broadcast along the stacked axis.
  hlo::Value stack(const hlo::Value& v) const;
  // Row r (0: the centre) of a stacked value.
  hlo::Value row(const hlo::Value& stacked, int64_t r) const;
  // d f / da at the centre from f's stacked values; error O(h^4).
  hlo::Value slope(const hlo::Value& f) const;

 private:
  hlo::Builder& b_;
  hlo::Value a_, h_, points_;
  std::vector<int64_t> stacked_dims_, lift_;
};

}  // namespace torch_tpu::ops
