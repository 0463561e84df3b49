// torch_tpu._C.kernels: custom kernels (csrc/aten/custom_kernel.h), the
// layer under torch_tpu.kernels.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/stl.h>

#include "aten/custom_kernel.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace torch_tpu::python {

void bind_kernels(py::module_& m) {
  auto k = m.def_submodule("kernels", "Custom kernels: StableHLO modules run as tpu ops");
  using Kernel = aten::CustomKernel;
  py::class_<Kernel, std::shared_ptr<Kernel>>(k, "Kernel")
      .def_property_readonly("name", [](const Kernel& kernel) { return kernel.op_name; })
      .def_property_readonly("symbol", [](const Kernel& kernel) { return kernel.function.symbol; })
      .def_property_readonly("text", [](const Kernel& kernel) { return kernel.function.text; },
                             "The module's functions as they are added to a calling program")
      .def_property_readonly("function", [](const Kernel& kernel) { return kernel.function; })
      .def_property_readonly("result_types", [](const Kernel& kernel) {
        py::list out;
        for (const hlo::TensorType& t : kernel.function.result_types) {
          out.append(py::make_tuple(std::string(short_name(t.dtype)), py::tuple(py::cast(t.dims))));
        }
        return out;
      }, "(dtype, shape) of each result, as hlo.ImportedFunction.result_types")
      .def("__call__", [](const Kernel& kernel, const std::vector<at::Tensor>& inputs) {
        // Warnings (recompile explanations) become Python warnings, as
        // those of PyTorch's own bindings do, instead of going to stderr.
        torch::PyWarningHandler warnings;
        std::vector<at::Tensor> out;
        {
          py::gil_scoped_release release;
          out = aten::run_custom_kernel(kernel, inputs);
        }
        return out;
      }, py::arg("inputs"))
      .def("__repr__", [](const Kernel& kernel) { return "<torch_tpu kernel " + kernel.op_name + " @" +
                                                         kernel.function.symbol + ">"; });
  k.def("import_kernel", [](std::string name, const std::string& module_text) {
    return std::const_pointer_cast<Kernel>(aten::import_custom_kernel(std::move(name), module_text));
  }, py::arg("name"), py::arg("module_text"));
}

}  // namespace torch_tpu::python
