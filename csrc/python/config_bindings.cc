#include <pybind11/stl.h>

#include "python/bindings.h"
#include "runtime/config.h"

namespace py = pybind11;

namespace torch_tpu::python {

void bind_config(py::module_& m) {
  auto c = m.def_submodule("config", "Environment variables torch_tpu reads");
  c.def("env_vars", [] {
    std::vector<py::tuple> rows;
    for (const config::EnvVar* var : config::all()) {
      rows.push_back(py::make_tuple(var->name, var->default_value, var->meaning));
    }
    return rows;
  }, "(name, default, meaning) for every declared variable");
  c.def("get", [](const std::string& name) {
    return config::get(config::find(name));
  }, "The variable's value, or its default");
}

}  // namespace torch_tpu::python
