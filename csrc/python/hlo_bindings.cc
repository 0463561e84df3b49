// Python view of the StableHLO builder. Tests drive every op family through
// it and compare with NumPy; custom kernels will use it too. Element types
// are named by their short names ("f32", "bf16", "pred", ...).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "hlo/builder.h"
#include "python/bindings.h"
#include "python/numpy_types.h"

namespace py = pybind11;

namespace torch_tpu::python {

namespace {

using hlo::Builder;
using hlo::ImportedFunction;
using hlo::TensorType;
using hlo::Value;
using Dims = std::vector<int64_t>;
using TypeSpec = std::pair<std::string, Dims>;

TensorType tensor_type(const std::string& dtype, const Dims& dims) {
  return TensorType(parse_element_type(dtype), dims);
}

std::vector<TensorType> tensor_types(const std::vector<TypeSpec>& specs) {
  std::vector<TensorType> out;
  for (const auto& [dtype, dims] : specs) out.push_back(tensor_type(dtype, dims));
  return out;
}

std::vector<TypeSpec> type_specs(const std::vector<TensorType>& types) {
  std::vector<TypeSpec> out;
  for (const TensorType& t : types) out.emplace_back(std::string(short_name(t.dtype)), t.dims);
  return out;
}

hlo::Precision parse_precision(const std::string& name) {
  if (name == "default") return hlo::Precision::kDefault;
  if (name == "high") return hlo::Precision::kHigh;
  if (name == "highest") return hlo::Precision::kHighest;
  throw std::invalid_argument("precision must be default, high or highest, not '" + name + "'");
}

hlo::RngAlgorithm parse_rng(const std::string& name) {
  if (name == "default") return hlo::RngAlgorithm::kDefault;
  if (name == "three_fry") return hlo::RngAlgorithm::kThreeFry;
  if (name == "philox") return hlo::RngAlgorithm::kPhilox;
  throw std::invalid_argument("rng algorithm must be default, three_fry or philox, not '" + name + "'");
}

hlo::FftType parse_fft(const std::string& name) {
  if (name == "fft") return hlo::FftType::kFft;
  if (name == "ifft") return hlo::FftType::kIfft;
  if (name == "rfft") return hlo::FftType::kRfft;
  if (name == "irfft") return hlo::FftType::kIrfft;
  throw std::invalid_argument("fft type must be fft, ifft, rfft or irfft, not '" + name + "'");
}

hlo::Transpose parse_transpose(const std::string& name) {
  if (name == "none") return hlo::Transpose::kNoTranspose;
  if (name == "transpose") return hlo::Transpose::kTranspose;
  if (name == "adjoint") return hlo::Transpose::kAdjoint;
  throw std::invalid_argument("transpose_a must be none, transpose or adjoint, not '" + name + "'");
}

using RegionCallback = std::function<std::vector<Value>(Builder&, const std::vector<Value>&)>;

Value constant(Builder& b, const py::object& value, const std::string& dtype, const Dims& dims) {
  TensorType t = tensor_type(dtype, dims);
  auto does_not_fit = [&] {
    return hlo::HloError("stablehlo.constant: value " + std::string(py::repr(value)) +
                         " does not fit in " + std::string(short_name(t.dtype)));
  };
  if (py::isinstance<py::bool_>(value)) return b.constant_splat_int(value.cast<bool>() ? 1 : 0, t);
  if (py::isinstance<py::int_>(value)) {
    // Python ints are unbounded: range-check here so the builder's own
    // check sees a value that fits in 64 bits.
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) {
      if (is_unsigned(t.dtype) && v >= 0) return b.constant_splat_uint(static_cast<uint64_t>(v), t);
      return b.constant_splat_int(v, t);
    }
    if (overflow > 0 && is_unsigned(t.dtype)) {
      unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
      if (!PyErr_Occurred()) return b.constant_splat_uint(u, t);
      PyErr_Clear();
    }
    throw does_not_fit();
  }
  if (PyComplex_Check(value.ptr())) {
    auto c = value.cast<std::complex<double>>();
    return b.constant_splat_complex(c.real(), c.imag(), t);
  }
  if (!PyFloat_Check(value.ptr()) && !PyNumber_Check(value.ptr())) {
    throw hlo::HloError("stablehlo.constant: value must be a bool, int, float or complex, not " +
                        std::string(py::str(py::type::of(value).attr("__name__"))));
  }
  return b.constant_splat(py::float_(value).cast<double>(), t);
}

Value constant_array(Builder& b, py::array array, const std::optional<std::string>& dtype) {
  array = py::array::ensure(array, py::array::c_style);
  ElementType type = dtype ? parse_element_type(*dtype) : element_type_of(array.dtype());
  Dims dims(array.shape(), array.shape() + array.ndim());
  return b.constant_bytes(array.data(), static_cast<size_t>(array.nbytes()), TensorType(type, dims));
}

}  // namespace

void bind_hlo(py::module_& m) {
  auto h = m.def_submodule("hlo", "StableHLO builder");
  py::register_exception<hlo::HloError>(h, "HloError", PyExc_ValueError);

  py::class_<Value>(h, "Value")
      .def_property_readonly("dtype", [](const Value& v) { return std::string(short_name(v.dtype())); })
      .def_property_readonly("shape", [](const Value& v) { return py::tuple(py::cast(v.dims())); })
      .def("__repr__", [](const Value& v) { return "<hlo.Value " + v.type().to_string() + ">"; });

  py::class_<ImportedFunction>(h, "ImportedFunction")
      .def_readonly("symbol", &ImportedFunction::symbol)
      .def_readonly("text", &ImportedFunction::text)
      .def_property_readonly("parameter_types", [](const ImportedFunction& f) { return type_specs(f.parameter_types); })
      .def_property_readonly("result_types", [](const ImportedFunction& f) { return type_specs(f.result_types); });
  h.def("import_module", [](const std::string& text, const std::string& symbol_prefix, const std::string& entry) {
    return hlo::import_module(text, symbol_prefix, entry);
  }, py::arg("module_text"), py::arg("symbol_prefix"), py::arg("entry") = "main");

  using B = Builder;
  py::class_<B> builder(h, "Builder");
  builder.def(py::init<std::string>(), py::arg("name") = "main")
      .def("set_num_replicas", &B::set_num_replicas)
      .def("set_num_partitions", &B::set_num_partitions)
      .def("parameter", [](B& b, const std::string& dtype, const Dims& dims) {
        return b.parameter(tensor_type(dtype, dims));
      }, py::arg("dtype"), py::arg("shape"))
      .def("build", &B::build, py::arg("results"))
      .def("emit", [](B& b, const std::string& name, const std::vector<Value>& operands,
                      const std::vector<TypeSpec>& results, const std::string& attributes) {
        return b.emit(name, operands, tensor_types(results), attributes);
      }, py::arg("op_name"), py::arg("operands"), py::arg("result_types"), py::arg("attributes") = "")
      .def("call_function",
           static_cast<std::vector<Value> (B::*)(const ImportedFunction&, const std::vector<Value>&)>(
               &B::call_function),
           py::arg("function"), py::arg("operands"))
      .def("unary", &B::unary)
      .def("binary", &B::binary);

  // Elementwise ops: one Python method per builder method, same names.
  using Binary = Value (B::*)(const Value&, const Value&);
  using Unary = Value (B::*)(const Value&);
  const std::pair<const char*, Binary> binaries[] = {
      {"add", &B::add}, {"subtract", &B::subtract}, {"multiply", &B::multiply},
      {"divide", &B::divide}, {"remainder", &B::remainder}, {"maximum", &B::maximum},
      {"minimum", &B::minimum}, {"power", &B::power}, {"atan2", &B::atan2},
      {"and_", &B::and_}, {"or_", &B::or_}, {"xor", &B::xor_},
      {"shift_left", &B::shift_left}, {"shift_right_arithmetic", &B::shift_right_arithmetic},
      {"shift_right_logical", &B::shift_right_logical}, {"complex", &B::complex},
  };
  for (const auto& [name, fn] : binaries) builder.def(name, fn);
  const std::pair<const char*, Unary> unaries[] = {
      {"abs", &B::abs}, {"negate", &B::negate}, {"exponential", &B::exponential},
      {"exponential_minus_one", &B::exponential_minus_one}, {"log", &B::log},
      {"log_plus_one", &B::log_plus_one}, {"sqrt", &B::sqrt}, {"rsqrt", &B::rsqrt},
      {"cbrt", &B::cbrt}, {"tanh", &B::tanh}, {"logistic", &B::logistic},
      {"sine", &B::sine}, {"cosine", &B::cosine}, {"tan", &B::tan}, {"floor", &B::floor},
      {"ceil", &B::ceil}, {"round_nearest_afz", &B::round_nearest_afz},
      {"round_nearest_even", &B::round_nearest_even}, {"sign", &B::sign}, {"not_", &B::not_},
      {"is_finite", &B::is_finite}, {"popcnt", &B::popcnt},
      {"count_leading_zeros", &B::count_leading_zeros}, {"real", &B::real}, {"imag", &B::imag},
  };
  for (const auto& [name, fn] : unaries) builder.def(name, fn);

  builder
      .def("compare", py::overload_cast<const Value&, const Value&, std::string_view>(&B::compare))
      .def("select", &B::select)
      .def("clamp", &B::clamp)
      .def("convert", [](B& b, const Value& x, const std::string& dtype) {
        return b.convert(x, parse_element_type(dtype));
      })
      .def("bitcast_convert", [](B& b, const Value& x, const std::string& dtype, const Dims& dims) {
        return b.bitcast_convert(x, tensor_type(dtype, dims));
      })
      .def("reduce_precision", &B::reduce_precision)
      .def("constant", &constant, py::arg("value"), py::arg("dtype"), py::arg("shape") = Dims{})
      .def("constant_array", &constant_array, py::arg("array"), py::arg("dtype") = py::none())
      .def("iota", [](B& b, const std::string& dtype, const Dims& dims, int64_t dim) {
        return b.iota(tensor_type(dtype, dims), dim);
      })
      .def("broadcast_in_dim", &B::broadcast_in_dim)
      .def("reshape", &B::reshape)
      .def("transpose", &B::transpose)
      .def("slice", &B::slice)
      .def("dynamic_slice", &B::dynamic_slice)
      .def("dynamic_update_slice", &B::dynamic_update_slice)
      .def("concatenate", &B::concatenate)
      .def("pad", &B::pad)
      .def("gather", [](B& b, const Value& operand, const Value& indices, Dims offset_dims,
                        Dims collapsed_slice_dims, Dims start_index_map, int64_t index_vector_dim,
                        Dims slice_sizes, Dims operand_batching_dims,
                        Dims start_indices_batching_dims, bool indices_are_sorted) {
        hlo::GatherDims d{std::move(offset_dims), std::move(collapsed_slice_dims),
                          std::move(operand_batching_dims), std::move(start_indices_batching_dims),
                          std::move(start_index_map), index_vector_dim};
        return b.gather(operand, indices, d, std::move(slice_sizes), indices_are_sorted);
      }, py::arg("operand"), py::arg("indices"), py::arg("offset_dims"),
         py::arg("collapsed_slice_dims"), py::arg("start_index_map"), py::arg("index_vector_dim"),
         py::arg("slice_sizes"), py::arg("operand_batching_dims") = Dims{},
         py::arg("start_indices_batching_dims") = Dims{}, py::arg("indices_are_sorted") = false)
      .def("scatter", [](B& b, const std::vector<Value>& operands, const Value& indices,
                         const std::vector<Value>& updates, Dims update_window_dims,
                         Dims inserted_window_dims, Dims scatter_dims_to_operand_dims,
                         int64_t index_vector_dim, const RegionCallback& body,
                         Dims input_batching_dims, Dims scatter_indices_batching_dims,
                         bool indices_are_sorted, bool unique_indices) {
        hlo::ScatterDims d{std::move(update_window_dims), std::move(inserted_window_dims),
                           std::move(input_batching_dims), std::move(scatter_indices_batching_dims),
                           std::move(scatter_dims_to_operand_dims), index_vector_dim};
        return b.scatter(operands, indices, updates, d, body, indices_are_sorted, unique_indices);
      }, py::arg("operands"), py::arg("indices"), py::arg("updates"),
         py::arg("update_window_dims"), py::arg("inserted_window_dims"),
         py::arg("scatter_dims_to_operand_dims"), py::arg("index_vector_dim"), py::arg("body"),
         py::arg("input_batching_dims") = Dims{}, py::arg("scatter_indices_batching_dims") = Dims{},
         py::arg("indices_are_sorted") = false, py::arg("unique_indices") = false)
      .def("reduce", [](B& b, const std::vector<Value>& inputs, const std::vector<Value>& inits,
                        Dims dims, const RegionCallback& body) {
        return b.reduce(inputs, inits, std::move(dims), body);
      })
      .def("reduce_window", [](B& b, const std::vector<Value>& inputs, const std::vector<Value>& inits,
                               Dims window_dims, Dims strides, Dims base_dilations,
                               Dims window_dilations, std::vector<std::pair<int64_t, int64_t>> padding,
                               const RegionCallback& body) {
        return b.reduce_window(inputs, inits, std::move(window_dims), std::move(strides),
                               std::move(base_dilations), std::move(window_dilations),
                               std::move(padding), body);
      })
      .def("sort", [](B& b, const std::vector<Value>& inputs, int64_t dim, bool is_stable,
                      const RegionCallback& comparator) {
        return b.sort(inputs, dim, is_stable, comparator);
      })
      .def("top_k", &B::top_k)
      .def("while_loop", [](B& b, const std::vector<Value>& init, const RegionCallback& cond,
                            const RegionCallback& body) { return b.while_loop(init, cond, body); })
      .def("case", [](B& b, const Value& index, const std::vector<RegionCallback>& branches,
                      const std::vector<TypeSpec>& result_types) {
        std::vector<hlo::RegionFn> fns(branches.begin(), branches.end());
        return b.case_(index, fns, tensor_types(result_types));
      })
      .def("optimization_barrier", &B::optimization_barrier)
      .def("dot_general", [](B& b, const Value& lhs, const Value& rhs, Dims lhs_batch,
                             Dims rhs_batch, Dims lhs_contracting, Dims rhs_contracting,
                             const std::string& precision,
                             const std::optional<std::string>& result_dtype) {
        hlo::DotDims d{std::move(lhs_batch), std::move(rhs_batch), std::move(lhs_contracting),
                       std::move(rhs_contracting)};
        std::optional<ElementType> rt;
        if (result_dtype) rt = parse_element_type(*result_dtype);
        return b.dot_general(lhs, rhs, d, parse_precision(precision), rt);
      }, py::arg("lhs"), py::arg("rhs"), py::arg("lhs_batch") = Dims{}, py::arg("rhs_batch") = Dims{},
         py::arg("lhs_contracting") = Dims{}, py::arg("rhs_contracting") = Dims{},
         py::arg("precision") = "default", py::arg("result_dtype") = py::none())
      .def("convolution", [](B& b, const Value& lhs, const Value& rhs, Dims window_strides,
                             std::vector<std::pair<int64_t, int64_t>> padding, Dims lhs_dilation,
                             Dims rhs_dilation, int64_t feature_group_count,
                             int64_t batch_group_count) {
        // PyTorch's layout: input NC(spatial), kernel OI(spatial).
        hlo::ConvOptions o;
        o.dims = hlo::ConvDims::channels_first(lhs.rank() - 2);
        o.window_strides = std::move(window_strides);
        o.padding = std::move(padding);
        o.lhs_dilation = std::move(lhs_dilation);
        o.rhs_dilation = std::move(rhs_dilation);
        o.feature_group_count = feature_group_count;
        o.batch_group_count = batch_group_count;
        return b.convolution(lhs, rhs, o);
      }, py::arg("lhs"), py::arg("rhs"), py::arg("window_strides") = Dims{},
         py::arg("padding") = std::vector<std::pair<int64_t, int64_t>>{},
         py::arg("lhs_dilation") = Dims{}, py::arg("rhs_dilation") = Dims{},
         py::arg("feature_group_count") = 1, py::arg("batch_group_count") = 1)
      .def("cholesky", &B::cholesky)
      .def("triangular_solve", [](B& b, const Value& a, const Value& x, bool left_side, bool lower,
                                  bool unit_diagonal, const std::string& transpose_a) {
        return b.triangular_solve(a, x, left_side, lower, unit_diagonal, parse_transpose(transpose_a));
      })
      .def("fft", [](B& b, const Value& x, const std::string& type, Dims length) {
        return b.fft(x, parse_fft(type), std::move(length));
      })
      .def("rng_bit_generator", [](B& b, const Value& state, const std::string& dtype,
                                   const Dims& dims, const std::string& algorithm) {
        return b.rng_bit_generator(state, tensor_type(dtype, dims), parse_rng(algorithm));
      }, py::arg("state"), py::arg("dtype"), py::arg("shape"), py::arg("algorithm") = "three_fry")
      .def("all_reduce", [](B& b, const Value& x, const hlo::ReplicaGroups& groups,
                            const RegionCallback& body, std::optional<int64_t> channel_id,
                            bool use_global_device_ids) {
        return b.all_reduce(x, groups, body, channel_id, use_global_device_ids);
      }, py::arg("x"), py::arg("replica_groups"), py::arg("body"),
         py::arg("channel_id") = py::none(), py::arg("use_global_device_ids") = false)
      .def("all_gather", &B::all_gather, py::arg("x"), py::arg("all_gather_dim"),
           py::arg("replica_groups"), py::arg("channel_id") = py::none(),
           py::arg("use_global_device_ids") = false)
      .def("reduce_scatter", [](B& b, const Value& x, int64_t dim, const hlo::ReplicaGroups& groups,
                                const RegionCallback& body, std::optional<int64_t> channel_id,
                                bool use_global_device_ids) {
        return b.reduce_scatter(x, dim, groups, body, channel_id, use_global_device_ids);
      }, py::arg("x"), py::arg("scatter_dim"), py::arg("replica_groups"), py::arg("body"),
         py::arg("channel_id") = py::none(), py::arg("use_global_device_ids") = false)
      .def("all_to_all", &B::all_to_all, py::arg("x"), py::arg("split_dim"), py::arg("concat_dim"),
           py::arg("split_count"), py::arg("replica_groups"), py::arg("channel_id") = py::none())
      .def("collective_permute", &B::collective_permute, py::arg("x"),
           py::arg("source_target_pairs"), py::arg("channel_id") = py::none());
}

}  // namespace torch_tpu::python
