// How a program reads and writes tpu tensors.
//
// A program never receives a tensor: it receives the device value of the
// tensor's storage (its own shape and type) and applies the tensor's view
// geometry itself, so reading a view costs no separate launch and every
// alias of a storage sees every write. The view geometry is part of the
// program's cache key, except a nonzero offset where the view provably fits
// its storage: that offset travels as a runtime scalar, so x[i] for every i,
// a batch sliced from a dataset on the device or a KV-cache row written at
// each position share one program instead of compiling one per offset.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "hlo/builder.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

// One tensor as a program sees it.
struct Operand {
  runtime::DeviceBufferPtr buffer;  // the storage value; null: never written (reads as zeros)
  ElementType dtype;                // the tensor's
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int64_t storage_elements = 0;  // storage size in elements of `dtype`
  // The buffer is exactly this tensor: same type and shape, contiguous,
  // offset 0. The common case, read with no view ops.
  bool direct = false;
  // The tensor covers its whole storage contiguously: writing it replaces
  // the storage value outright.
  bool whole_storage = false;
  // The offset is an s64 argument of the program rather than a constant
  // in it (see above); the key says so instead of holding the offset.
  bool dynamic_offset = false;
};

Operand make_operand(const at::Tensor& t, const char* op);

// Appends what the program depends on: dtype, storage value type, geometry.
void append_key(std::string& key, const Operand& operand);

// How a program gets the value of a device buffer it reads: a new parameter
// (strict eager: one program per op) or, in a deferred graph, the value the
// graph already computes or holds for that buffer (fused eager).
using BindBuffer = std::function<hlo::Value(hlo::Builder&, const runtime::DeviceBufferPtr&)>;

// Binds the operand's buffer (when it has one) and returns the tensor's
// logical value inside the program. `offset`: the offset's 0-dim s64
// value when operand.dynamic_offset, else null.
hlo::Value read_operand(hlo::Builder& b, const Operand& operand, const BindBuffer& bind,
                        const hlo::Value* offset);

// Inside a program: the storage value after writing `value` (the logical
// value of the destination tensor, already of its dtype and shape) into
// `dst`'s view. `storage` is the storage's current value as declared by
// declare_storage(); ignored when `dst.whole_storage`.
// `offset` as for read_operand.
hlo::Value write_operand(hlo::Builder& b, const Operand& dst, const hlo::Value* storage,
                         const hlo::Value& value, const hlo::Value* offset);

// The element type of a storage value of type `stored` after a partial
// write through a view of dtype `written`: `stored`, except that a bool
// storage written through a view of another dtype becomes u8 (bytes that
// need not be 0 or 1).
ElementType partial_write_dtype(ElementType stored, ElementType written);

// Binds `dst`'s storage when a partial write needs it; returns false when
// nothing was bound (whole write, or a storage never written, which starts
// from zeros).
bool declare_storage(hlo::Builder& b, const Operand& dst, hlo::Value* storage, const BindBuffer& bind);

}  // namespace torch_tpu::aten
