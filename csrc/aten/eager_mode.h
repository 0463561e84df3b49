// The eager execution mode. All three run the same lowerings through the
// same compile cache; only the moment a program runs differs:
//   strict  each op is one program, compiled once, launched asynchronously
//   fused   ops are recorded into a deferred graph per device and run as one
//           program at a sync point (fused_graph.h)
//   debug   like strict, but the host waits for each op to finish, so an
//           error surfaces at the op that caused it
#pragma once

#include <optional>
#include <string>

namespace torch_tpu::aten {

enum class EagerMode { kStrict, kFused, kDebug };

// The calling thread's mode: its own if set, else the process's (the first
// call reads TORCH_TPU_EAGER_MODE).
EagerMode eager_mode();

// Switches the mode. Leaving fused mode materializes every pending graph
// first, so no value computed under one mode waits on another.
void set_eager_mode(EagerMode mode);

// A mode for the calling thread alone, over the process's (nullopt: follow
// the process's again). torch.compile's graph runner records a graph this
// way, so calls in several threads neither switch each other's mode nor
// leave the process in fused mode. Leaving fused materializes the thread's
// graphs. Returns the thread's previous setting.
std::optional<EagerMode> set_thread_eager_mode(std::optional<EagerMode> mode);

// Whether the calling thread has a mode of its own (set_thread_eager_mode):
// it records a torch.compile graph or a device graph capture, programs
// that must stay whole.
bool thread_has_own_eager_mode();

const char* eager_mode_name(EagerMode mode);
// Throws c10::Error (ValueError in Python) for an unknown name.
EagerMode parse_eager_mode(const std::string& name);

}  // namespace torch_tpu::aten
