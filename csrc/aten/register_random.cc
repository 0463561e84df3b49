// ATen glue for random ops: each takes (seed, offset) from the device's
// generator as runtime inputs and advances the offset.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <mutex>

#include "aten/dtypes.h"
#include "aten/generator.h"
#include "aten/op_runner.h"
#include "ops/random/uniform.h"

namespace torch_tpu::aten {

namespace {

// (seed, offset) for a random op on `device` consuming `numel` numbers.
std::pair<uint64_t, uint64_t> next_seed_offset(c10::DeviceIndex device, int64_t numel) {
  at::Generator gen = default_generator(device);  // a handle; the state is shared
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<TpuGeneratorImpl>()->next_seed_offset(static_cast<uint64_t>(std::max<int64_t>(numel, 1)));
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train.value_or(true) || p == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(c10::kBool))};
  }
  auto [seed, offset] = next_seed_offset(input.device().index(), input.numel());
  OpCall call{"aten::native_dropout", "", {input},
              {{ElementType::kU64, c10::Scalar(seed)},
               {ElementType::kU64, c10::Scalar(offset)},
               {ElementType::kF32, p},
               {ElementType::kF32, 1.0 / (1.0 - p)}}};
  auto outs = run_op(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    auto [out, mask] = ops::lower_dropout(b, t[0], s[0], s[1], s[2], s[3]);
    return std::vector<hlo::Value>{out, mask};
  });
  return {outs[0], outs[1]};
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  OpCall call{"aten::native_dropout_backward", "", {grad, mask}, {{ElementType::kF32, scale}}};
  return run_op(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_dropout_backward(b, t[0], t[1], s[0])};
  }).at(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", native_dropout);
  m.impl("native_dropout_backward", native_dropout_backward);
}

}  // namespace torch_tpu::aten
