// Device graphs: torch.accelerator.Graph (and torch.tpu.graph) on tpu.
//
// A CUDA graph captures a stream's kernels once and replays them with one
// launch, reading and writing the same memory each time. A tpu graph does
// the same with programs: between capture_begin() and capture_end() the
// capturing thread's ops, and the backward passes it starts, are recorded
// into one fused graph (fused_graph.h), which the capture's end compiles
// into one program. The capture notes which tensor storages the program's
// arguments were read from and which storages took its results; a replay
// launches the program on those storages' current values and gives them
// the new results. So a replay sees what was written into its input
// tensors since (static_input.copy_(batch)), and the tensors it writes,
// the outputs made inside the capture among them, hold its results.
//
// As on CUDA, the captured work does not take effect at capture: the
// storages that existed before it and the random generators it drew from
// are put back as they were, and each replay draws new random numbers. The
// tensors made inside the capture keep the values the capture computed
// (CUDA leaves them uninitialized until the first replay). Nothing inside
// a capture may wait for a captured result: a copy to the host, item(),
// synchronize() or an op whose result's size depends on values raises.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <string>

#include "aten/deferred_checks.h"
#include "aten/fused_graph.h"
#include "common/element_type.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

// Hooks for what a capture must see; while none records, the two that
// every op meets cost one inline load.

namespace detail {
runtime::DeviceBufferPtr note_graph_read(const c10::Storage& storage, runtime::DeviceBufferPtr value,
                                         ElementType dtype);
void note_graph_write(const c10::Storage& storage, const runtime::DeviceBufferPtr& value);
}  // namespace detail

// A tensor of `dtype` reads `storage`, whose value is `value`. Returns the
// value to read: a storage never written gets zeros first, so that what is
// written into it later reaches replays.
inline runtime::DeviceBufferPtr note_graph_read(const c10::Storage& storage, runtime::DeviceBufferPtr value,
                                                ElementType dtype) {
  return capture_recording() ? detail::note_graph_read(storage, std::move(value), dtype) : value;
}
// `storage` is about to take `value` (set_storage_value, allocator.h).
inline void note_graph_write(const c10::Storage& storage, const runtime::DeviceBufferPtr& value) {
  if (capture_recording()) detail::note_graph_write(storage, value);
}
// A random op drew (seed, offset) from `generator`; a deferred check
// registered `flag` (graph_capture.h forwards both).
void note_graph_draw(const at::Generator& generator, uint64_t seed, uint64_t offset, uint64_t increment);
void note_graph_check(const runtime::DeviceBuffer* flag, CheckError error, const std::string& message);
// A device value is about to be copied to the host: raises on the
// capturing thread.
void check_graph_host_read();

// Whether the calling thread is capturing a graph on `device`
// (torch.Stream.is_capturing()).
bool graph_capturing(int device);

}  // namespace torch_tpu::aten
