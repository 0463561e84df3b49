#include "hlo/types.h"

#include <charconv>

namespace torch_tpu::hlo {

int64_t TensorType::num_elements() const {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      throw HloError("negative dimension in tensor type " + to_string());
    }
    if (__builtin_mul_overflow(count, d, &count)) {
      throw HloError("element count overflows int64 in tensor type " +
                     to_string());
    }
  }
  return count;
}

void TensorType::append_to(std::string& out) const {
  out += "tensor<";
  char buf[24];
  for (int64_t d : dims) {
    auto end = std::to_chars(buf, buf + sizeof(buf), d).ptr;
    out.append(buf, end);
    out += 'x';
  }
  out += mlir_name(dtype);
  out += '>';
}

std::string TensorType::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

}  // namespace torch_tpu::hlo
