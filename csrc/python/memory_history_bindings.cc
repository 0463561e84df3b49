// torch_tpu._C.memory_history: the recorder behind
// torch.tpu.memory._record_memory_history and _snapshot
// (csrc/aten/memory_history.h), and the snapshot as the dictionary
// torch.cuda.memory._snapshot() returns.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/profiler/combined_traceback.h>

#include <c10/util/Exception.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/memory_history.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

namespace mh = aten::memory_history;

mh::Context parse_context(const std::optional<std::string>& context) {
  if (!context) return mh::Context::kNone;
  if (*context == "state") return mh::Context::kState;
  if (*context == "alloc") return mh::Context::kAlloc;
  if (*context == "all") return mh::Context::kAll;
  TORCH_CHECK_VALUE(false, "_record_memory_history: context must be None, 'state', 'alloc' or 'all', got '",
                    *context, "'");
}

mh::Action parse_action(const std::string& name) {
  for (int i = 0; i < mh::kActionCount; ++i) {
    const auto action = static_cast<mh::Action>(i);
    if (name == mh::action_name(action)) return action;
  }
  TORCH_CHECK_VALUE(false, "_record_memory_history: skip_actions names an unknown action '", name,
                    "' (tpu records 'alloc', 'free_requested', 'free_completed' and 'oom')");
}

void configure(bool trace, const std::optional<std::string>& context, bool cpp_frames, size_t max_entries,
               const std::vector<std::string>& skip_actions, bool clear_trace) {
  mh::Settings settings;
  settings.trace = trace;
  settings.context = parse_context(context);
  settings.cpp_frames = cpp_frames;
  settings.max_entries = max_entries;
  for (const std::string& name : skip_actions) {
    // CUDA's caching-allocator actions: tpu never records them.
    if (name == "segment_alloc" || name == "segment_free" || name == "snapshot") continue;
    settings.skip.push_back(parse_action(name));
  }
  mh::configure(settings, clear_trace);
}

// The snapshot, with every recorded stack symbolized in one batch; a
// frame shared by many stacks becomes one Python dict.
py::dict snapshot(int device_count) {
  mh::State state = mh::snapshot();
  std::vector<torch::CapturedTraceback*> stacks;
  auto has_frames = [](const mh::Stack& stack) { return stack && stack->traceback; };
  auto add = [&](const mh::Stack& stack) {
    if (has_frames(stack)) stacks.push_back(stack->traceback.get());
  };
  for (const mh::Block& b : state.blocks) add(b.stack);
  for (const mh::Event& e : state.trace) add(e.stack);
  const torch::SymbolizedTracebacks symbolized = torch::symbolize(stacks);
  std::vector<py::dict> frame_dicts;
  frame_dicts.reserve(symbolized.all_frames.size());
  for (const auto& f : symbolized.all_frames) {
    py::dict frame;
    frame["filename"] = f.filename;
    frame["line"] = f.lineno;
    frame["name"] = f.funcname;
    frame_dicts.push_back(std::move(frame));
  }
  size_t next = 0;
  auto frames = [&](const mh::Stack& stack) {
    py::list list;
    if (has_frames(stack)) {
      for (uint64_t i : symbolized.tracebacks.at(next++)) list.append(frame_dicts.at(i));
    }
    return list;
  };

  py::list segments;
  for (const mh::Block& b : state.blocks) {
    py::list block_frames = frames(b.stack);
    py::dict block;
    block["address"] = b.address;
    block["size"] = b.bytes;
    block["requested_size"] = b.bytes;
    block["state"] = "active_allocated";
    block["frames"] = block_frames;
    py::dict segment;
    segment["device"] = b.device;
    segment["address"] = b.address;
    segment["total_size"] = b.bytes;
    segment["allocated_size"] = b.bytes;
    segment["active_size"] = b.bytes;
    segment["requested_size"] = b.bytes;
    segment["stream"] = 0;
    segment["segment_type"] = b.bytes > (1 << 20) ? "large" : "small";
    segment["segment_pool_id"] = py::make_tuple(0, 0);
    segment["is_expandable"] = false;
    segment["frames"] = block_frames;
    py::list blocks;
    blocks.append(block);
    segment["blocks"] = blocks;
    segments.append(segment);
  }

  py::list device_traces;
  for (int d = 0; d < device_count; ++d) device_traces.append(py::list());
  for (const mh::Event& e : state.trace) {
    py::dict entry;
    entry["action"] = mh::action_name(e.action);
    entry["addr"] = e.address;
    entry["size"] = e.bytes;
    entry["stream"] = 0;
    entry["time_us"] = e.time_us;
    entry["frames"] = frames(e.stack);
    if (e.action == mh::Action::kOom) entry["device_free"] = e.device_free;
    if (e.device >= 0 && e.device < device_count) device_traces[e.device].cast<py::list>().append(entry);
  }

  py::dict settings;
  settings["caching_allocator"] = false;
  py::dict out;
  out["segments"] = segments;
  out["device_traces"] = device_traces;
  out["allocator_settings"] = settings;
  return out;
}

}  // namespace

void bind_memory_history(py::module_& m) {
  auto h = m.def_submodule("memory_history", "Stacks of live device buffers and a trace of allocations");
  h.def("configure", &configure, py::arg("trace"), py::arg("context"), py::arg("cpp_frames"),
        py::arg("max_entries"), py::arg("skip_actions"), py::arg("clear_trace"));
  h.def("snapshot", &snapshot, py::arg("device_count"));
}

}  // namespace torch_tpu::python
