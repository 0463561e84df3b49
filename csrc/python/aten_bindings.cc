// torch_tpu._C.aten: switches of the ATen layer (CPU fallback).
#include <pybind11/stl.h>

#include "aten/fallback.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace torch_tpu::python {

void bind_aten(py::module_& m) {
  auto a = m.def_submodule("aten", "The ATen layer's switches");
  a.def("set_cpu_fallback", &aten::set_cpu_fallback_enabled, py::arg("enabled"));
  a.def("cpu_fallback_enabled", &aten::cpu_fallback_enabled);
  a.def("cpu_fallback_counts", &aten::cpu_fallback_counts);
  a.def("reset_cpu_fallback_counts", &aten::reset_cpu_fallback_counts);
}

}  // namespace torch_tpu::python
