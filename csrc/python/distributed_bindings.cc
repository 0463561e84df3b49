// torch_tpu._C.distributed: the c10d backend class, made by the Python
// creator that torch_tpu.distributed registers with torch.distributed.
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "distributed/process_group_tpu.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace torch_tpu::python {

void bind_distributed(py::module_& m) {
  // c10d's Backend class must be known to pybind before a subclass is bound;
  // torch.distributed registers it.
  py::module_::import("torch.distributed");
  auto d = m.def_submodule("distributed", "the c10d backend \"tpu\"");
  py::class_<distributed::ProcessGroupTPU, c10d::Backend,
             c10::intrusive_ptr<distributed::ProcessGroupTPU>>(
      d, "ProcessGroupTPU",
      "torch.distributed's collectives on tpu tensors, through a host "
      "backend that moves the data between processes")
      .def(py::init<c10::intrusive_ptr<c10d::Backend>, int, int>(),
           py::arg("host"), py::arg("rank"), py::arg("size"))
      // dist.split_group deep-copies the parent backend's options for the
      // split; gloo's (the host's) cannot be copied from Python. None lets
      // ProcessGroup::splitGroup take them from getBackendOptions instead.
      .def_property_readonly("options", [](const distributed::ProcessGroupTPU&) { return py::none(); })
      // dist.new_group asks the ranks left out of a new group to take part
      // in splitting the bound default group (NCCL's ncclCommSplit needs
      // every rank). Here the members build the new group's host backend
      // through the store by themselves: the others have nothing to do.
      .def("perform_nocolor_split", [](distributed::ProcessGroupTPU&, const py::object& /*device*/) {});
}

}  // namespace torch_tpu::python
