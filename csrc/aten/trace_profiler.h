// torch.profiler's device rows: a Kineto activity profiler for the tpu.
//
// With ProfilerActivity.PrivateUse1 (`torch.profiler.profile(activities=
// [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])`), PyTorch asks the
// registered activity profiler for device activities. Ours reports every
// program launch as a kernel activity, and every copy between host and
// device as a memcpy activity: its op's name, its span on the
// device's busy clock (runtime/device_time.h: from its launch, or the
// previous completion when later, to its completion) and the correlation id
// of the host op that launched it, so the trace shows device rows linked to
// the ops and key_averages() gets device time per op.
#pragma once

#include <cstdint>

namespace torch_tpu::aten {

// The correlation id of the op running on this thread while a trace
// session records (0 otherwise): what a launch is linked to.
uint64_t trace_correlation_id();

// Whether this build has the activity profiler: PyTorch 2.11 has no way to
// register one for PrivateUse1, so a build against it has none.
bool has_device_trace();

}  // namespace torch_tpu::aten
