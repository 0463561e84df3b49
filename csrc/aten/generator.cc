#include "aten/generator.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <mutex>

#include "aten/device_guard.h"
#include "aten/graph_capture.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device_index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device_index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t TpuGeneratorImpl::current_seed() const { return seed_; }

uint64_t TpuGeneratorImpl::seed() {
  uint64_t random = c10::detail::getNonDeterministicRandom();
  set_current_seed(random);
  return random;
}

void TpuGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }

uint64_t TpuGeneratorImpl::get_offset() const { return offset_; }

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({kStateSize}, c10::ScalarType::Byte);
  auto* bytes = static_cast<uint8_t*>(state.mutable_data_ptr());
  // Host byte order; every host torch_tpu supports is little-endian.
  std::memcpy(bytes, &seed_, sizeof(seed_));
  std::memcpy(bytes + sizeof(seed_), &offset_, sizeof(offset_));
  return state.getIntrusivePtr();
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  TORCH_CHECK(new_state.numel() == kStateSize, "tpu RNG state must hold ", kStateSize,
              " bytes (seed and offset), got ", new_state.numel());
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, bytes, sizeof(seed_));
  std::memcpy(&offset_, bytes + sizeof(seed_), sizeof(offset_));
}

c10::intrusive_ptr<c10::GeneratorImpl> TpuGeneratorImpl::graphsafe_get_state() const {
  return clone();
}

void TpuGeneratorImpl::graphsafe_set_state(const c10::intrusive_ptr<c10::GeneratorImpl>& state) {
  const auto* other = dynamic_cast<const TpuGeneratorImpl*>(state.get());
  TORCH_CHECK(other != nullptr, "expected the state of a tpu generator, got one of a ",
              state ? state->device().str() : std::string("null"), " generator");
  seed_ = other->seed_;
  offset_ = other->offset_;
}

std::pair<uint64_t, uint64_t> TpuGeneratorImpl::next_seed_offset(uint64_t increment) {
  uint64_t offset = offset_;
  offset_ += increment;
  return {seed_, offset};
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* copy = new TpuGeneratorImpl(device().index());
  copy->seed_ = seed_;
  copy->offset_ = offset_;
  return copy;
}

std::pair<uint64_t, uint64_t> next_seed_offset(const std::optional<at::Generator>& generator,
                                               c10::DeviceIndex device, uint64_t increment) {
  at::Generator gen = generator.has_value() && generator->defined() ? *generator
                                                                    : default_generator(device);
  TORCH_CHECK(gen.device().type() == c10::DeviceType::PrivateUse1,
              "expected a tpu generator for a random op on tpu, got a generator on ",
              gen.device());
  auto* impl = gen.get<TpuGeneratorImpl>();
  std::pair<uint64_t, uint64_t> drawn;
  {
    std::lock_guard<std::mutex> lock(impl->mutex_);
    drawn = impl->next_seed_offset(increment);
  }
  note_random_draw(gen, drawn.first, drawn.second, increment);
  return drawn;
}

at::Generator new_generator(c10::DeviceIndex device_index) {
  c10::DeviceIndex index = resolve_device_index(device_index);
  check_device_index(index);
  return at::make_generator<TpuGeneratorImpl>(index);
}

const at::Generator& default_generator(c10::DeviceIndex device_index) {
  static std::once_flag once[runtime::kMaxDevices];
  static at::Generator generators[runtime::kMaxDevices];
  c10::DeviceIndex index = resolve_device_index(device_index);
  check_device_index(index);
  std::call_once(once[index], [index] {
    generators[index] = at::make_generator<TpuGeneratorImpl>(index);
  });
  return generators[index];
}

}  // namespace torch_tpu::aten
