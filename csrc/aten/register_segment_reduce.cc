// ATen glue for torch.segment_reduce and its gradient; the lowerings are in
// csrc/ops/reduction/segment_reduce.cc.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/reduction/segment_reduce.h"

namespace torch_tpu::aten {

namespace {

ops::ScatterKind reduction_of(c10::string_view reduce) {
  if (reduce == "sum") return ops::ScatterKind::kSum;
  if (reduce == "mean") return ops::ScatterKind::kMean;
  if (reduce == "max") return ops::ScatterKind::kMax;
  if (reduce == "min") return ops::ScatterKind::kMin;
  if (reduce == "prod") return ops::ScatterKind::kProd;
  TORCH_CHECK(false, "segment_reduce(): unsupported reduction given! ", reduce);
}

// The lengths or offsets that give the segments, checked as CPU checks
// them, plus our own check that their outer dims are the data's (CPU
// reads past them otherwise).
struct Segments {
  const at::Tensor* bounds;
  ops::SegmentBounds given;
  const char* name;
};

Segments segments_of(const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                     const std::optional<at::Tensor>& offsets, int64_t axis) {
  const bool has_offsets = offsets.has_value() && offsets->defined();
  const bool has_lengths = lengths.has_value() && lengths->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  Segments s = has_offsets ? Segments{&*offsets, ops::SegmentBounds::kOffsets, "offsets"}
                           : Segments{&*lengths, ops::SegmentBounds::kLengths, "lengths"};
  const at::Tensor& b = *s.bounds;
  TORCH_CHECK(b.device() == data.device(), "segment_reduce(): expected data and ", s.name,
              " on the same device, got ", data.device(), " and ", b.device());
  TORCH_CHECK(b.scalar_type() == at::kLong || b.scalar_type() == at::kInt, "segment_reduce(): expected ", s.name,
              " of dtype int64 or int32, got ", b.scalar_type());
  TORCH_CHECK(b.dim() >= 1 && data.dim() >= b.dim(), "segment_reduce(): expected data.dim() >= ", s.name,
              ".dim() >= 1, got ", data.dim(), " and ", b.dim());
  TORCH_CHECK(axis == b.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", s.name,
              " but got ", axis, ".");
  TORCH_CHECK(b.sizes().slice(0, axis) == data.sizes().slice(0, axis), "segment_reduce(): expected ", s.name,
              " of shape ", data.sizes().slice(0, axis), " + [segments], got ", b.sizes());
  TORCH_CHECK(!has_offsets || b.size(axis) >= 1, "segment_reduce(): offsets needs at least one entry along axis");
  return s;
}

// CPU's checks of lengths when !unsafe; like CUDA's, they wait for the device.
void check_lengths(const at::Tensor& lengths, int64_t size) {
  OpCall call{"aten::segment_reduce", "check_lengths," + std::to_string(size), {lengths}, {}};
  at::Tensor verdict = run_op(call, [size](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                           const std::vector<hlo::Value>&) {
    const hlo::TensorType one(ElementType::kS64, {});
    hlo::Value v = b.convert(t[0], ElementType::kS64);
    hlo::Value negative = ops::any_true(b, b.compare(v, b.constant_splat_int(0, v.type()), "LT"));
    std::vector<int64_t> rows(v.dims().begin(), v.dims().end() - 1);
    hlo::Value totals = b.reduce({v}, {b.constant_splat_int(0, one)}, {static_cast<int64_t>(rows.size())},
                                 [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                                   return std::vector<hlo::Value>{rb.add(a[0], a[1])};
                                 })[0];
    hlo::Value short_or_long = b.not_(ops::all_true(
        b, b.compare(totals, b.constant_splat_int(size, hlo::TensorType(ElementType::kS64, rows)), "EQ")));
    // 1: a negative length; 2: a row not summing to the axis size.
    hlo::Value code = b.select(negative, b.constant_splat_int(1, one),
                               b.select(short_or_long, b.constant_splat_int(2, one), b.constant_splat_int(0, one)));
    return std::vector<hlo::Value>{code};
  }).at(0);
  const int64_t code = verdict.item<int64_t>();
  TORCH_CHECK(code != 1, "lengths contains negative value!");
  TORCH_CHECK(code != 2, "segment_reduce(): Expected all rows of lengths along axis to sum to "
              "data.size(lengths.dim()-1) when !unsafe.");
}

void check_data(const at::Tensor& data) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(data.scalar_type()) && data.element_size() >= 2,
                              "segment_reduce: not implemented for '", data.scalar_type(),
                              "' (floating-point data only, as on CPU)");
}

std::string attributes(const Segments& s, int64_t axis, ops::ScatterKind kind, bool has_initial) {
  return std::to_string(static_cast<int>(s.given)) + "," + std::to_string(axis) + "," +
         std::to_string(static_cast<int>(kind)) + "," + std::to_string(has_initial);
}

void add_initial(OpCall& call, const std::optional<at::Scalar>& initial, const at::Tensor& data) {
  if (initial) call.scalars.push_back({to_element_type(data.scalar_type(), call.name), *initial});
}

std::optional<hlo::Value> initial_value(const std::vector<hlo::Value>& scalars) {
  if (scalars.empty()) return std::nullopt;
  return scalars[0];
}

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!indices.has_value() || !indices->defined(),
              "segment_reduce(): indices based reduction is not supported yet.");
  const Segments s = segments_of(data, lengths, offsets, axis);
  const ops::ScatterKind kind = reduction_of(reduce);
  check_data(data);
  const int64_t size = data.size(axis);
  if (s.given == ops::SegmentBounds::kLengths && !unsafe && s.bounds->numel() > 0) check_lengths(*s.bounds, size);

  OpCall call{"aten::segment_reduce", attributes(s, axis, kind, initial.has_value()), {data, *s.bounds}, {}};
  add_initial(call, initial, data);
  const bool offsets_given = s.given == ops::SegmentBounds::kOffsets;
  auto outs = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& sc) {
    std::vector<hlo::Value> results{
        ops::lower_segment_reduce(b, t[0], t[1], s.given, axis, kind, initial_value(sc))};
    if (offsets_given) results.push_back(ops::segment_offsets_invalid(b, t[1], size));
    return results;
  });
  if (offsets_given) {
    defer_check(outs[1], CheckError::kRuntime,
                "segment_reduce(): offsets must be non-decreasing and within [0, data.size(axis)] (" +
                    std::to_string(size) + ")");
  }
  return outs[0];
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<at::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  const Segments s = segments_of(data, lengths, offsets, axis);
  const ops::ScatterKind kind = reduction_of(reduce);
  check_data(data);
  TORCH_CHECK(grad.sizes() == output.sizes(), "_segment_reduce_backward: grad of shape ", grad.sizes(),
              " does not match the output's ", output.sizes());
  OpCall call{"aten::_segment_reduce_backward", attributes(s, axis, kind, initial.has_value()),
              {grad, output, data, *s.bounds}, {}};
  add_initial(call, initial, data);
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& sc) {
    return std::vector<hlo::Value>{ops::lower_segment_reduce_backward(
        b, t[0], t[1], t[2], t[3], s.given, axis, kind, initial_value(sc))};
  }).at(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", segment_reduce);
  m.impl("_segment_reduce_backward", segment_reduce_backward);
}

}  // namespace torch_tpu::aten
