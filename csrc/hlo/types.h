// Tensor types and the error type of the StableHLO builder.
//
// Pure C++17: nothing here knows about PyTorch. A TensorType is a static
// shape plus an element type; the builder only ever deals in static shapes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/element_type.h"

namespace torch_tpu::hlo {

// Every bad input to the builder ends as one of these; the message starts
// with the op name ("stablehlo.add: operand shapes differ: ...").
class HloError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct TensorType {
  ElementType dtype = ElementType::kF32;
  std::vector<int64_t> dims;

  TensorType() = default;
  TensorType(ElementType element_type, std::vector<int64_t> shape)
      : dtype(element_type), dims(std::move(shape)) {}

  // A 0-dim tensor of the given element type, e.g. tensor<f32>.
  static TensorType scalar(ElementType dtype) { return TensorType(dtype, {}); }

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_scalar() const { return dims.empty(); }
  // Throws HloError on negative dims or when the count overflows int64.
  int64_t num_elements() const;

  // MLIR spelling: tensor<2x3xf32>, tensor<f32>, tensor<0x3xcomplex<f32>>.
  std::string to_string() const;
  void append_to(std::string& out) const;

  bool operator==(const TensorType& other) const {
    return dtype == other.dtype && dims == other.dims;
  }
  bool operator!=(const TensorType& other) const { return !(*this == other); }
};

// "[2, 3]": dims lists in error messages.
std::string dims_to_string(const std::vector<int64_t>& dims);

}  // namespace torch_tpu::hlo
