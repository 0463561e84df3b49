// Python view of the PJRT layer: used by the runtime tests, `python -m
// torch_tpu.info` and the benchmarks. Arrays cross as NumPy arrays; bf16
// crosses as its uint16 bit pattern.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <stdexcept>
#include <string>
#include <variant>

#include "pjrt/client.h"
#include "pjrt/executable.h"
#include "pjrt/plugin.h"
#include "python/bindings.h"
#include "python/numpy_types.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

using pjrt::Buffer;
using pjrt::Client;
using pjrt::LoadedExecutable;
using pjrt::Plugin;

// Buffers are shared with Python so that an execute() can take them as
// arguments while Python still holds them.
using BufferPtr = std::shared_ptr<Buffer>;

BufferPtr to_device(const Client& client, const py::object& data,
                    std::optional<std::string> dtype_name, int device) {
  // Anything NumPy can view as an array: arrays, NumPy scalars, lists.
  py::array array = py::array::ensure(data);
  if (!array) {
    PyErr_Clear();
    throw py::type_error("to_device: cannot view a " +
                         std::string(py::str(py::type::of(data).attr("__name__"))) +
                         " as an array");
  }
  ElementType type = dtype_name ? parse_element_type(*dtype_name)
                                : element_type_of(array.dtype());
  if (element_size(type) != static_cast<size_t>(array.itemsize())) {
    throw std::invalid_argument(
        "to_device: array items are " + std::to_string(array.itemsize()) +
        " bytes but " + std::string(short_name(type)) + " needs " +
        std::to_string(element_size(type)));
  }
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  std::vector<int64_t> strides(array.strides(), array.strides() + array.ndim());
  bool negative = false;
  for (int64_t s : strides) negative |= s < 0;
  if (negative) {
    // PJRT takes non-negative byte strides only.
    array = py::array::ensure(array, py::array::c_style);
    strides.assign(array.strides(), array.strides() + array.ndim());
  }
  Buffer buffer = [&] {
    py::gil_scoped_release release;
    return client.buffer_from_host(array.data(), type, dims, strides, device);
  }();
  return std::make_shared<Buffer>(std::move(buffer));
}

// A Python value as an XLA option override: bool, int, float or text.
std::variant<std::string, bool, int64_t, double> option_value(const std::string& name, const py::object& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw py::type_error("compile: option '" + name + "' must be a bool, int, float or str");
}

py::array to_numpy(const Buffer& buffer) {
  ElementType type = buffer.element_type();
  std::vector<int64_t> dims = buffer.dims();
  py::array out(numpy_dtype_of(type), std::vector<py::ssize_t>(dims.begin(), dims.end()));
  size_t size = element_size(type);
  for (int64_t d : dims) size *= static_cast<size_t>(d);
  void* dst = out.mutable_data();
  py::gil_scoped_release release;
  buffer.to_host(dst, size);
  return out;
}

}  // namespace

void bind_pjrt(py::module_& m) {
  auto p = m.def_submodule("pjrt", "PJRT plugin, client, buffers, executables");
  py::register_exception<pjrt::PjrtError>(p, "PjrtError", PyExc_RuntimeError);

  py::class_<Plugin, std::shared_ptr<Plugin>>(p, "Plugin")
      .def_static("load", &Plugin::load, py::arg("path"))
      .def_property_readonly("path", &Plugin::path)
      .def_property_readonly("api_version", [](const Plugin& plugin) {
        return py::make_tuple(plugin.api_major(), plugin.api_minor());
      })
      .def("attributes", [](const Plugin& plugin) {
        std::map<std::string, std::string> out;
        for (const auto& [k, v] : plugin.attributes()) {
          out[k] = pjrt::attribute_to_string(v);
        }
        return out;
      });

  py::class_<pjrt::DeviceInfo>(p, "DeviceInfo")
      .def_readonly("id", &pjrt::DeviceInfo::id)
      .def_readonly("local_hardware_id", &pjrt::DeviceInfo::local_hardware_id)
      .def_readonly("kind", &pjrt::DeviceInfo::kind)
      .def_readonly("description", &pjrt::DeviceInfo::description)
      .def("__repr__", [](const pjrt::DeviceInfo& d) { return d.description; });

  py::class_<Buffer, BufferPtr>(p, "Buffer")
      .def_property_readonly("dtype", [](const Buffer& b) {
        return std::string(short_name(b.element_type()));
      })
      .def_property_readonly("shape", [](const Buffer& b) {
        auto dims = b.dims();
        return py::tuple(py::cast(dims));
      })
      .def_property_readonly("on_device_size", &Buffer::on_device_size)
      .def("to_numpy", &to_numpy)
      .def("block_until_ready", [](const Buffer& b) {
        py::gil_scoped_release release;
        b.ready_event().await();
      });

  py::class_<LoadedExecutable, std::shared_ptr<LoadedExecutable>>(p, "Executable")
      .def_property_readonly("name", &LoadedExecutable::name)
      .def_property_readonly("num_outputs", &LoadedExecutable::num_outputs)
      .def_property_readonly("output_shapes", [](const LoadedExecutable& e) {
        std::vector<py::tuple> out;
        for (const auto& o : e.outputs()) {
          out.push_back(py::make_tuple(std::string(short_name(o.type)),
                                       py::tuple(py::cast(o.dims))));
        }
        return out;
      })
      .def("fingerprint", &LoadedExecutable::fingerprint)
      .def("serialize", [](const LoadedExecutable& e) {
        return py::bytes(e.serialize());
      })
      .def("execute", [](const LoadedExecutable& e,
                         const std::vector<BufferPtr>& args, int device,
                         bool wait) {
        std::vector<pjrt::c::Buffer*> raw;
        raw.reserve(args.size());
        for (const BufferPtr& b : args) {
          if (!b || !b->valid()) throw std::invalid_argument("execute: invalid buffer argument");
          raw.push_back(b->get());
        }
        LoadedExecutable::Result result;
        {
          py::gil_scoped_release release;
          result = e.execute(raw, device);
          if (wait) result.done.await();
        }
        std::vector<BufferPtr> outs;
        for (Buffer& b : result.outputs) outs.push_back(std::make_shared<Buffer>(std::move(b)));
        return outs;
      }, py::arg("args"), py::arg("device") = 0, py::arg("wait") = false);

  py::class_<Client, std::shared_ptr<Client>>(p, "Client")
      .def_static("create", [](std::shared_ptr<Plugin> plugin,
                               const std::map<std::string, py::object>& options) {
        std::vector<pjrt::ClientOption> opts;
        for (const auto& [name, value] : options) {
          if (py::isinstance<py::bool_>(value)) {
            opts.push_back({name, value.cast<bool>()});
          } else if (py::isinstance<py::int_>(value)) {
            opts.push_back({name, value.cast<int64_t>()});
          } else if (py::isinstance<py::float_>(value)) {
            opts.push_back({name, value.cast<float>()});
          } else {
            opts.push_back({name, py::str(value).cast<std::string>()});
          }
        }
        py::gil_scoped_release release;
        return Client::create(std::move(plugin), opts);
      }, py::arg("plugin"), py::arg("options") = std::map<std::string, py::object>{})
      .def_property_readonly("platform_name", &Client::platform_name)
      .def_property_readonly("platform_version", &Client::platform_version)
      .def_property_readonly("process_index", &Client::process_index)
      .def("devices", &Client::devices)
      .def("to_device", &to_device, py::arg("array"), py::arg("dtype") = py::none(),
           py::arg("device") = 0)
      .def("copy_to_device", [](const Client& c, const BufferPtr& b, int device) {
        py::gil_scoped_release release;
        return std::make_shared<Buffer>(c.copy_to_device(*b, device));
      })
      .def("compile", [](const Client& c, const std::string& mlir,
                         int64_t num_replicas, int64_t num_partitions,
                         const std::map<std::string, py::object>& overrides) {
        pjrt::CompileOptions options;
        options.num_replicas = num_replicas;
        options.num_partitions = num_partitions;
        options.portable = num_replicas * num_partitions == 1;
        for (const auto& [name, value] : overrides) options.env_option_overrides[name] = option_value(name, value);
        py::gil_scoped_release release;
        return c.compile(mlir, options);
      }, py::arg("mlir"), py::arg("num_replicas") = 1, py::arg("num_partitions") = 1,
         py::arg("overrides") = std::map<std::string, py::object>{},
         "Compiles StableHLO text outside the compile cache; `overrides` sets XLA\n"
         "options for this program only (e.g. {'xla_cpu_enable_fast_math': False}).")
      .def("deserialize", [](const Client& c, const py::bytes& bytes) {
        std::string data = bytes;
        py::gil_scoped_release release;
        return c.deserialize(data);
      })
      .def("memory_stats", [](const Client& c, int device) -> py::object {
        auto stats = c.memory_stats(device);
        if (!stats) return py::none();
        py::dict d;
        d["bytes_in_use"] = stats->bytes_in_use;
        if (stats->peak_bytes_in_use) d["peak_bytes_in_use"] = *stats->peak_bytes_in_use;
        if (stats->bytes_limit) d["bytes_limit"] = *stats->bytes_limit;
        if (stats->num_allocs) d["num_allocs"] = *stats->num_allocs;
        return d;
      }, py::arg("device") = 0);
}

}  // namespace torch_tpu::python
