// ATen glue for the random ops: uniform_, normal_ (and normal's tensor
// forms), random_, bernoulli, exponential_, geometric_, log_normal_,
// cauchy_, multinomial, randperm, dropout, _standard_gamma,
// _sample_dirichlet, poisson and binomial (and _standard_gamma_grad /
// _dirichlet_grad, the gamma and dirichlet samplers' gradients). torch.rand / randn / randint /
// *_like reach these through empty + uniform_ / normal_ / random_.
//
// Each op takes (seed, offset) from the given tpu generator, or the device's
// default one, as runtime u64 inputs and advances the offset by the counters
// it draws (see ops/random/uniform.h); its distribution parameters are
// runtime scalars too, so nothing recompiles from call to call. Argument
// checks are CPU's, with CPU's messages.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/any.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <cmath>
#include <functional>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/generator.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/elementwise/incomplete_beta.h"
#include "ops/elementwise/incomplete_gamma.h"
#include "ops/random/distributions.h"
#include "ops/random/rejection.h"
#include "ops/random/uniform.h"

namespace torch_tpu::aten {

namespace {

using Gen = std::optional<at::Generator>;

// (seed, offset) for random op `op` writing `dst` and drawing `counters`
// counter values; a generator of another device type is refused as CUDA
// refuses it.
std::pair<uint64_t, uint64_t> seed_offset(const Gen& generator, const at::Tensor& dst, const char* op,
                                          uint64_t counters) {
  const c10::Device device = dst.device();
  if (device.type() != TpuGeneratorImpl::device_type()) {
    // A tpu generator given to a CPU op (torch.randperm(n, generator=g))
    // sends it here by the generator's dispatch key; CUDA words the refusal
    // so. Without one, a tpu operand of an op writing a CPU tensor did.
    const bool tpu_generator = generator.has_value() && generator->defined() &&
                               generator->device().type() == TpuGeneratorImpl::device_type();
    TORCH_CHECK(!tpu_generator, "Expected a '", device.type(), "' device type for generator but found '",
                TpuGeneratorImpl::device_type(), "'");
    check_tpu(dst, op);
  }
  if (generator.has_value() && generator->defined()) {
    TORCH_CHECK(generator->device().type() == TpuGeneratorImpl::device_type(), "Expected a '",
                TpuGeneratorImpl::device_type(), "' device type for generator but found '",
                generator->device().type(), "'");
  }
  return next_seed_offset(generator, device.index(), std::max<uint64_t>(counters, 1));
}

// The runtime scalars a random op's program takes first: seed, offset.
std::vector<ScalarInput> seed_offset_scalars(const std::pair<uint64_t, uint64_t>& drawn) {
  return {{ElementType::kU64, c10::Scalar(drawn.first), ScalarRole::kRandomSeed},
          {ElementType::kU64, c10::Scalar(drawn.second), ScalarRole::kRandomOffset}};
}

uint64_t count(int64_t numel, int64_t per_element) {
  return static_cast<uint64_t>(numel) * static_cast<uint64_t>(per_element);
}

// The lowering of a random op writing its destination: seed, offset, the
// runtime parameters, the tensor operands, the destination's dims and type.
using RandomLowering = std::function<std::vector<hlo::Value>(
    hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& params,
    const std::vector<hlo::Value>& tensors, const std::vector<int64_t>& dims, ElementType out)>;

// Runs a random op into `dst` (through its view); its first value is written
// there, any further values (deferred-check flags) come back as tensors.
// `attributes`: what else the lowering depends on (the key has the op,
// dst's type and geometry, the operands' and the parameters' types).
std::vector<at::Tensor> run_random(const at::Tensor& dst, const char* op, std::vector<TensorArg> tensors,
                                   std::vector<ScalarInput> params, uint64_t counters, const Gen& generator,
                                   const RandomLowering& lower, std::string attributes = {}) {
  const auto drawn = seed_offset(generator, dst, op, counters);
  const ElementType out = to_element_type(dst.scalar_type(), op);
  attributes.push_back(static_cast<char>(out));
  OpCall call{op, std::move(attributes), std::move(tensors), seed_offset_scalars(drawn)};
  call.scalars.insert(call.scalars.end(), params.begin(), params.end());
  std::vector<int64_t> dims = dst.sizes().vec();
  return run_op_into(
      call,
      [lower, dims, out](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
        std::vector<hlo::Value> p(s.begin() + 2, s.end());
        return lower(b, s[0], s[1], p, t, dims, out);
      },
      std::vector<at::Tensor>{dst});
}

ElementType compute_type(const at::Tensor& t) {
  return ops::random_compute_type(to_element_type(t.scalar_type(), "random"));
}

// numeric_limits<T>::lowest() / max() of a floating dtype.
std::pair<double, double> float_limits(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf: return {-65504.0, 65504.0};
    case c10::kBFloat16: {
      const double max = static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
      return {-max, max};
    }
    case c10::kFloat: return {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()};
    default: return {std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max()};
  }
}

bool is_float(c10::ScalarType t) { return c10::isFloatingType(t); }

// ---- uniform_ / normal_ --------------------------------------------------

at::Tensor& uniform_(at::Tensor& self, double from, double to, Gen gen) {
  const c10::ScalarType real = c10::toRealValueType(self.scalar_type());
  if (!is_float(real)) not_implemented_for("check_uniform_bounds", self.scalar_type());
  const auto [min, max] = float_limits(real);
  const caffe2::TypeMeta dtype = c10::scalarTypeToTypeMeta(real);
  TORCH_CHECK(from >= min && from <= max, "from", " is out of bounds for ", dtype);
  TORCH_CHECK(to >= min && to <= max, "to", " is out of bounds for ", dtype);
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  TORCH_CHECK((to - from) <= max, "uniform_ expects to-from <= std::numeric_limits<", c10::toString(real),
              ">::max(), but found to=", to, " and from=", from, " which result in to-from to exceed the limit");
  if (self.numel() == 0) return self;
  const ElementType ct = compute_type(self);
  const ElementType out = to_element_type(self.scalar_type(), "aten::uniform_");
  run_random(self, "aten::uniform_", {}, {{ct, from}, {ct, to}}, count(self.numel(), ops::uniform_counters(out)),
             gen, [](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                     const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{ops::lower_uniform(b, seed, offset, p[0], p[1], dims, out)};
             });
  return self;
}

void check_normal_dtype(const at::Tensor& t) {
  if (!is_float(c10::toRealValueType(t.scalar_type()))) not_implemented_for("normal_kernel_tpu", t.scalar_type());
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return self;
  check_normal_dtype(self);
  // complex: each part gets half the variance, as CPU's view_as_real does
  if (self.is_complex()) std /= std::sqrt(2.0);
  const ElementType ct = compute_type(self);
  const ElementType out = to_element_type(self.scalar_type(), "aten::normal_");
  run_random(self, "aten::normal_", {}, {{ct, mean}, {ct, std}}, count(self.numel(), ops::normal_counters(out)), gen,
             [](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{ops::lower_normal(b, seed, offset, p[0], p[1], dims, out)};
             });
  return self;
}

// normal with a tensor mean and/or std: out = mean + std * N(0, 1), where a
// tensor std is checked for negative elements without a sync.
at::Tensor& normal_into(at::Tensor& out, const std::optional<at::Tensor>& mean_t, double mean,
                        const std::optional<at::Tensor>& std_t, double std, Gen gen) {
  if (std_t) TORCH_CHECK(!std_t->is_complex(), "normal expects standard deviation to be non-complex");
  std::vector<int64_t> shape;
  if (mean_t && std_t) {
    shape = at::infer_size(mean_t->sizes(), std_t->sizes());
  } else if (mean_t) {
    shape = at::infer_size(mean_t->sizes(), out.sizes());
  } else {
    shape = std_t->sizes().vec();
  }
  at::native::resize_output(out, shape);
  check_normal_dtype(out);
  if (out.numel() == 0) return out;
  if (out.is_complex()) {
    // A complex mean, as CPU does it: a complex standard normal (each part
    // of variance 1/2), scaled by std and shifted by the mean.
    if (std_t) {
      defer_check(at::any(at::lt(*std_t, 0)), CheckError::kRuntime, "normal expects all elements of std >= 0.0");
    }
    normal_(out, 0, 1, gen);
    if (std_t) {
      out.mul_(*std_t);
    } else {
      out.mul_(c10::Scalar(std));
    }
    if (mean_t) {
      out.add_(*mean_t);
    } else {
      out.add_(c10::Scalar(mean));
    }
    return out;
  }
  const ElementType ct = compute_type(out);
  OpCall slots{"aten::normal", "", {}, {}};
  std::optional<ArgSlot> mean_slot, std_slot;
  if (mean_t) mean_slot = add_operand(slots, *mean_t, to_scalar_type(ct));
  if (std_t) std_slot = add_operand(slots, *std_t, to_scalar_type(ct));
  std::vector<ScalarInput> params = slots.scalars;
  const bool mean_is_param = !mean_t;
  const bool std_is_param = !std_t;
  if (mean_is_param) params.push_back({ct, mean});
  if (std_is_param) params.push_back({ct, std});
  const size_t n_slot_scalars = slots.scalars.size();
  const bool check_std = std_t && std_slot && !std_slot->scalar;
  if (std_t && std_slot && std_slot->scalar) {
    TORCH_CHECK(std_t->item().toDouble() >= 0.0, "normal expects all elements of std >= 0.0");
  }
  auto extras = run_random(
      out, "aten::normal", slots.tensors, params, count(out.numel(), 2), gen,
      [=](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
          const std::vector<hlo::Value>& t, const std::vector<int64_t>& dims, ElementType out_type) {
        size_t next = n_slot_scalars;
        hlo::Value m = mean_is_param ? p[next++] : mean_slot->pick(t, p);
        hlo::Value s = std_is_param ? p[next++] : std_slot->pick(t, p);
        std::vector<hlo::Value> outs{ops::lower_normal(b, seed, offset, m, s, dims, out_type)};
        if (check_std) outs.push_back(ops::lower_any_outside(b, s, 0.0, std::nan("")));
        return outs;
      },
      std::string{mean_is_param ? 'm' : mean_slot->scalar ? 's' : 't', std_is_param ? 'm' : std_slot->scalar ? 's' : 't'});
  if (check_std) defer_check(extras.at(0), CheckError::kRuntime, "normal expects all elements of std >= 0.0");
  return out;
}

at::Tensor& normal_tf_out(const at::Tensor& mean, double std, Gen gen, at::Tensor& out) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return normal_into(out, mean, 0, std::nullopt, std, gen);
}
at::Tensor& normal_ft_out(double mean, const at::Tensor& std, Gen gen, at::Tensor& out) {
  return normal_into(out, std::nullopt, mean, std, 0, gen);
}
at::Tensor& normal_tt_out(const at::Tensor& mean, const at::Tensor& std, Gen gen, at::Tensor& out) {
  return normal_into(out, mean, 0, std, 0, gen);
}
at::Tensor normal_tf(const at::Tensor& mean, double std, Gen gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  at::Tensor out = at::empty_like(mean, c10::MemoryFormat::Contiguous);
  return normal_tf_out(mean, std, gen, out);
}
at::Tensor normal_ft(double mean, const at::Tensor& std, Gen gen) {
  at::Tensor out = at::empty_like(std, c10::MemoryFormat::Contiguous);
  return normal_ft_out(mean, std, gen, out);
}
at::Tensor normal_tt(const at::Tensor& mean, const at::Tensor& std, Gen gen) {
  at::Tensor out = at::empty(at::infer_size(mean.sizes(), std.sizes()), mean.options());
  return normal_tt_out(mean, std, gen, out);
}

// ---- random_ -------------------------------------------------------------

int float_digits(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf: return 11;
    case c10::kBFloat16: return 8;
    case c10::kFloat: return 24;
    default: return 53;
  }
}

// `v` through the float type `t` and back, as a C cast does.
int64_t round_trip(int64_t v, c10::ScalarType t) {
  switch (t) {
    case c10::kHalf: return static_cast<int64_t>(static_cast<float>(c10::Half(static_cast<float>(v))));
    case c10::kBFloat16: return static_cast<int64_t>(static_cast<float>(c10::BFloat16(static_cast<float>(v))));
    case c10::kFloat: return static_cast<int64_t>(static_cast<float>(v));
    default: return static_cast<int64_t>(static_cast<double>(v));
  }
}

int highest_bit(int64_t v) {
  int n = 0;
  while (v >>= 1) ++n;
  return n;
}

// CPU's update_from / update_to: move the bounds inward until they survive
// the cast to the float dtype, so no draw rounds outside [from, to).
int64_t update_from(int64_t from, c10::ScalarType t) {
  const int64_t from_plus_1 = round_trip(from + 1, t);
  if (from_plus_1 < from) {
    from = from_plus_1 + (int64_t{1} << (highest_bit(std::abs(from + 1)) - float_digits(t) + 1));
  }
  return from;
}

int64_t update_to(int64_t to, c10::ScalarType t) {
  const int64_t to_minus_1 = round_trip(to - 1, t);
  if (to_minus_1 >= to) {
    to = to_minus_1 - (int64_t{1} << (highest_bit(std::abs(to - 1)) - float_digits(t) + 1));
  }
  return to;
}

// [lowest, max] of an integral dtype as int64 (C casts of the limits).
std::pair<int64_t, int64_t> int_limits(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return {0, 1};
    case c10::kByte: return {0, 255};
    case c10::kChar: return {-128, 127};
    case c10::kShort: return {-32768, 32767};
    case c10::kInt: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case c10::kUInt16: return {0, 65535};
    case c10::kUInt32: return {0, std::numeric_limits<uint32_t>::max()};
    case c10::kUInt64: return {0, -1};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

void check_from_to_in_range(int64_t from, int64_t to_inc, const at::Tensor& self) {
  const c10::ScalarType t = self.scalar_type();
  const caffe2::TypeMeta dtype = self.dtype();
  auto check = [&](auto min, auto max) {
    TORCH_CHECK(from >= min && from <= max, "from", " is out of bounds for ", dtype);
    TORCH_CHECK(to_inc >= min && to_inc <= max, "to - 1", " is out of bounds for ", dtype);
  };
  if (is_float(t)) {
    const auto [min, max] = float_limits(t);
    check(min, max);
    const int digits = float_digits(t);
    using Bound = std::pair<int64_t, const char*>;
    for (const auto& [v, name] : {Bound{from, "from"}, Bound{to_inc, "to - 1"}}) {
      if (v < -(int64_t{1} << digits) || v > (int64_t{1} << digits)) {
        TORCH_WARN(name, " is out of bounds [-(2^", digits, "), 2^", digits, "]. ", "Due to precision limitations ",
                   dtype, " can support discrete uniform distribution only within this range. ",
                   "This warning will become an error in version 1.7 release, please fix the code in advance");
      }
    }
  } else if (t == c10::kUInt64) {
    check(int64_t{0}, std::numeric_limits<int64_t>::max());
  } else {
    const auto [min, max] = int_limits(t);
    check(min, max);
  }
}

bool random_supported(c10::ScalarType t, bool plain) {
  switch (t) {
    case c10::kBool: case c10::kByte: case c10::kChar: case c10::kShort: case c10::kInt: case c10::kLong:
    case c10::kHalf: case c10::kBFloat16: case c10::kFloat: case c10::kDouble:
      return true;
    case c10::kUInt16: case c10::kUInt32: case c10::kUInt64:
      return !plain;
    default:
      return false;
  }
}

// from + (64 random bits mod range), range 0 meaning 2^64.
at::Tensor& random_range(at::Tensor& self, int64_t from, uint64_t range, Gen gen) {
  if (self.numel() == 0) return self;
  run_random(self, "aten::random_", {}, {{ElementType::kS64, from}, {ElementType::kU64, c10::Scalar(range)}},
             count(self.numel(), 1), gen,
             [](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{ops::lower_random(b, seed, offset, p[0], p[1], dims, out)};
             });
  return self;
}

at::Tensor& random_from_to(at::Tensor& self, int64_t from, std::optional<int64_t> to_opt, Gen gen) {
  const c10::ScalarType t = self.scalar_type();
  // CPU's and CUDA's bounds check refuses complex types first (randint of a
  // complex dtype lands here).
  TORCH_CHECK(!c10::isComplexType(t), "check_random_bounds handles only integral, floating-point and boolean types");
  if (!random_supported(t, false)) not_implemented_for("random_from_to_kernel_tpu", t);
  if (to_opt.has_value()) {
    int64_t to = *to_opt;
    TORCH_CHECK(from < to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
    if (is_float(t)) {
      from = update_from(from, t);
      to = update_to(to, t);
      TORCH_CHECK(from < to, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from=",
                  from, " >= to=", to);
    }
    check_from_to_in_range(from, to - 1, self);
    return random_range(self, from, static_cast<uint64_t>(to) - static_cast<uint64_t>(from), gen);
  }
  if (from != std::numeric_limits<int64_t>::lowest()) {
    int64_t to_inc = 0;
    if (is_float(t)) {
      const int digits = float_digits(t);
      to_inc = digits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << digits);
      from = update_from(from, t);
      TORCH_CHECK(from < to_inc, "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from=",
                  from, " > to_inc=", to_inc);
    } else {
      to_inc = int_limits(t).second;
    }
    check_from_to_in_range(from, to_inc, self);
    return random_range(self, from, static_cast<uint64_t>(to_inc) - static_cast<uint64_t>(from) + 1, gen);
  }
  // Every int64, which CPU draws only into these dtypes.
  TORCH_CHECK_NOT_IMPLEMENTED(t != c10::kHalf && t != c10::kBool && t != c10::kUInt64 && t != c10::kUInt32 &&
                                  t != c10::kUInt16,
                              "\"random_full_64_bits_range_kernel\" not implemented for '", t, "'");
  TORCH_CHECK(t == c10::kLong || t == c10::kDouble || t == c10::kFloat || t == c10::kBFloat16,
              "random_full_64_bits_range_kernel handles only int64, double, float and bfloat16");
  return random_range(self, 0, 0, gen);
}

at::Tensor& random_to(at::Tensor& self, int64_t to, Gen gen) { return random_from_to(self, 0, to, gen); }

// random_(): [0, 2^digits] for floats, [0, max] for integers, {0, 1} for bool.
at::Tensor& random_plain(at::Tensor& self, Gen gen) {
  const c10::ScalarType t = self.scalar_type();
  if (!random_supported(t, true)) not_implemented_for("random_kernel_tpu", t);
  uint64_t range = 0;
  if (is_float(t)) {
    range = (uint64_t{1} << float_digits(t)) + 1;
  } else {
    range = static_cast<uint64_t>(int_limits(t).second) + 1;
  }
  return random_range(self, 0, range, gen);
}

// ---- bernoulli -----------------------------------------------------------

void check_bernoulli_self(const at::Tensor& self, const char* op) {
  if (self.is_complex()) not_implemented_for(op, self.scalar_type());
}

at::Tensor& bernoulli_float_(at::Tensor& self, double p, Gen gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  check_bernoulli_self(self, "bernoulli_scalar_tpu_");
  if (self.numel() == 0) return self;
  const ElementType pt = self.scalar_type() == c10::kDouble ? ElementType::kF64 : ElementType::kF32;
  run_random(self, "aten::bernoulli_.float", {}, {{pt, p}}, count(self.numel(), 1), gen,
             [](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{ops::lower_bernoulli(b, seed, offset, p[0], dims, out)};
             });
  return self;
}

at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p_in, Gen gen) {
  if (self.numel() == 0) return self;
  // A CPU self with a tpu p (dispatched here by p): CUDA's kernel draws on
  // self's device with p moved there, and so does this.
  if (self.device().is_cpu()) return self.bernoulli_(p_in.cpu(), gen);
  // CUDA's kernel moves p to self's device first (a CPU p of any shape).
  const bool moves = self.device().type() == TpuGeneratorImpl::device_type() && p_in.device().is_cpu();
  const at::Tensor p = moves ? p_in.to(self.device()) : p_in;
  check_bernoulli_self(self, "bernoulli_tensor_tpu_self_");
  if (!is_float(p.scalar_type())) not_implemented_for("bernoulli_tensor_tpu_p_", p.scalar_type());
  (void)p.expand(self.sizes());  // CPU's expandability error
  OpCall slots{"aten::bernoulli_", "", {}, {}};
  ArgSlot slot = add_operand(slots, p, p.scalar_type());
  if (slot.scalar) {
    const double v = p.item().toDouble();
    TORCH_CHECK(v >= 0 && v <= 1, "bernoulli_: expected p to be in [0, 1], but got p=", v);
  }
  const bool check = !slot.scalar;
  auto extras = run_random(
      self, "aten::bernoulli_.Tensor", slots.tensors, slots.scalars, count(self.numel(), 1), gen,
      [slot, check](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& s,
                    const std::vector<hlo::Value>& t, const std::vector<int64_t>& dims, ElementType out) {
        const hlo::Value& prob = slot.pick(t, s);
        std::vector<hlo::Value> outs{ops::lower_bernoulli(b, seed, offset, prob, dims, out)};
        if (check) outs.push_back(ops::lower_any_outside(b, prob, 0.0, 1.0));
        return outs;
      },
      std::string(1, check ? 't' : 's'));
  if (check) defer_check(extras.at(0), CheckError::kRuntime, "bernoulli_: expected all elements of p to be in [0, 1]");
  return self;
}

at::Tensor& bernoulli_out(const at::Tensor& self, Gen gen, at::Tensor& out) {
  check_tpu(out, "aten::bernoulli.out");
  out.resize_(self.sizes());
  return bernoulli_tensor_(out, self, gen);
}

// ---- _standard_gamma, _sample_dirichlet, poisson, binomial ---------------------
// Rejection samplers (ops/random/rejection.h): the op advances the
// generator by one counter per element; its rounds draw from a stream keyed
// by the (seed, offset) it got.

using SamplerLowering = hlo::Value (*)(hlo::Builder&, const hlo::Value&, const hlo::Value&, const hlo::Value&,
                                       ElementType);

// Samples of param's shape and dtype; with `min_param`, a param below it
// (or NaN) raises `message` at the next sync.
at::Tensor sample_like(const at::Tensor& param, const char* op, const char* cpu_kernel, SamplerLowering lower,
                       Gen gen, std::optional<double> min_param = std::nullopt, const char* message = "") {
  if (!is_float(param.scalar_type())) not_implemented_for(cpu_kernel, param.scalar_type());
  at::Tensor out = at::empty(param.sizes(), param.options());
  if (out.numel() == 0) return out;
  auto extras = run_random(
      out, op, {param}, {}, count(out.numel(), 1), gen,
      [lower, min_param](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                         const std::vector<hlo::Value>&, const std::vector<hlo::Value>& t, const std::vector<int64_t>&,
                         ElementType out_type) {
        std::vector<hlo::Value> outs{lower(b, seed, offset, t[0], out_type)};
        if (min_param) {
          outs.push_back(ops::lower_any_outside(b, t[0], *min_param, std::numeric_limits<double>::quiet_NaN()));
        }
        return outs;
      });
  if (min_param) defer_check(extras.at(0), CheckError::kRuntime, message);
  return out;
}

at::Tensor standard_gamma(const at::Tensor& alpha, Gen gen) {
  return sample_like(alpha, "aten::_standard_gamma", "gamma_cpu", ops::lower_standard_gamma, gen);
}

at::Tensor sample_dirichlet(const at::Tensor& alpha, Gen gen) {
  // A 0-dim concentration is a Dirichlet over one category: always 1.
  if (alpha.dim() == 0) {
    return sample_like(alpha.reshape({1}), "aten::_sample_dirichlet", "dirichlet", ops::lower_sample_dirichlet, gen)
        .reshape({});
  }
  return sample_like(alpha, "aten::_sample_dirichlet", "dirichlet", ops::lower_sample_dirichlet, gen);
}

at::Tensor poisson(const at::Tensor& rates, Gen gen) {
  return sample_like(rates, "aten::poisson", "poisson_cpu", ops::lower_poisson, gen, 0.0,
                     "invalid Poisson rate, expected rate to be non-negative");
}

// The reparameterization gradients (Gamma.rsample's and Dirichlet /
// Beta.rsample's backward): no randomness, but the samplers' gradients.
// Float and double only, one dtype for all operands, broadcast together,
// as on CPU.
using ParameterGradLowering = std::function<hlo::Value(hlo::Builder&, const std::vector<hlo::Value>&)>;

at::Tensor parameter_grad(const char* op, const char* cpu_kernel, std::vector<at::Tensor> operands,
                          const ParameterGradLowering& lower) {
  const c10::ScalarType t = operands[0].scalar_type();
  std::vector<int64_t> shape = operands[0].sizes().vec();
  for (size_t i = 1; i < operands.size(); ++i) {
    TORCH_CHECK(operands[i].scalar_type() == t, "Found dtype ", operands[i].scalar_type(), " but expected ", t);
    shape = at::infer_size(shape, operands[i].sizes());
  }
  if (t != at::kFloat && t != at::kDouble) not_implemented_for(cpu_kernel, t);
  if (c10::multiply_integers(shape) == 0) return at::empty(shape, operands[0].options());
  std::vector<TensorArg> expanded;
  for (const at::Tensor& operand : operands) expanded.emplace_back(operand.expand(shape));
  OpCall call{op, "", std::move(expanded), {}};
  return run_op(call, [&lower](hlo::Builder& b, const std::vector<hlo::Value>& v, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{lower(b, v)};
  }).at(0);
}

at::Tensor standard_gamma_grad(const at::Tensor& alpha, const at::Tensor& sample) {
  return parameter_grad("aten::_standard_gamma_grad", "_standard_gamma_grad_cpu", {alpha, sample},
                        [](hlo::Builder& b, const std::vector<hlo::Value>& v) {
                          return ops::lower_standard_gamma_grad(b, v[0], v[1]);
                        });
}

at::Tensor dirichlet_grad(const at::Tensor& x, const at::Tensor& alpha, const at::Tensor& total) {
  return parameter_grad("aten::_dirichlet_grad", "_dirichlet_grad_cpu", {x, alpha, total},
                        [](hlo::Builder& b, const std::vector<hlo::Value>& v) {
                          return ops::lower_dirichlet_grad(b, v[0], v[1], v[2]);
                        });
}

at::Tensor binomial(const at::Tensor& trials, const at::Tensor& prob, Gen gen) {
  TORCH_CHECK_VALUE(c10::isFloatingType(trials.scalar_type()),
                    "binomial only supports floating-point dtypes for count, got: ", trials.scalar_type());
  TORCH_CHECK_VALUE(c10::isFloatingType(prob.scalar_type()),
                    "binomial only supports floating-point dtypes for prob, got: ", prob.scalar_type());
  if (!is_float(trials.scalar_type())) not_implemented_for("binomial_cpu", trials.scalar_type());
  TORCH_CHECK(prob.scalar_type() == trials.scalar_type(), "binomial: expected count and prob of one dtype, got ",
              trials.scalar_type(), " and ", prob.scalar_type());
  const std::vector<int64_t> shape = at::infer_size(trials.sizes(), prob.sizes());
  at::Tensor out = at::empty(shape, trials.options());
  if (out.numel() == 0) return out;
  run_random(out, "aten::binomial", {trials.expand(shape), prob.expand(shape)}, {}, count(out.numel(), 1), gen,
             [](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>&,
                const std::vector<hlo::Value>& t, const std::vector<int64_t>&, ElementType out_type) {
               return std::vector<hlo::Value>{ops::lower_binomial(b, seed, offset, t[0], t[1], out_type)};
             });
  return out;
}

// ---- exponential_, geometric_, log_normal_, cauchy_ ----------------------

using TwoParamLowering = hlo::Value (*)(hlo::Builder&, const hlo::Value&, const hlo::Value&, const hlo::Value&,
                                        const hlo::Value&, const std::vector<int64_t>&, ElementType);
using OneParamLowering = hlo::Value (*)(hlo::Builder&, const hlo::Value&, const hlo::Value&, const hlo::Value&,
                                        const std::vector<int64_t>&, ElementType);

at::Tensor& one_param(at::Tensor& self, const char* op, double a, int64_t counters, Gen gen, OneParamLowering f) {
  if (self.numel() == 0) return self;
  const ElementType ct = compute_type(self);
  run_random(self, op, {}, {{ct, a}}, count(self.numel(), counters), gen,
             [f](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                 const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{f(b, seed, offset, p[0], dims, out)};
             });
  return self;
}

at::Tensor& two_param(at::Tensor& self, const char* op, double a, double c, int64_t counters, Gen gen,
                      TwoParamLowering f) {
  if (self.numel() == 0) return self;
  const ElementType ct = compute_type(self);
  run_random(self, op, {}, {{ct, a}, {ct, c}}, count(self.numel(), counters), gen,
             [f](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>& p,
                 const std::vector<hlo::Value>&, const std::vector<int64_t>& dims, ElementType out) {
               return std::vector<hlo::Value>{f(b, seed, offset, p[0], p[1], dims, out)};
             });
  return self;
}

at::Tensor& exponential_(at::Tensor& self, double lambd, Gen gen) {
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  TORCH_CHECK(is_float(self.scalar_type()),
              "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified ",
              self.scalar_type());
  return one_param(self, "aten::exponential_", lambd, 1, gen, ops::lower_exponential);
}

at::Tensor& geometric_(at::Tensor& self, double p, Gen gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  const c10::ScalarType t = self.scalar_type();
  if (t == c10::kBool || self.is_complex() || !random_supported(t, true)) not_implemented_for("geometric_tpu", t);
  return one_param(self, "aten::geometric_", p, 1, gen, ops::lower_geometric);
}

at::Tensor& log_normal_(at::Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  if (!is_float(self.scalar_type())) not_implemented_for("log_normal_tpu", self.scalar_type());
  return two_param(self, "aten::log_normal_", mean, std, 2, gen, ops::lower_log_normal);
}

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, Gen gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  TORCH_CHECK(is_float(self.scalar_type()),
              "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you specified ",
              self.dtype());
  return two_param(self, "aten::cauchy_", median, sigma, 1, gen, ops::lower_cauchy);
}

// ---- multinomial ---------------------------------------------------------

at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool replacement, Gen gen, at::Tensor& result) {
  TORCH_CHECK(result.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(is_float(self.scalar_type()), "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  TORCH_CHECK(result.scalar_type() == c10::kLong, "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= n_categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_categories <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
  const int64_t rows = self.dim() == 1 ? 1 : self.size(0);
  if (self.dim() == 1) {
    result.resize_({n_sample});
  } else {
    result.resize_({rows, n_sample});
  }
  if (result.numel() == 0) return result;
  TORCH_CHECK(n_categories > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  TORCH_CHECK(rows <= std::numeric_limits<int32_t>::max(), "multinomial: too many distributions (", rows, ")");
  const uint64_t counters = count(rows, replacement ? n_sample : n_categories);
  auto extras = run_random(
      result, "aten::multinomial", {self}, {}, counters, gen,
      [n_sample, replacement](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                              const std::vector<hlo::Value>&, const std::vector<hlo::Value>& t,
                              const std::vector<int64_t>&, ElementType) {
        ops::MultinomialResult r = ops::lower_multinomial(b, seed, offset, t[0], n_sample, replacement);
        return std::vector<hlo::Value>{r.samples, r.negative, r.infinite, r.zero_sum};
      },
      std::string(1, replacement ? 'r' : 'n'));
  // CPU's messages: its sampling kernel (several draws with replacement)
  // words the element checks differently from its top-k path.
  if (replacement && n_sample > 1) {
    defer_check(extras.at(0), CheckError::kRuntime, "invalid multinomial distribution (encountering probability entry < 0)");
    defer_check(extras.at(1), CheckError::kRuntime,
                "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
  } else {
    const char* invalid = "probability tensor contains either `inf`, `nan` or element < 0";
    defer_check(extras.at(0), CheckError::kRuntime, invalid);
    defer_check(extras.at(1), CheckError::kRuntime, invalid);
  }
  defer_check(extras.at(2), CheckError::kRuntime, "invalid multinomial distribution (sum of probabilities <= 0)");
  return result;
}

at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool replacement, Gen gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(c10::kLong));
  return multinomial_out(self, n_sample, replacement, gen, result);
}

// ---- randperm ------------------------------------------------------------

at::Tensor& randperm_out(int64_t n, Gen gen, at::Tensor& result) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  const c10::ScalarType t = result.scalar_type();
  if (t == c10::kBool || !random_supported(t, true)) not_implemented_for("randperm", t);
  if (!is_float(t) && n > 0) {
    TORCH_CHECK(n - 1 <= int_limits(t).second,
                "n is too large for result tensor type: '", result.toString(), "'");
  }
  if (t == c10::kHalf) TORCH_CHECK(n <= (int64_t{1} << 11) + 1, "n cannot be greater than 2049 for Half type.");
  if (t == c10::kFloat) TORCH_CHECK(n <= (int64_t{1} << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
  if (t == c10::kDouble) TORCH_CHECK(n <= (int64_t{1} << 53) + 1, "n cannot be greater than 2^53+1 for Double type.");
  at::native::resize_output(result, {n});
  if (n == 0) return result;
  run_random(result, "aten::randperm", {}, {}, count(n, 1), gen,
             [n](hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, const std::vector<hlo::Value>&,
                 const std::vector<hlo::Value>&, const std::vector<int64_t>&, ElementType out) {
               return std::vector<hlo::Value>{ops::lower_randperm(b, seed, offset, n, out)};
             });
  return result;
}

// ---- dropout -------------------------------------------------------------

// 1 / (1 - p) in double for double tensors, as CPU scales them.
ElementType dropout_scale_type(const at::Tensor& t) {
  const bool wide = t.scalar_type() == c10::kDouble || t.scalar_type() == c10::kComplexDouble;
  return wide ? ElementType::kF64 : ElementType::kF32;
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train.value_or(true) || p == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(c10::kBool))};
  }
  // The scaled result is a float, as on CPU, which refuses to write it into
  // an integer or bool tensor (scaling by 2 would pass silently otherwise).
  TORCH_CHECK(c10::isFloatingType(input.scalar_type()) || c10::isComplexType(input.scalar_type()),
              "dropout: result type Float can't be cast to the desired output type ", input.scalar_type());
  OpCall call{"aten::native_dropout", "", {input},
              seed_offset_scalars(seed_offset(std::nullopt, input, "aten::native_dropout", count(input.numel(), 1)))};
  call.scalars.push_back({ElementType::kF32, p});
  call.scalars.push_back({dropout_scale_type(input), 1.0 / (1.0 - p)});
  auto outs = run_op(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    auto [out, mask] = ops::lower_dropout(b, t[0], s[0], s[1], s[2], s[3]);
    return std::vector<hlo::Value>{out, mask};
  });
  return {in_layout_of(outs[0], input), in_layout_of(outs[1], input)};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_in, const at::Tensor& mask, double scale) {
  // An integer or bool gradient promotes with the float scale, as on CPU.
  const bool exact = c10::isFloatingType(grad_in.scalar_type()) || c10::isComplexType(grad_in.scalar_type());
  const at::Tensor grad = exact ? grad_in : grad_in.to(c10::typeMetaToScalarType(c10::get_default_dtype()));
  OpCall call{"aten::native_dropout_backward", "", {grad, mask}, {{dropout_scale_type(grad), scale}}};
  const at::Tensor result =
      run_op(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
        return std::vector<hlo::Value>{ops::lower_dropout_backward(b, t[0], t[1], s[0])};
      }).at(0);
  // The memory format of the gradient, as the shape function gives it (CPU
  // keeps any permuted layout; PyTorch's decomposition only channels_last).
  return in_memory_format_of(result, grad);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", uniform_);
  m.impl("normal_", normal_);
  m.impl("normal.Tensor_float", normal_tf);
  m.impl("normal.float_Tensor", normal_ft);
  m.impl("normal.Tensor_Tensor", normal_tt);
  m.impl("normal.Tensor_float_out", normal_tf_out);
  m.impl("normal.float_Tensor_out", normal_ft_out);
  m.impl("normal.Tensor_Tensor_out", normal_tt_out);
  m.impl("random_.from", random_from_to);
  m.impl("random_.to", random_to);
  m.impl("random_", random_plain);
  m.impl("bernoulli_.float", bernoulli_float_);
  m.impl("bernoulli_.Tensor", bernoulli_tensor_);
  m.impl("bernoulli.out", bernoulli_out);
  m.impl("exponential_", exponential_);
  m.impl("_standard_gamma", standard_gamma);
  m.impl("_standard_gamma_grad", standard_gamma_grad);
  m.impl("_dirichlet_grad", dirichlet_grad);
  m.impl("_sample_dirichlet", sample_dirichlet);
  m.impl("poisson", poisson);
  m.impl("binomial", binomial);
  m.impl("geometric_", geometric_);
  m.impl("log_normal_", log_normal_);
  m.impl("cauchy_", cauchy_);
  m.impl("multinomial", multinomial);
  m.impl("multinomial.out", multinomial_out);
  m.impl("randperm.generator_out", randperm_out);
  m.impl("native_dropout", native_dropout);
  m.impl("native_dropout_backward", native_dropout_backward);
}

}  // namespace torch_tpu::aten
