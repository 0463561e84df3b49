// torch_tpu._C.runtime: the process-wide runtime and its compile cache.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "cache/warnings.h"
#include "pjrt/executable.h"
#include "python/bindings.h"
#include "runtime/microbench.h"
#include "runtime/runtime.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

using runtime::Runtime;

py::dict stats_dict(const cache::CacheStats& s) {
  py::dict d;
  d["requests"] = s.requests;
  d["memory_hits"] = s.memory_hits;
  d["disk_hits"] = s.disk_hits;
  d["hits"] = s.memory_hits + s.disk_hits;
  d["compiles"] = s.compiles;
  d["compile_seconds"] = s.compile_seconds;
  d["disk_load_seconds"] = s.disk_load_seconds;
  d["disk_writes"] = s.disk_writes;
  d["disk_errors"] = s.disk_errors;
  return d;
}

void set_warning_handler(py::object handler) {
  if (handler.is_none()) {
    cache::set_warning_handler({});
    return;
  }
  // Kept alive for the life of the process: warnings may come from plugin
  // threads at any time, including interpreter shutdown.
  auto* held = new py::object(std::move(handler));
  cache::set_warning_handler([held](const std::string& message) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
      (*held)(message);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("torch_tpu warning handler");
    }
  });
}

}  // namespace

void bind_runtime(py::module_& m) {
  auto r = m.def_submodule("runtime", "The process-wide runtime");
  r.def("initialize", [](const std::string& plugin_path, const std::string& default_options) {
    py::gil_scoped_release release;
    Runtime::initialize(plugin_path, default_options);
  }, py::arg("plugin_path"), py::arg("default_options") = "");
  r.def("is_initialized", &Runtime::is_initialized);
  r.def("client", [] { return Runtime::get().client_ptr(); });
  r.def("plugin", [] {
    // The plugin is owned by the client; share it without copying.
    const auto& client = Runtime::get().client_ptr();
    return std::shared_ptr<pjrt::Plugin>(client, const_cast<pjrt::Plugin*>(&client->plugin()));
  });
  r.def("cache_dir", [] { return Runtime::get().cache_dir(); });
  r.def("cache_stats", [] { return stats_dict(Runtime::get().compile_cache().stats()); });
  r.def("reset_cache_stats", [] { Runtime::get().compile_cache().reset_stats(); });
  r.def("clear_cache_memory", [] { Runtime::get().compile_cache().clear_memory(); });
  r.def("cache_memory_entries", [] { return Runtime::get().compile_cache().memory_entries(); });
  r.def("compile", [](const std::string& program, std::optional<std::string> key) {
    py::gil_scoped_release release;
    auto& cache = Runtime::get().compile_cache();
    return cache.get_or_compile(key ? *key : program, [&] { return program; });
  }, py::arg("program"), py::arg("key") = py::none(),
     "Compiles a StableHLO module through the shared cache; `key` defaults to the text.");
  r.def("set_warning_handler", &set_warning_handler);
  r.def("time_cached_launch", [](const std::string& key, const std::string& program,
                                 const std::vector<std::shared_ptr<pjrt::Buffer>>& args,
                                 int device, int iterations) {
    std::vector<pjrt::c::Buffer*> raw;
    for (const auto& b : args) raw.push_back(b->get());
    py::gil_scoped_release release;
    return runtime::time_cached_launch(Runtime::get().compile_cache(), key, program, raw,
                                       device, iterations);
  });
}

}  // namespace torch_tpu::python
