// torch_tpu._C.aten: switches of the ATen layer (CPU fallback, eager mode).
#include <pybind11/stl.h>

#include "aten/device_graph.h"
#include "aten/diagnostics.h"
#include "aten/eager_mode.h"
#include "aten/fallback.h"
#include "aten/fused_graph.h"
#include "aten/scalar_cache.h"
#include "python/bindings.h"
#include "runtime/current_device.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

py::dict fused_stats_dict() {
  const aten::FusedStats s = aten::fused_stats();
  py::dict reasons;
  for (int r = 0; r < static_cast<int>(aten::MaterializeReason::kCount); ++r) {
    reasons[aten::materialize_reason_name(static_cast<aten::MaterializeReason>(r))] = s.materializations[r];
  }
  py::dict d;
  d["materializations"] = reasons;
  d["ops_recorded"] = s.ops_recorded;
  d["ops_lowered"] = s.ops_lowered;
  d["graphs_run"] = s.graphs_run;
  d["graph_ops_run"] = s.graph_ops_run;
  d["results_computed"] = s.results_computed;
  d["results_dropped"] = s.results_dropped;
  d["buffers_donated"] = s.buffers_donated;
  d["chain_barriers"] = s.chain_barriers;
  d["kernel_cuts"] = s.kernel_cuts;
  d["shape_churn_ops"] = s.shape_churn_ops;
  d["graphs_replayed"] = s.graphs_replayed;
  return d;
}

}  // namespace

void bind_aten(py::module_& m) {
  auto a = m.def_submodule("aten", "The ATen layer's switches");
  a.def("set_cpu_fallback", &aten::set_cpu_fallback_enabled, py::arg("enabled"));
  a.def("cpu_fallback_enabled", &aten::cpu_fallback_enabled);
  a.def("cpu_fallback_counts", &aten::cpu_fallback_counts);
  a.def("reset_cpu_fallback_counts", &aten::reset_cpu_fallback_counts);
  a.def("eager_mode", [] { return std::string(aten::eager_mode_name(aten::eager_mode())); });
  a.def("set_thread_eager_mode", [](const std::string& name) {
    std::optional<aten::EagerMode> mode;
    if (!name.empty()) mode = aten::parse_eager_mode(name);
    std::optional<aten::EagerMode> previous;
    {
      py::gil_scoped_release release;
      previous = aten::set_thread_eager_mode(mode);
    }
    return previous ? std::string(aten::eager_mode_name(*previous)) : std::string();
  }, py::arg("mode"),
        "Sets the calling thread's own eager mode ('' follows the process's again); returns the previous one");
  a.def("set_eager_mode", [](const std::string& name) {
    aten::EagerMode mode = aten::parse_eager_mode(name);
    py::gil_scoped_release release;
    aten::set_eager_mode(mode);
  }, py::arg("mode"));
  a.def("materialize", [] {
    py::gil_scoped_release release;
    aten::materialize_this_thread(aten::MaterializeReason::kExplicit);
  }, "Runs the calling thread's pending fused graphs now (no wait for their completion)");
  a.def("fused_stats", &fused_stats_dict);
  a.def("graph_capturing", [] { return aten::graph_capturing(runtime::current_device()); },
        "Whether the calling thread is capturing a tpu graph on the current device");
  a.def("reset_fused_stats", &aten::reset_fused_stats);
  a.def("last_graph_text", &aten::last_graph_text);
  a.def("cached_scalar_count", &aten::cached_scalar_count);
  a.def("dump_dir", &aten::dump_dir);
  a.def("set_dump_dir", &aten::set_dump_dir, py::arg("dir"));
  a.def("explain_recompiles", &aten::explain_recompiles);
  a.def("set_explain_recompiles", &aten::set_explain_recompiles, py::arg("on"));
  a.def("recompile_explanations", &aten::recompile_explanations);
  a.def("clear_recompile_explanations", &aten::clear_recompile_explanations);
}

}  // namespace torch_tpu::python
