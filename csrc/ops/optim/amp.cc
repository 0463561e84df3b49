#include "ops/optim/amp.h"

#include "ops/broadcast.h"
#include "ops/reduction/reduce.h"

namespace torch_tpu::ops {

std::vector<hlo::Value> lower_unscale_and_check(hlo::Builder& b, const std::vector<hlo::Value>& grads,
                                                const hlo::Value& found_inf, const hlo::Value& inv_scale) {
  std::vector<hlo::Value> out;
  hlo::Value any_bad = b.constant_splat(0, hlo::TensorType::scalar(ElementType::kPred));
  for (const hlo::Value& g : grads) {
    const ElementType c = accumulation_type(g.dtype());
    hlo::Value x = convert_to(b, g, c);
    hlo::Value scale = broadcast_to(b, convert_to(b, inv_scale, c), x.dims());
    out.push_back(convert_to(b, b.multiply(x, scale), g.dtype()));
    std::vector<int64_t> dims(x.dims().size());
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
    hlo::Value bad = lower_reduce(b, b.not_(b.is_finite(x)), ReduceKind::kAny, dims, false, ElementType::kPred,
                                  ElementType::kPred);
    any_bad = b.or_(any_bad, bad);
  }
  hlo::Value one = b.constant_splat(1, found_inf.type());
  out.push_back(b.select(any_bad, one, found_inf));
  return out;
}

std::pair<hlo::Value, hlo::Value> lower_update_scale(hlo::Builder& b, const hlo::Value& scale,
                                                     const hlo::Value& growth_tracker, const hlo::Value& found_inf,
                                                     const hlo::Value& growth_factor,
                                                     const hlo::Value& backoff_factor,
                                                     const hlo::Value& growth_interval) {
  const hlo::TensorType tracker_type = growth_tracker.type();
  hlo::Value found = b.compare(found_inf, b.constant_splat(0, found_inf.type()), "NE");
  hlo::Value zero = b.constant_splat_int(0, tracker_type);
  hlo::Value successful = b.add(growth_tracker, b.constant_splat_int(1, tracker_type));
  hlo::Value grow = b.compare(successful, convert_to(b, growth_interval, tracker_type.dtype), "EQ");
  hlo::Value grown = b.multiply(scale, convert_to(b, growth_factor, scale.dtype()));
  hlo::Value grown_ok = b.select(b.is_finite(grown), grown, scale);
  hlo::Value backed_off = b.multiply(scale, convert_to(b, backoff_factor, scale.dtype()));
  hlo::Value new_scale = b.select(found, backed_off, b.select(grow, grown_ok, scale));
  hlo::Value new_tracker = b.select(found, zero, b.select(grow, zero, successful));
  return {new_scale, new_tracker};
}

}  // namespace torch_tpu::ops
