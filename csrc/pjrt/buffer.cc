#include "pjrt/buffer.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "pjrt/client.h"
#include "pjrt/element_types.h"

namespace torch_tpu::pjrt {

Buffer::Buffer(std::shared_ptr<const Client> client, c::Buffer* buffer)
    : client_(std::move(client)), buffer_(buffer) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    buffer_ = std::exchange(other.buffer_, nullptr);
  }
  return *this;
}

const c::Api* Buffer::api() const { return client_->api(); }

c::Buffer* Buffer::release() { return std::exchange(buffer_, nullptr); }

void Buffer::reset() {
  if (buffer_ == nullptr) return;
  auto args = c::make_args<c::BufferArgs>();
  args.buffer = std::exchange(buffer_, nullptr);
  if (c::Error* error = api()->Buffer_Destroy(&args)) {
    (void)consume_error(api(), error, "PJRT_Buffer_Destroy");
  }
}

ElementType Buffer::element_type() const {
  auto args = c::make_args<c::BufferElementTypeArgs>();
  args.buffer = buffer_;
  check(api(), api()->Buffer_ElementType(&args), "PJRT_Buffer_ElementType");
  auto type = from_pjrt(args.type);
  if (!type) {
    throw std::runtime_error("PJRT buffer has an element type (" +
                             std::to_string(static_cast<int>(args.type)) +
                             ") that torch-tpu does not map");
  }
  return *type;
}

std::vector<int64_t> Buffer::dims() const {
  auto args = c::make_args<c::BufferDimensionsArgs>();
  args.buffer = buffer_;
  check(api(), api()->Buffer_Dimensions(&args), "PJRT_Buffer_Dimensions");
  return std::vector<int64_t>(args.dims, args.dims + args.num_dims);
}

size_t Buffer::on_device_size() const {
  auto args = c::make_args<c::BufferOnDeviceSizeArgs>();
  args.buffer = buffer_;
  check(api(), api()->Buffer_OnDeviceSizeInBytes(&args),
        "PJRT_Buffer_OnDeviceSizeInBytes");
  return args.on_device_size_in_bytes;
}

size_t Buffer::host_size() const {
  size_t n = element_size(element_type());
  for (int64_t d : dims()) n *= static_cast<size_t>(d);
  return n;
}

bool Buffer::is_deleted() const {
  auto args = c::make_args<c::BufferIsDeletedArgs>();
  args.buffer = buffer_;
  check(api(), api()->Buffer_IsDeleted(&args), "PJRT_Buffer_IsDeleted");
  return args.is_deleted;
}

Event Buffer::to_host_async(void* dst, size_t size) const {
  if (buffer_ == nullptr) {
    throw std::runtime_error("device-to-host copy from an empty buffer");
  }
  // A null destination would turn the call into a size query; an empty
  // buffer has nothing to copy anyway.
  if (size == 0) return Event();
  auto args = c::make_args<c::BufferToHostArgs>();
  args.src = buffer_;
  args.dst = dst;
  args.dst_size = size;
  check(api(), api()->Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  return Event(api(), args.event);
}

Event Buffer::ready_event() const {
  auto args = c::make_args<c::BufferReadyEventArgs>();
  args.buffer = buffer_;
  check(api(), api()->Buffer_ReadyEvent(&args), "PJRT_Buffer_ReadyEvent");
  return Event(api(), args.event);
}

}  // namespace torch_tpu::pjrt
