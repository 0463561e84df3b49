#include "aten/matmul_precision.h"

#include <ATen/Context.h>

namespace torch_tpu::aten {

hlo::Precision float32_precision_for(c10::ScalarType dtype) {
  if (dtype != c10::ScalarType::Float && dtype != c10::ScalarType::ComplexFloat) return hlo::Precision::kHighest;
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGH:
      return hlo::Precision::kHigh;
    case at::Float32MatmulPrecision::MEDIUM:
      return hlo::Precision::kDefault;
    case at::Float32MatmulPrecision::HIGHEST:
      break;
  }
  return hlo::Precision::kHighest;
}

void put_float32_precision(std::string& attributes, hlo::Precision precision) {
  if (precision == hlo::Precision::kHigh) attributes += "~h";
  if (precision == hlo::Precision::kDefault) attributes += "~m";
}

hlo::Precision keyed_float32_precision(std::string& attributes, c10::ScalarType dtype) {
  const hlo::Precision precision = float32_precision_for(dtype);
  put_float32_precision(attributes, precision);
  return precision;
}

}  // namespace torch_tpu::aten
