// The tpu random number generator: a (seed, offset) pair for a
// counter-based generator on the device. A random op takes the generator's
// seed and current offset as runtime inputs of its program (never as
// constants, so a new offset does not recompile) and advances the offset by
// the number of counter values it consumes. The same seed and offset give
// the same numbers.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace torch_tpu::aten {

class TpuGeneratorImpl : public c10::GeneratorImpl {
 public:
  // Size of get_state(): the seed then the offset, 64-bit little-endian each.
  static constexpr int64_t kStateSize = 16;

  explicit TpuGeneratorImpl(c10::DeviceIndex device_index);
  ~TpuGeneratorImpl() override = default;

  // Sets the seed and restarts the offset at 0.
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  // Seeds from a nondeterministic source; returns the new seed.
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;

  // A CPU uint8 tensor of kStateSize bytes.
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  // Generator.clone_state() / graphsafe_set_state(): an independent copy,
  // and setting from another tpu generator's (seed, offset).
  c10::intrusive_ptr<c10::GeneratorImpl> graphsafe_get_state() const override;
  void graphsafe_set_state(const c10::intrusive_ptr<c10::GeneratorImpl>& state) override;

  // The (seed, offset) a random op runs with; advances the offset by
  // `increment`. Callers hold mutex_ (see Note [Acquire lock when using
  // random generators] in PyTorch).
  std::pair<uint64_t, uint64_t> next_seed_offset(uint64_t increment);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  TpuGeneratorImpl* clone_impl() const override;

  uint64_t seed_ = c10::default_rng_seed_val;
  uint64_t offset_ = 0;
};

// What a random op on `device` runs with: the (seed, offset) of `generator`
// when one is given (it must be a tpu generator), else of the device's
// default generator; advances that generator's offset by `increment` (the
// counter values the op consumes). Takes the generator's lock.
std::pair<uint64_t, uint64_t> next_seed_offset(const std::optional<at::Generator>& generator,
                                               c10::DeviceIndex device, uint64_t increment);

// A new generator on `device_index` (-1: the current device), seeded with
// PyTorch's default seed. Validates the index.
at::Generator new_generator(c10::DeviceIndex device_index);

// The default generator of a device (-1: the current device), created on
// first use with PyTorch's default seed, as CUDA's are. Validates the index.
const at::Generator& default_generator(c10::DeviceIndex device_index);

}  // namespace torch_tpu::aten
