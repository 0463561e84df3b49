// torch_tpu._C: the one extension module. Binding files stay thin: they
// convert arguments and forward to the C++ layers.
#include <pybind11/pybind11.h>

#include "python/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch-tpu native core";
  torch_tpu::python::bind_config(m);
  torch_tpu::python::bind_pjrt(m);
  torch_tpu::python::bind_hlo(m);
  torch_tpu::python::bind_runtime(m);
  torch_tpu::python::bind_device(m);
  torch_tpu::python::bind_aten(m);
  torch_tpu::python::bind_capture(m);
  torch_tpu::python::bind_distributed(m);
  torch_tpu::python::bind_kernels(m);
  torch_tpu::python::bind_memory_history(m);
}
