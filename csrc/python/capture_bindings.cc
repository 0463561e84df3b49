// torch_tpu._C.capture: graph capture and replay for torch.compile's graph
// runner (csrc/aten/graph_capture.h).
#include <torch/csrc/utils/pybind.h>

#include <pybind11/stl.h>

#include "aten/graph_capture.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace torch_tpu::python {

void bind_capture(py::module_& m) {
  auto c = m.def_submodule("capture", "Capturing a compiled graph's call and replaying its program");
  py::class_<aten::ReplayPlan, std::shared_ptr<aten::ReplayPlan>>(c, "ReplayPlan")
      .def("replay", &aten::ReplayPlan::replay, py::arg("inputs"), py::call_guard<py::gil_scoped_release>(),
           "The graph's tensor outputs on `inputs`, or None when they do not fit the capture");
  py::class_<aten::GraphCapture>(c, "GraphCapture")
      .def(py::init<const std::vector<at::Tensor>&>(), py::arg("inputs"), py::call_guard<py::gil_scoped_release>())
      .def("finish", &aten::GraphCapture::finish, py::arg("outputs"), py::call_guard<py::gil_scoped_release>())
      .def("abandon", &aten::GraphCapture::abandon)
      .def_property_readonly("failure", &aten::GraphCapture::failure)
      .def_property_readonly("transient", &aten::GraphCapture::transient)
      .def_property_readonly("signature", [](const aten::GraphCapture& g) { return py::bytes(g.signature()); })
      .def("plan", &aten::GraphCapture::plan);
}

}  // namespace torch_tpu::python
