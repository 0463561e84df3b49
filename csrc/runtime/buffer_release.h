// Frees device buffers on a background thread.
//
// PJRT lets a buffer be destroyed while programs that use it still run, but
// some plugins make the call wait for them: XLA's CPU client blocks
// PJRT_Buffer_Destroy until the executions holding the buffer finish. The
// last reference to a tensor's storage usually goes on the thread that
// records the next ops (the autograd engine freeing saved activations at the
// end of backward, an optimizer dropping its temporaries), so destroying
// there would make the host wait for the device at every such point, where
// CUDA's caching allocator returns at once. Buffers dropped by the runtime
// are therefore handed to one release thread, which destroys them in the
// order they came (waiting there, if the plugin waits).
//
// The memory statistics count a buffer out when it is dropped, as before;
// the plugin gets its memory back when the release thread reaches it, and
// at the latest at the next synchronize of its device.
#pragma once

#include <cstdint>

#include "pjrt/buffer.h"

namespace torch_tpu::runtime {

// Destroys `buffer` on the release thread (on the calling thread once
// release has been stopped, and in a forked child, which has no such
// thread).
void release_later(int device, pjrt::Buffer buffer);

// Destroys, on the calling thread, every buffer of `device` handed over so
// far and not yet taken by the release thread, and waits for the thread to
// finish what it took. Called after a synchronize of the device, when no
// launched work holds them any more, so that the plugin has its memory
// back when synchronize returns.
void release_queued_now(int device);

// Destroys everything still queued, waits for the release thread to finish
// what it took, and from then on destroys buffers where they are dropped.
// Called at exit, after every device's work has finished, so that no
// destroy runs while the process tears the plugin down.
void stop_deferred_release();

// Buffers of `device` dropped and not destroyed yet (0 <= device <
// kMaxDevices).
int64_t buffers_awaiting_release(int device);

}  // namespace torch_tpu::runtime
