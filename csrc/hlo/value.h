// A handle to one SSA value in a module under construction.
//
// Values are made only by a Builder, which checks on every use that the value
// is its own and still in scope (a value defined inside a region cannot be
// used after the region closes). A default-constructed Value is invalid and
// is rejected by every op.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/types.h"

namespace torch_tpu::hlo {

class Builder;

class Value {
 public:
  Value() = default;

  // SSA number in the module (function arguments have their own numbers too,
  // though they print as %argN).
  int id() const { return id_; }
  // Which result of a multi-result op (printed %id#index); -1 when the op
  // has exactly one result.
  int result_index() const { return result_index_; }
  bool valid() const { return id_ >= 0; }

  const TensorType& type() const { return type_; }
  const std::vector<int64_t>& dims() const { return type_.dims; }
  ElementType dtype() const { return type_.dtype; }
  int64_t rank() const { return type_.rank(); }

 private:
  friend class Builder;
  Value(uint32_t builder_serial, int id, int result_index, TensorType type)
      : builder_serial_(builder_serial),
        id_(id),
        result_index_(result_index),
        type_(std::move(type)) {}

  uint32_t builder_serial_ = 0;  // which Builder made it
  int id_ = -1;
  int result_index_ = -1;
  TensorType type_;
};

}  // namespace torch_tpu::hlo
