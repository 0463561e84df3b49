#include "aten/elementwise_args.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e4m3fnuz.h>
#include <c10/util/Float8_e5m2.h>
#include <c10/util/Float8_e5m2fnuz.h>

#include <cmath>
#include <type_traits>
#include <utility>

#include "aten/dtypes.h"
#include "aten/result_layout.h"

namespace torch_tpu::aten {

namespace {

template <class T>
ArgSlot add_arg_as(OpCall& call, T&& t, ElementType scalar_type) {
  if (t.device().is_cpu() && t.dim() == 0) {
    call.scalars.push_back({scalar_type, t.item()});
    return {true, call.scalars.size() - 1};
  }
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, tpu and ",
              t.device(), "! (when checking arguments for ", call.name, ")");
  if constexpr (std::is_rvalue_reference_v<T&&>) {
    call.tensors.emplace_back(std::move(t));
  } else {
    call.tensors.push_back(TensorArg::borrowed(t));
  }
  return {false, call.tensors.size() - 1};
}

}  // namespace

ArgSlot add_arg(OpCall& call, const at::Tensor& t, ElementType scalar_type) {
  return add_arg_as(call, t, scalar_type);
}

ArgSlot add_arg(OpCall& call, at::Tensor&& t, ElementType scalar_type) {
  return add_arg_as(call, std::move(t), scalar_type);
}

void append_slot(std::string& attributes, const ArgSlot& slot) {
  attributes.push_back(slot.scalar ? 's' : 't');
}

namespace {

int64_t scalar_as_int(const c10::Scalar& s) {
  if (s.isBoolean()) return s.toBool();
  if (s.isFloatingPoint()) {
    const double d = s.toDouble();
    // C's conversion is undefined outside int64; no kernel sees such values sensibly.
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? static_cast<int64_t>(d) : 0;
  }
  // Python integers in [2^63, 2^64) wrap as they do on CPU (uint8 + (2**64 - 1) subtracts 1).
  if (s.isUnsigned()) return static_cast<int64_t>(s.toUInt64());
  return s.toLong();
}

}  // namespace

template <typename Float8>
double as_float8(const c10::Scalar& s) {
  return static_cast<double>(static_cast<float>(Float8(static_cast<float>(s.toDouble()))));
}

c10::Scalar cast_scalar(const c10::Scalar& s, c10::ScalarType t) {
  using c10::ScalarType;
  switch (t) {
    case ScalarType::Bool: return s.toBool();
    case ScalarType::Byte: return static_cast<int64_t>(static_cast<uint8_t>(scalar_as_int(s)));
    case ScalarType::Char: return static_cast<int64_t>(static_cast<int8_t>(scalar_as_int(s)));
    case ScalarType::Short: return static_cast<int64_t>(static_cast<int16_t>(scalar_as_int(s)));
    case ScalarType::Int: return static_cast<int64_t>(static_cast<int32_t>(scalar_as_int(s)));
    case ScalarType::Long: return scalar_as_int(s);
    case ScalarType::UInt16: return static_cast<int64_t>(static_cast<uint16_t>(scalar_as_int(s)));
    case ScalarType::UInt32: return static_cast<int64_t>(static_cast<uint32_t>(scalar_as_int(s)));
    case ScalarType::Half: return static_cast<double>(static_cast<float>(c10::Half(static_cast<float>(s.toDouble()))));
    case ScalarType::BFloat16:
      return static_cast<double>(static_cast<float>(c10::BFloat16(static_cast<float>(s.toDouble()))));
    case ScalarType::Float: return static_cast<double>(static_cast<float>(s.toDouble()));
    case ScalarType::Double: return s.toDouble();
    case ScalarType::ComplexFloat: {
      const c10::complex<double> z = s.toComplexDouble();
      return c10::complex<double>(static_cast<float>(z.real()), static_cast<float>(z.imag()));
    }
    // Through float, as c10 casts to 8-bit floats (e4m3fn saturates).
    case ScalarType::Float8_e4m3fn: return as_float8<c10::Float8_e4m3fn>(s);
    case ScalarType::Float8_e5m2: return as_float8<c10::Float8_e5m2>(s);
    case ScalarType::Float8_e4m3fnuz: return as_float8<c10::Float8_e4m3fnuz>(s);
    case ScalarType::Float8_e5m2fnuz: return as_float8<c10::Float8_e5m2fnuz>(s);
    default: return s;
  }
}

c10::Scalar checked_cast_scalar(const c10::Scalar& s, c10::ScalarType t) {
  using c10::ScalarType;
  switch (t) {
    case ScalarType::Byte: (void)s.to<uint8_t>(); break;
    case ScalarType::Char: (void)s.to<int8_t>(); break;
    case ScalarType::Short: (void)s.to<int16_t>(); break;
    case ScalarType::Int: (void)s.to<int32_t>(); break;
    case ScalarType::Long: (void)s.to<int64_t>(); break;
    case ScalarType::UInt16: (void)s.to<uint16_t>(); break;
    case ScalarType::UInt32: (void)s.to<uint32_t>(); break;
    case ScalarType::UInt64: (void)s.to<uint64_t>(); break;
    case ScalarType::Half: (void)s.to<c10::Half>(); break;
    case ScalarType::BFloat16: (void)s.to<c10::BFloat16>(); break;
    case ScalarType::Float: (void)s.to<float>(); break;
    default: break;
  }
  return cast_scalar(s, t);
}

ArgSlot add_operand(OpCall& call, const at::Tensor& t, c10::ScalarType type) {
  if (t.device().is_cpu() && t.dim() == 0) {
    call.scalars.push_back({to_element_type(type, call.name), cast_scalar(t.item(), type)});
    return {true, call.scalars.size() - 1};
  }
  return add_arg(call, t, to_element_type(type, call.name));
}

void not_implemented_for(const char* op, c10::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", op, "\" not implemented for '", c10::toString(t), "'");
}

c10::ScalarType opmath(c10::ScalarType t) {
  return (t == c10::ScalarType::BFloat16 || t == c10::ScalarType::Half) ? c10::ScalarType::Float : t;
}

void check_float(const char* op, c10::ScalarType t) {
  if (!c10::isFloatingType(t)) not_implemented_for(op, t);
}

void check_tpu(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, tpu and ", t.device(),
              "! (when checking arguments for ", op, ")");
}

void check_castable(c10::ScalarType result, const at::Tensor& out) {
  TORCH_CHECK(c10::canCast(result, out.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", out.scalar_type());
}

void check_exact(c10::ScalarType result, const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == result, "Found dtype ", out.scalar_type(), " but expected ", result);
}

void prepare_out(at::Tensor& out, c10::IntArrayRef shape, bool inplace, const std::vector<TensorArg>& layout_inputs) {
  // An out that is also an input is never resized (TensorIterator treats it
  // as read-write): resizing it first would make the op read the resized
  // tensor, its new elements included.
  for (const TensorArg& input : layout_inputs) inplace |= input->is_same(out);
  if (inplace) {
    TORCH_CHECK(out.sizes() == shape, "output with shape ", out.sizes(), " doesn't match the broadcast shape ",
                shape);
  } else {
    const bool resized = at::native::resize_output(out, shape);
    if (resized && !layout_inputs.empty()) {
      std::vector<const at::Tensor*> inputs;
      for (const TensorArg& input : layout_inputs) inputs.push_back(input.operator->());
      if (auto strides = iterator_strides(shape, out.scalar_type(), inputs)) out.as_strided_(shape, *strides);
    }
  }
  // TensorIterator's memory check, with its message: one program reads
  // every input before writing, but CPU and CUDA write element by element,
  // so an input covering part of the output has no agreed result there.
  // (run_op_into refuses an output overlapping itself.)
  for (const TensorArg& input : layout_inputs) at::assert_no_partial_overlap(out, input.get());
}

}  // namespace torch_tpu::aten
