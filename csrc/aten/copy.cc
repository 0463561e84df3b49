// Copies between the host and tpu, and between tpu tensors; item().
//
// Host -> tpu uploads a dense host copy of the source (converted to the
// destination dtype on the host) and, when the destination is a view, writes
// it through the view with a device program. tpu -> host reads the
// tensor's value (materializing a view on the device first) and lets the
// CPU copy_ handle dtype and strides.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_copy_from_and_resize_native.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "aten/allocator.h"
#include "aten/device_scope.h"
#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/fused_graph.h"
#include "aten/graph_capture.h"
#include "aten/lazy_bits.h"
#include "aten/memory_limit.h"
#include "aten/op_runner.h"
#include "aten/operand.h"
#include "aten/out_args.h"
#include "aten/trace_profiler.h"
#include "ops/broadcast.h"
#include "runtime/device_queue.h"
#include "runtime/device_time.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

namespace {

// Writes a tpu tensor `src` into tpu tensor `dst` (same device): dtype
// conversion and broadcasting happen in the program.
void copy_on_device(const at::Tensor& src, const at::Tensor& dst) {
  // copy_'s TensorIterator check on CPU and CUDA (tpu copies come here
  // before any): a source covering part of the destination.
  at::assert_no_partial_overlap(dst, src);
  // Whole storage to whole storage: device values are immutable (every
  // write makes a new one), so dst can share src's value, in the type it
  // was written with (an untyped storage copy, as deepcopy makes, keeps an
  // i64 value i64 instead of turning it into bytes). No program runs.
  {
    // Scoped: an operand holds its buffer, and a partial write below can
    // reuse dst's storage buffer in place only when nothing else holds it.
    const Operand from = make_operand(src, "aten::copy_");
    const Operand to = make_operand(dst, "aten::copy_");
    if (from.buffer && from.whole_storage && to.whole_storage && from.dtype == to.dtype &&
        from.sizes == to.sizes && src.storage().nbytes() == dst.storage().nbytes()) {
      set_storage_value(dst.storage(), from.buffer);
      return;
    }
  }
  OpCall call{"aten::copy_", "", {src}, {}};
  const auto out_dims = dst.sizes().vec();
  const ElementType out_type = to_element_type(dst.scalar_type(), "aten::copy_");
  auto body = [&](hlo::Builder& b, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>&) {
    // Right-aligned broadcasting, as copy_ allows.
    return std::vector<hlo::Value>{ops::broadcast_to(b, ops::convert_to(b, x[0], out_type), out_dims)};
  };
  run_op_into(call, body, dst);
}

at::Tensor host_to_tpu(const at::Tensor& src, const at::Tensor& dst) {
  // A dense host array of dst's dtype; broadcasting happens on the device.
  at::Tensor host = src.to(dst.scalar_type()).contiguous();
  // A CPU bool may hold any nonzero byte (a uint8 storage viewed as bool),
  // which CPU ops read as true; a device boolean must be 0 or 1.
  if (host.scalar_type() == at::kBool) host = host.view(at::kByte).ne(0);
  const ElementType type = to_element_type(dst.scalar_type(), "aten::copy_");
  const int device = dst.device().index();
  auto& client = runtime::Runtime::get().client();
  check_transfer_within_limit(device, host.nbytes(), "a copy from the host");
  const int64_t start = runtime::launch_sink_set() ? runtime::steady_now_ns() : -1;
  pjrt::Buffer buffer = client.buffer_from_host(host.data_ptr(), type, host.sizes().vec(), {}, device);
  if (start >= 0) {  // a trace is recording: the transfer is a device row
    runtime::track_completion(device, buffer.ready_event(), start,
                              {"Memcpy HtoD (host -> tpu)", trace_correlation_id(), runtime::SpanKind::kHostToDevice});
  }
  auto value = std::make_shared<runtime::DeviceBuffer>(
      std::move(buffer), hlo::TensorType(type, host.sizes().vec()), device);
  Operand target = make_operand(dst, "aten::copy_");
  if (target.whole_storage && host.sizes() == dst.sizes()) {
    set_storage_value(dst.storage(), std::move(value));
  } else {
    copy_on_device(tensor_from_value(std::move(value), dst.device()), dst);
  }
  return dst;
}

at::Tensor tpu_to_host(const at::Tensor& src, const at::Tensor& dst) {
  // In a forked child the download would wait forever for the parent's
  // PJRT threads; this raises the fork error instead.
  ensure_runtime();
  note_host_read();
  end_op_sequence();
  runtime::DeviceBufferPtr value = dense_value(src, "aten::copy_");
  // Straight into dst where it is the dense array the device holds; through
  // a staging tensor otherwise (another dtype, strides, broadcast, lazy
  // bits). A large staging tensor costs more than the copy itself: fresh
  // pages are faulted in one by one.
  const bool direct = dst.scalar_type() == src.scalar_type() && dst.sizes() == src.sizes() &&
                      dst.is_contiguous() && !src.is_conj() && !src.is_neg() && !dst.is_conj() && !dst.is_neg();
  at::Tensor host = direct ? dst : at::empty(src.sizes(), src.options().device(c10::kCPU));
  try {
    if (host.numel() > 0 && runtime::launch_sink_set()) {
      // A trace is recording: the copy is a device row of its own, after
      // the wait for the value's computation.
      value->buffer().ready_event().await();
      const int64_t start = runtime::steady_now_ns();
      value->buffer().to_host(host.data_ptr(), host.nbytes());
      runtime::report_span({value->device(), start, runtime::steady_now_ns(), "Memcpy DtoH (tpu -> host)",
                            trace_correlation_id(), runtime::SpanKind::kDeviceToHost});
    } else if (host.numel() > 0) {
      // Reads only once the value is computed: this is a sync point.
      value->buffer().to_host(host.data_ptr(), host.nbytes());
    }
  } catch (const pjrt::PjrtError& e) {
    // A failed result reports its failure at every read; num_ooms counts it once.
    raise_device_error("aten::copy_: reading a tpu tensor", e, value->device(), value->first_failure_report());
  }
  raise_failed_checks_for_read(*value);
  // The download holds the storage's values; a lazily conjugated or negated
  // view is resolved by the CPU copy below.
  if (direct) return dst;
  host._set_conj(src.is_conj());
  host._set_neg(src.is_neg());
  dst.copy_(host);
  return dst;
}

at::Tensor copy_from(const at::Tensor& self_in, const at::Tensor& dst, bool non_blocking) {
  // non_blocking is honoured by ordering, not by skipping the host copy:
  // uploads copy the host data before returning, downloads wait for it.
  at::Tensor self = self_in;
  const bool src_tpu = self.device().type() == c10::DeviceType::PrivateUse1;
  const bool dst_tpu = dst.device().type() == c10::DeviceType::PrivateUse1;
  if (!at::is_expandable_to(self.sizes(), dst.sizes())) {
    // CPU's TensorIterator messages: infer_size throws on a size mismatch.
    const auto shape = at::infer_size(dst.sizes(), self.sizes());
    TORCH_CHECK(false, "output with shape ", dst.sizes(), " doesn't match the broadcast shape ",
                c10::IntArrayRef(shape));
  }
  if (dst.numel() == 0) return dst;
  if (dst_tpu && (dst.is_conj() || dst.is_neg())) {
    // A lazily conjugated / negated view reads its storage through the bit,
    // so the storage takes conj(v) / -v. In-place ops on such views
    // (x.conj().add_(1)) end here: the math-bit fallbacks run the op on a
    // resolved clone and copy the result back.
    at::Tensor plain = dst.alias();
    plain._set_conj(false);
    plain._set_neg(false);
    // Converted first, as CPU converts before negating (uint8 3 into a
    // negated float view stores -3, not -(253)).
    at::Tensor value = self.scalar_type() == dst.scalar_type() ? self : self.to(dst.scalar_type());
    if (dst.is_conj()) value = value.conj();
    if (dst.is_neg()) value = value._neg_view();
    copy_from(value, plain, non_blocking);
    return dst;
  }
  if (!src_tpu && (self.is_conj() || self.is_neg())) self = self.resolve_conj().resolve_neg();
  if (src_tpu && dst_tpu && (self.is_conj() || self.is_neg())) self = resolve_lazy_bits(self);
  if (!src_tpu && dst_tpu) return host_to_tpu(self, dst);
  if (src_tpu && !dst_tpu) {
    TORCH_CHECK(dst.device().is_cpu(), "aten::copy_: cannot copy from tpu to ", dst.device());
    return tpu_to_host(self, dst);
  }
  TORCH_CHECK(src_tpu && dst_tpu, "aten::copy_: unexpected devices ", self.device(), " -> ", dst.device());
  // CPU's copy_ warns here too; across the host the CPU copy warns itself.
  if (self.is_complex() && !dst.is_complex()) {
    TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
  }
  if (self.device() == dst.device()) {
    copy_on_device(self, dst);
    return dst;
  }
  // Across devices: move the dense value, then write it on the target.
  runtime::DeviceBufferPtr value = dense_value(self, "aten::copy_");
  check_transfer_within_limit(dst.device().index(), value->bytes(), "a copy from another tpu device");
  auto& client = runtime::Runtime::get().client();
  auto moved = std::make_shared<runtime::DeviceBuffer>(
      client.copy_to_device(value->buffer(), dst.device().index()), value->type(), dst.device().index());
  copy_on_device(tensor_from_value(std::move(moved), dst.device()), dst);
  return dst;
}

// The CPU fallback's way back into out= tensors: an out that must change
// shape takes the CPU result's layout, as the out kernel gave the CPU copy
// (column-major for linalg results).
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::Tensor out = dst;
  resize_out_like(out, self);
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  tpu_to_host(self.reshape({}), host);
  return host.item();
}

}  // namespace

// Module.to() / param.data = ... ask whether a tensor's implementation can
// take another's in place (shallow_copy_from). ATen answers yes for dense
// tensors of the built-in backends only; for a tpu tensor against a CPU one
// it said no, and Module.to("tpu") then made new Parameter objects: tied
// weights (an LM's input and output embeddings) came apart, and optimizers
// built before the move held stale parameters. Dense strided tensors on CPU
// and tpu share the plain TensorImpl, as CUDA's do.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.key_set() == from.key_set()) return true;
  auto dense = [](const at::Tensor& t) {
    const c10::DeviceType type = t.device().type();
    return t.layout() == c10::kStrided && !t.is_quantized() && !t.is_nested() &&
           (type == c10::DeviceType::CPU || type == c10::DeviceType::PrivateUse1);
  };
  return dense(self) && dense(from);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

// The conjugate / negative fallbacks would materialize a lazy view with
// clone(), which copies through _copy_from again: copy_from resolves the
// bits itself, so those keys pass straight through.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_tpu::aten
