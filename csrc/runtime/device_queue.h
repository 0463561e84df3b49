// Completion tracking per device. Every launch (execution or transfer)
// hands its completion event here; synchronize() waits for all of them.
// The device behaves as one in-order queue: data dependencies between
// programs are ordered by PJRT through buffer definition events, and the
// host waits only at sync points.
#pragma once

#include <cstdint>

#include "pjrt/event.h"
#include "runtime/device_time.h"

namespace torch_tpu::runtime {

// Records work on `device` that completes when `done` fires. Errors of
// asynchronous work surface at the next synchronize() of that device.
// `launch_ns`, the steady-clock time the launch began (a plugin may run
// small programs inside the launch call), feeds the profiler's busy clock
// (device_time.h); -1 means now. `label` names the work in trace profiles.
void track_completion(int device, pjrt::Event done, int64_t launch_ns = -1, const LaunchLabel& label = {});

// Blocks until all work launched on `device` so far has completed; then
// throws the first error any of it produced.
void synchronize(int device);

// True when all work launched on `device` has completed.
bool is_idle(int device);

}  // namespace torch_tpu::runtime
