// Running one op in strict eager mode: key, cache lookup, launch.
//
// An op call names its lowering and the attributes that shape the program,
// lists its tensor operands and its runtime scalars (values that change from
// call to call, such as alpha or a learning rate, travel as 0-dim inputs so
// they never cause a recompile). The key is built from those alone; the
// lowering runs only when the compile cache misses.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/FunctionRef.h>
#include <c10/util/MaybeOwned.h>

#include <functional>
#include <string>
#include <vector>

#include "aten/operand.h"
#include "aten/scalar_input.h"
#include "hlo/builder.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

// Builds an op's outputs from its operands' logical values and its scalars
// (0-dim values of their ScalarInput types).
using LoweringBody = std::function<std::vector<hlo::Value>(
    hlo::Builder& b, const std::vector<hlo::Value>& tensors, const std::vector<hlo::Value>& scalars)>;

// A tensor operand of an op call: a copy by default (safe for temporaries),
// or borrowed from a caller that outlives the call. Borrowing matters on
// the hot path: the first extra reference to a tensor that only Python
// holds takes the GIL (PyObject preservation), twice per operand per op.
class TensorArg {
 public:
  TensorArg(const at::Tensor& t) : tensor_(c10::MaybeOwned<at::Tensor>::owned(std::in_place, t)) {}
  TensorArg(at::Tensor&& t) : tensor_(c10::MaybeOwned<at::Tensor>::owned(std::move(t))) {}
  // `t` must outlive every use of this argument (kernel arguments do).
  static TensorArg borrowed(const at::Tensor& t) { return TensorArg(c10::MaybeOwned<at::Tensor>::borrowed(t)); }

  operator const at::Tensor&() const { return *tensor_; }
  const at::Tensor& get() const { return *tensor_; }
  const at::Tensor* operator->() const { return &*tensor_; }

 private:
  explicit TensorArg(c10::MaybeOwned<at::Tensor> t) : tensor_(std::move(t)) {}
  c10::MaybeOwned<at::Tensor> tensor_;
};

struct OpCall {
  const char* name;          // the ATen op, for keys and messages ("aten::add")
  std::string attributes;    // everything else the program depends on
  std::vector<TensorArg> tensors;
  std::vector<ScalarInput> scalars;
};

// Runs the op and returns its outputs as new tpu tensors.
std::vector<at::Tensor> run_op(const OpCall& call, const LoweringBody& body);

// Runs the op and writes its single output into `dst` (an in-place op or an
// out= variant): the output is converted to dst's dtype and written through
// dst's view, updating its storage for every alias.
void run_op_into(const OpCall& call, const LoweringBody& body, const at::Tensor& dst);

// The same for several destinations (a _foreach_ op, an op with two
// in-place results): the body's first dsts.size() values are written into
// `dsts`, in one program; any further values (a deferred-check flag) come
// back as new tensors. Destinations sharing a storage are written one after
// another, in order.
std::vector<at::Tensor> run_op_into(const OpCall& call, const LoweringBody& body,
                                    c10::ArrayRef<at::Tensor> dsts);

// The device all tpu tensors of a call live on; raises the same error as
// CUDA when they are on different devices.
c10::Device common_device(const std::vector<TensorArg>& tensors, const char* op);

// Compiles (or finds in the cache) the program under `key` and launches it
// on `device`; the building block under run_op, for programs that are not a
// call of one ATen op (storage resizes, copies). `op` names it in errors.
std::vector<runtime::DeviceBufferPtr> run_program(const std::string& key, const char* op,
                                                  c10::function_ref<std::string()> build,
                                                  const std::vector<pjrt::c::Buffer*>& args,
                                                  int device);

// run_program's launch alone: the program's PJRT results in order, and
// (when `types` is given) their types.
std::vector<pjrt::Buffer> launch_program(const std::string& key, const char* op,
                                         c10::function_ref<std::string()> build,
                                         const std::vector<pjrt::c::Buffer*>& args, int device,
                                         std::vector<hlo::TensorType>* types = nullptr);

// A launch's PJRT results as device buffers of the given types.
std::vector<runtime::DeviceBufferPtr> device_buffers(std::vector<pjrt::Buffer> results,
                                                     std::vector<hlo::TensorType> types, int device);

// The tensor's value as a dense buffer of its own shape and dtype (a
// program materializes a view; a plain tensor costs nothing).
runtime::DeviceBufferPtr dense_value(const at::Tensor& t, const char* op);

// A new tpu tensor holding `value` (its shape and dtype).
at::Tensor tensor_from_value(runtime::DeviceBufferPtr value, c10::Device device);

// Raises a device failure as PyTorch code expects it: running out of
// memory is torch.OutOfMemoryError, as on CUDA, whether it was reported at
// launch or only when a result was awaited; anything else a RuntimeError.
// `what` says what failed ("aten::add: launching the tpu program").
// `device` counts an out-of-memory error in its statistics (num_ooms)
// unless `count` is false (a failure already reported).
[[noreturn]] void raise_device_error(const std::string& what, const std::exception& error, int device,
                                     bool count = true);

}  // namespace torch_tpu::aten
