// torch_tpu._C.device: what torch.tpu (torch_tpu/tpu/) needs from C++:
// device index, synchronization, memory statistics, default generators and
// the hooks by which C++ initializes the runtime through Python.
#include <pybind11/pybind11.h>

#include <ATen/ops/empty.h>
#include <torch/csrc/Event.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/autograd.h>

#include <c10/util/Exception.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "aten/allocator.h"
#include "aten/deferred_checks.h"
#include "aten/device_guard.h"
#include "aten/fused_graph.h"
#include "aten/generator.h"
#include "aten/memory_limit.h"
#include "aten/trace_profiler.h"
#include "python/bindings.h"
#include "runtime/buffer_release.h"
#include "runtime/current_device.h"
#include "runtime/device_buffer.h"
#include "runtime/device_queue.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

bool python_usable() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// The Python callables stay alive for the life of the process: C++ may call
// them from any thread at any time.
void set_runtime_callbacks(py::object initialize, py::object is_available) {
  auto* init = new py::object(std::move(initialize));
  auto* probe = new py::object(std::move(is_available));
  aten::RuntimeCallbacks callbacks;
  callbacks.initialize = [init] {
    TORCH_CHECK(python_usable(), "cannot initialize the tpu runtime while Python shuts down");
    py::gil_scoped_acquire gil;
    try {
      (*init)();
    } catch (py::error_already_set& e) {
      TORCH_CHECK(false, "initializing the tpu runtime failed: ", e.what());
    }
  };
  callbacks.is_available = [probe] {
    if (!python_usable()) return false;
    py::gil_scoped_acquire gil;
    try {
      return py::bool_((*probe)()).cast<bool>();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("torch.tpu.is_available");
      return false;
    }
  };
  aten::set_runtime_callbacks(std::move(callbacks));
}

c10::DeviceIndex checked(int device) {
  TORCH_CHECK(device >= -128 && device < 128, "tpu error: invalid device ordinal: tpu:", device);
  auto index = static_cast<c10::DeviceIndex>(device);
  aten::check_device_index(index);
  return index;
}

py::dict memory_stats(int device) {
  auto& stats = runtime::memory_stats(checked(device));
  py::dict d;
  d["allocated"] = stats.allocated.load();
  d["peak"] = stats.peak.load();
  d["num_buffers"] = stats.num_buffers.load();
  d["num_allocs"] = stats.num_allocs.load();
  d["num_frees"] = stats.num_frees.load();
  return d;
}

// See torch_tpu/_exit.py. An empty backward through every device, from a
// new thread: it queues behind whatever graph task a device's autograd
// thread still holds, so that one is freed (with the Python objects it
// holds) while Python can still take them; and a new thread's state holds
// no Python objects, so its own task can be freed at any time. A backward
// still running at exit (on a daemon thread) is waited for at most
// kExitWait, as PyTorch's own shutdown waits for its device threads.
void release_autograd_graph_tasks(int devices) {
  constexpr std::chrono::seconds kExitWait(10);
  py::gil_scoped_release release;
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  std::thread worker([devices, finished] {
    try {
      for (int i = 0; i < devices; ++i) {
        const auto options = at::TensorOptions().device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(i));
        at::Tensor leaf = at::empty({0}, options).requires_grad_();
        torch::autograd::backward({leaf}, {at::empty({0}, options)});
      }
    } catch (const std::exception&) {
      // Exiting: a device that cannot run this has no graph task to wait for.
    }
    finished->set_value();
  });
  if (done.wait_for(kExitWait) == std::future_status::ready) {
    worker.join();
  } else {
    worker.detach();
  }
}

// See torch_tpu/_exit.py. Waits for every program and transfer launched
// on the devices: the process's static destructors would otherwise tear the
// plugin down under a running program (a segfault at exit). Errors of that
// work are not raised any more: nothing can read its results. A forked
// child's copies of the parent's events never fire, so it waits for none.
void wait_for_launched_work(int devices) {
  if (aten::in_bad_fork()) return;
  py::gil_scoped_release release;
  for (int i = 0; i < devices; ++i) {
    try {
      runtime::synchronize(i);
    } catch (const std::exception&) {
      // Exiting: the error belongs to results nobody will read.
    }
  }
  runtime::stop_deferred_release();
}

}  // namespace

void bind_device(py::module_& m) {
  auto d = m.def_submodule("device", "The tpu device as torch.tpu sees it");
  d.def("has_device_trace", &aten::has_device_trace,
        "Whether torch.profiler traces get device rows (not in builds against PyTorch 2.11)");
  d.def("set_runtime_callbacks", &set_runtime_callbacks, py::arg("initialize"),
        py::arg("is_available"),
        "Registers how C++ creates the runtime and probes for a plugin (once, at import)");
  // torch.Event.elapsed_time accepts exactly torch.Event as its argument,
  // not torch.tpu.Event (a subclass): this takes either.
  d.def("event_elapsed_time", [](py::object start, py::object end) {
    TORCH_CHECK_TYPE(THPEvent_Check(start.ptr()) && THPEvent_Check(end.ptr()),
                     "elapsed_time: expected torch.Event objects");
    const c10::Event& a = reinterpret_cast<THPEvent*>(start.ptr())->event;
    const c10::Event& b = reinterpret_cast<THPEvent*>(end.ptr())->event;
    return a.elapsedTime(b);
  }, py::arg("start"), py::arg("end"));
  d.def("device_count", [] { return static_cast<int>(aten::runtime_device_count()); },
        "Devices of the runtime; 0 before it is initialized");
  d.def("is_in_bad_fork", &aten::in_bad_fork);
  d.def("check_device", [](int device) { checked(device); }, py::arg("device"),
        "Raises torch.AcceleratorError unless the index names a device");
  d.def("current_device", [] { return static_cast<int>(aten::current_device_index()); });
  d.def("set_device", [](int device) {
    if (device < 0) return;
    runtime::set_current_device(checked(device));
  }, py::arg("device"), "Validates and sets the current device; negative: no-op");
  d.def("exchange_device", [](int device) -> int {
    if (device < 0) return -1;
    return aten::exchange_device_index(checked(device));
  }, py::arg("device"));
  d.def("synchronize", [](int device) {
    c10::DeviceIndex index = checked(device);
    {
      py::gil_scoped_release release;
      aten::synchronize_device(index);
    }
    aten::raise_failed_checks();
  }, py::arg("device"));
  d.def("is_idle", [](int device) { return runtime::is_idle(checked(device)); },
        py::arg("device"));
  d.def("memory_stats", &memory_stats, py::arg("device"),
        "Live device buffers: allocated and peak bytes, buffer count, cumulative allocations");
  d.def("empty_cache", [] {
    py::gil_scoped_release release;
    aten::release_dropped_buffers();
  }, "Hands dropped buffers not yet destroyed back to the plugin (torch.tpu.empty_cache)");
  d.def("buffers_awaiting_release", [](int device) {
    return runtime::buffers_awaiting_release(checked(device));
  }, py::arg("device"), "Buffers dropped on the device and not yet handed back to the plugin");
  d.def("set_memory_fraction", [](double fraction, int device) {
    aten::set_memory_fraction(checked(device), fraction);
  }, py::arg("fraction"), py::arg("device"), "Caps the process's device memory (set_per_process_memory_fraction)");
  d.def("memory_fraction", [](int device) { return aten::memory_fraction(checked(device)); }, py::arg("device"));
  d.def("reset_peak_memory_stats", [](int device) {
    runtime::memory_stats(checked(device)).reset_peak();
  }, py::arg("device"));
  d.def("release_autograd_graph_tasks", &release_autograd_graph_tasks, py::arg("devices"),
        "Waits until no autograd device thread holds a finished graph task (run at exit)");
  d.def("wait_for_launched_work", &wait_for_launched_work, py::arg("devices"),
        "Waits for all work launched on the devices, raising none of its errors (run at exit)");
  d.def("default_generator", [](int device) {
    const at::Generator& generator = aten::default_generator(checked(device));
    PyObject* object = THPGenerator_initDefaultGenerator(generator);
    if (object == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(object);
  }, py::arg("device"), "The device's default torch.Generator (a new Python handle)");
}

}  // namespace torch_tpu::python
