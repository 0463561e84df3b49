// An owned device buffer (PJRT_Buffer). Device memory is never assumed to
// be host-addressable: data moves only through explicit transfers.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/element_type.h"
#include "pjrt/c_api.h"
#include "pjrt/event.h"

namespace torch_tpu::pjrt {

class Client;

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<const Client> client, c::Buffer* buffer);
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  bool valid() const { return buffer_ != nullptr; }
  c::Buffer* get() const { return buffer_; }
  // Gives up ownership (e.g. after the buffer was donated to an execution).
  c::Buffer* release();

  ElementType element_type() const;
  std::vector<int64_t> dims() const;
  size_t on_device_size() const;
  // Dense row-major size of the contents on the host.
  size_t host_size() const;
  bool is_deleted() const;

  // Starts copying the whole buffer into `dst` (dense, row-major, `size`
  // bytes) and returns the completion event. `dst` must stay valid until it
  // fires.
  Event to_host_async(void* dst, size_t size) const;
  void to_host(void* dst, size_t size) const { to_host_async(dst, size).await(); }

  // Fires when the buffer's contents are computed.
  Event ready_event() const;

  void reset();

 private:
  const c::Api* api() const;

  std::shared_ptr<const Client> client_;
  c::Buffer* buffer_ = nullptr;
};

}  // namespace torch_tpu::pjrt
