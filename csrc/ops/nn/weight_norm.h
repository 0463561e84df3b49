// Weight normalization (torch.nn.utils.weight_norm and its
// parametrization): w = g * v / ||v||, the norm taken over every dim of v
// but `dim` (the first or the last), as _weight_norm_interface computes it.
// 16-bit v computes in f32; the norms come back in f32 for them.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct WeightNorm {
  hlo::Value w;      // v's shape and type
  hlo::Value norms;  // g's shape
};
// g holds v.dims()[dim] values (any shape of that many elements, as
// `norms` will have).
WeightNorm lower_weight_norm(hlo::Builder& b, const hlo::Value& v, const hlo::Value& g, int64_t dim);

struct WeightNormGrads {
  hlo::Value v, g;
};
WeightNormGrads lower_weight_norm_backward(hlo::Builder& b, const hlo::Value& grad_w, const hlo::Value& v,
                                           const hlo::Value& g, const hlo::Value& norms, int64_t dim);

}  // namespace torch_tpu::ops
