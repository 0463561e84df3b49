// Entry points of the binding files; module.cc calls each once.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tpu::python {

void bind_config(pybind11::module_& m);
void bind_pjrt(pybind11::module_& m);
void bind_hlo(pybind11::module_& m);
void bind_runtime(pybind11::module_& m);
void bind_device(pybind11::module_& m);
void bind_aten(pybind11::module_& m);
void bind_capture(pybind11::module_& m);
void bind_distributed(pybind11::module_& m);
void bind_kernels(pybind11::module_& m);
void bind_memory_history(pybind11::module_& m);

}  // namespace torch_tpu::python
