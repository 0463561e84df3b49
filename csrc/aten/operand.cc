#include "aten/operand.h"

#include <ATen/TensorUtils.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "aten/allocator.h"
#include "aten/device_graph.h"
#include "aten/dtypes.h"

namespace torch_tpu::aten {

namespace {

void append_i64(std::string& key, int64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  key.append(bytes, sizeof v);
}

void append_dims(std::string& key, const std::vector<int64_t>& dims) {
  append_i64(key, static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) append_i64(key, d);
}

bool is_contiguous(const Operand& o) {
  int64_t expected = 1;
  for (int64_t i = static_cast<int64_t>(o.sizes.size()) - 1; i >= 0; --i) {
    if (o.sizes[i] == 1) continue;
    if (o.strides[i] != expected) return false;
    expected *= o.sizes[i];
  }
  return true;
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

hlo::TensorType flat_type(ElementType dtype, int64_t n) { return hlo::TensorType(dtype, {n}); }

// A flat vector reinterpreted as another element type (the bytes kept):
// how a storage written as one dtype is read through a view of another
// (Tensor.view(dtype), untyped storage copies).
hlo::Value reinterpret(hlo::Builder& b, const hlo::Value& flat, ElementType to) {
  const ElementType from = flat.dtype();
  if (from == to) return flat;
  // i1 has no bit layout in StableHLO; a bool byte is 0 or 1.
  if (from == ElementType::kPred) return reinterpret(b, b.convert(flat, ElementType::kU8), to);
  if (to == ElementType::kPred) {
    hlo::Value bytes = reinterpret(b, flat, ElementType::kU8);
    return b.compare(bytes, b.constant_splat_int(0, bytes.type()), "NE");
  }
  const int64_t from_size = static_cast<int64_t>(element_size(from));
  const int64_t to_size = static_cast<int64_t>(element_size(to));
  const int64_t n = flat.type().num_elements();
  if (from_size == to_size) return b.bitcast_convert(flat, hlo::TensorType(to, {n}));
  if (from_size > to_size) {
    // Through [n, 1], so that this bitcast never takes another's result
    // directly: XLA's algebraic simplifier folds bitcast_convert(
    // bitcast_convert(a)) into one from `a` with the outer result shape,
    // which does not verify when the inner one widened (in one fused
    // graph, an f64 storage written through an f32 view and read as u8:
    // f32[4,2] -> f64[4] -> u8[4,8] became f32[4,2] -> u8[4,8]). A widening
    // bitcast needs nothing: it reads the [n / r, r] reshape below, which
    // XLA cannot drop.
    const int64_t r = from_size / to_size;
    return b.reshape(b.bitcast_convert(b.reshape(flat, {n, 1}), hlo::TensorType(to, {n, 1, r})), {n * r});
  }
  const int64_t r = to_size / from_size;
  return b.bitcast_convert(b.reshape(flat, {n / r, r}), hlo::TensorType(to, {n / r}));
}

// The storage value as a flat vector of the tensor's element type.
hlo::Value flatten_storage(hlo::Builder& b, const Operand& o, const hlo::Value& storage) {
  return reinterpret(b, b.reshape(storage, {storage.type().num_elements()}), o.dtype);
}

// Element indices into the flat storage of every element of the view, as an
// s64 tensor of shape sizes + [1] (the gather/scatter index vector).
hlo::Value view_indices(hlo::Builder& b, const Operand& o, const hlo::Value* offset) {
  std::vector<int64_t> shape = o.sizes;
  hlo::TensorType index_type(ElementType::kS64, shape);
  hlo::Value index = offset ? b.broadcast_in_dim(*offset, shape, {}) : b.constant_splat_int(o.offset, index_type);
  for (size_t d = 0; d < o.sizes.size(); ++d) {
    if (o.sizes[d] == 1 || o.strides[d] == 0) continue;
    hlo::Value step = b.multiply(b.iota(index_type, static_cast<int64_t>(d)),
                                 b.constant_splat_int(o.strides[d], index_type));
    index = b.add(index, step);
  }
  shape.push_back(1);
  return b.reshape(index, shape);
}

// How many elements from its offset a view reaches in its storage (its last
// element's index + 1), or -1 when a stride is negative.
int64_t view_extent(const Operand& o) {
  int64_t last = 0;
  for (size_t d = 0; d < o.sizes.size(); ++d) {
    if (o.strides[d] < 0) return -1;
    last += (o.sizes[d] - 1) * o.strides[d];
  }
  return last + 1;
}

// `length` elements of `flat` from the operand's offset: a static slice, or
// a dynamic one at the runtime offset (which make_operand checked to fit).
hlo::Value window(hlo::Builder& b, const hlo::Value& flat, const Operand& o, const hlo::Value* offset,
                  int64_t length) {
  if (offset) return b.dynamic_slice(flat, {*offset}, {length});
  return b.slice(flat, {o.offset}, {o.offset + length}, {1});
}

// A view whose dims, ordered by stride, nest (each stride a multiple of the
// next one, by at least the next dim's size) is a block of a slice of the
// flat storage reshaped to [size0, stride0/stride1, ..., stride(k-1)]: the
// view's elements are that shape's [0:size0, ..., 0:size(k-1), 0:1].
// Transposes, permutes, stepped slices, narrow, select, diagonal and expand
// are all of this kind (expand's 0-stride dims are not among the k); views
// that overlap themselves (unfold with a step below the size) are not.
struct NestedView {
  std::vector<int64_t> dims;  // the view dims that step through memory, by falling stride
  std::vector<int64_t> size, stride;
  bool broadcast = false;     // some dim of size > 1 has stride 0

  // Elements from the offset that the nested shape spans: past the view's
  // last element (and maybe the storage's end) unless the view is gapless.
  int64_t span() const { return stride[0] * size[0]; }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> nested{size[0]};
    for (size_t i = 1; i < size.size(); ++i) nested.push_back(stride[i - 1] / stride[i]);
    nested.push_back(stride.back());
    return nested;
  }
  // The view fills its span: a permutation of a dense block.
  bool gapless() const {
    for (size_t i = 1; i < size.size(); ++i) {
      if (stride[i - 1] / stride[i] != size[i]) return false;
    }
    return stride.back() == 1;
  }
  // For each stepping dim in view order, its position in stride order.
  std::vector<int64_t> view_order() const {
    std::vector<int64_t> order(dims.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return dims[x] < dims[y]; });
    return order;
  }
};

std::optional<NestedView> nested_view(const Operand& o) {
  NestedView v;
  for (size_t d = 0; d < o.sizes.size(); ++d) {
    if (o.strides[d] < 0) return std::nullopt;
    if (o.sizes[d] > 1 && o.strides[d] == 0) v.broadcast = true;
    if (o.sizes[d] > 1 && o.strides[d] != 0) v.dims.push_back(static_cast<int64_t>(d));
  }
  std::stable_sort(v.dims.begin(), v.dims.end(), [&](int64_t x, int64_t y) { return o.strides[x] > o.strides[y]; });
  for (size_t i = 0; i < v.dims.size(); ++i) {
    v.size.push_back(o.sizes[v.dims[i]]);
    v.stride.push_back(o.strides[v.dims[i]]);
    if (i > 0 && (v.stride[i - 1] % v.stride[i] != 0 || v.stride[i - 1] / v.stride[i] < v.size[i])) {
      return std::nullopt;
    }
  }
  return v;
}

// A nested view read without a gather: the span sliced out, reshaped to
// the nested shape, cut per dim, transposed into place and broadcast along
// the 0-stride dims.
std::optional<hlo::Value> read_nested_view(hlo::Builder& b, const hlo::Value& flat, const Operand& o,
                                           const hlo::Value* offset) {
  const auto view = nested_view(o);
  if (!view) return std::nullopt;
  const size_t k = view->dims.size();
  hlo::Value part;
  if (k == 0) {
    part = b.reshape(window(b, flat, o, offset, 1), {});
  } else {
    const int64_t span = view->span();
    const int64_t n = flat.dims()[0];
    hlo::Value zero = b.constant_splat_int(0, hlo::TensorType::scalar(flat.dtype()));
    if (offset) {
      const int64_t extent = view_extent(o);
      part = b.pad(window(b, flat, o, offset, extent), zero, {0}, {span - extent}, {0});
    } else {
      hlo::Value base = o.offset + span > n ? b.pad(flat, zero, {0}, {o.offset + span - n}, {0}) : flat;
      part = window(b, base, o, offset, span);
    }
    part = b.reshape(part, view->shape());
    std::vector<int64_t> limits(view->size);
    limits.push_back(1);
    part = b.reshape(b.slice(part, std::vector<int64_t>(k + 1, 0), limits, std::vector<int64_t>(k + 1, 1)),
                     view->size);
    if (!std::is_sorted(view->dims.begin(), view->dims.end())) part = b.transpose(part, view->view_order());
  }
  std::vector<int64_t> dims = view->dims;
  std::sort(dims.begin(), dims.end());
  return b.broadcast_in_dim(part, o.sizes, dims);
}

// A write into a nested view that fills its span (a permutation of a dense
// block: no 0-stride dim, no gap): `value` transposed into memory order is
// that block, written with one dynamic_update_slice instead of the scatter
// (and its index tensor) a general strided write needs. One that covers
// the whole storage (an output allocated in another dim order, as
// attention's are) becomes the storage's new value outright. Views with
// gaps keep the scatter: a block write would have to read the gaps back
// from the storage it writes.
std::optional<hlo::Value> write_gapless_view(hlo::Builder& b, const hlo::Value& flat, const Operand& dst,
                                             const hlo::Value& value, const hlo::Value* offset) {
  const auto view = nested_view(dst);
  if (!view || view->broadcast || view->dims.empty() || !view->gapless()) return std::nullopt;
  // The value's stepping dims (size-1 dims dropped), then transposed into
  // memory order: the inverse of read_nested_view's view_order.
  const std::vector<int64_t> order = view->view_order();
  std::vector<int64_t> sizes_in_view_order(order.size()), to_memory_order(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sizes_in_view_order[i] = view->size[order[i]];
    to_memory_order[order[i]] = static_cast<int64_t>(i);
  }
  hlo::Value block = b.reshape(value, sizes_in_view_order);
  if (!std::is_sorted(view->dims.begin(), view->dims.end())) block = b.transpose(block, to_memory_order);
  block = b.reshape(block, {view->span()});
  if (!offset && dst.offset == 0 && view->span() == flat.dims()[0]) return block;
  hlo::Value start =
      offset ? *offset : b.constant_splat_int(dst.offset, hlo::TensorType::scalar(ElementType::kS64));
  return b.dynamic_update_slice(flat, block, {start});
}

}  // namespace

Operand make_operand(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, op,
              ": expected a tpu tensor, got one on ", t.device());
  Operand o;
  o.dtype = to_element_type(t.scalar_type(), op);
  o.sizes = t.sizes().vec();
  o.strides = t.strides().vec();
  o.offset = t.storage_offset();
  const auto& storage = t.storage();
  o.buffer = note_graph_read(storage, storage_value(storage).value(), o.dtype);
  o.storage_elements = static_cast<int64_t>(storage.nbytes() / element_size(o.dtype));
  const bool contiguous = is_contiguous(o);
  o.whole_storage = contiguous && o.offset == 0 && numel(o.sizes) == o.storage_elements;
  o.direct = o.buffer && contiguous && o.offset == 0 && o.buffer->type().dtype == o.dtype &&
             o.buffer->type().dims == o.sizes;
  if (o.buffer && o.offset > 0 && numel(o.sizes) > 0) {
    // The storage value in elements of the view's dtype (flatten_storage's
    // length): a runtime offset must keep every slice inside it.
    const auto& type = o.buffer->type();
    const int64_t n = type.num_elements() * static_cast<int64_t>(element_size(type.dtype)) /
                      static_cast<int64_t>(element_size(o.dtype));
    const int64_t extent = view_extent(o);
    o.dynamic_offset = extent >= 0 && o.offset + extent <= n;  // all but odd set_() views
  }
  return o;
}

void append_key(std::string& key, const Operand& o) {
  key.push_back(static_cast<char>(o.dtype));
  if (o.direct) {
    key.push_back('D');
    append_dims(key, o.sizes);
    return;
  }
  if (o.buffer) {
    key.push_back('V');
    key.push_back(static_cast<char>(o.buffer->type().dtype));
    append_dims(key, o.buffer->type().dims);
  } else {
    key.push_back('Z');
    append_i64(key, o.storage_elements);
  }
  append_dims(key, o.sizes);
  append_dims(key, o.strides);
  if (o.dynamic_offset) {
    key.push_back('d');
  } else {
    append_i64(key, o.offset);
  }
}

hlo::Value read_operand(hlo::Builder& b, const Operand& o, const BindBuffer& bind, const hlo::Value* offset) {
  hlo::TensorType type(o.dtype, o.sizes);
  if (o.direct) return bind(b, o.buffer);
  if (!o.buffer) return b.constant_splat_int(0, type);  // never written: zeros
  hlo::Value storage = bind(b, o.buffer);
  if (numel(o.sizes) == 0) return b.constant_splat_int(0, type);
  hlo::Value flat = flatten_storage(b, o, storage);
  if (is_contiguous(o)) return b.reshape(window(b, flat, o, offset, numel(o.sizes)), o.sizes);
  if (auto view = read_nested_view(b, flat, o, offset)) return *view;
  hlo::GatherDims dims;
  dims.collapsed_slice_dims = {0};
  dims.start_index_map = {0};
  dims.index_vector_dim = static_cast<int64_t>(o.sizes.size());
  return b.gather(flat, view_indices(b, o, offset), dims, {1});
}

bool declare_storage(hlo::Builder& b, const Operand& dst, hlo::Value* storage, const BindBuffer& bind) {
  if (dst.whole_storage || !dst.buffer) return false;
  *storage = bind(b, dst.buffer);
  return true;
}

ElementType partial_write_dtype(ElementType stored, ElementType written) {
  // i1 holds only 0 or 1: x.view(torch.uint8)[:4] = 2 on a bool storage
  // keeps the bytes in u8, as a whole write through that view does.
  return stored == ElementType::kPred && written != ElementType::kPred ? ElementType::kU8 : stored;
}

hlo::Value write_operand(hlo::Builder& b, const Operand& dst, const hlo::Value* storage,
                         const hlo::Value& value, const hlo::Value* offset) {
  if (dst.whole_storage) return value;  // the storage takes the new value and shape
  // A partial write: update the flat storage (zeros if never written) and
  // give it back its own shape and type (partial_write_dtype). A bool view
  // of a storage of another type updates it as bytes: read as i1, every
  // byte of it would come back 0 or 1.
  const ElementType carrier = dst.dtype == ElementType::kPred && storage && storage->dtype() != ElementType::kPred
                                  ? ElementType::kU8
                                  : dst.dtype;
  hlo::Value flat = storage ? reinterpret(b, b.reshape(*storage, {storage->type().num_elements()}), carrier)
                            : b.constant_splat_int(0, flat_type(dst.dtype, dst.storage_elements));
  if (numel(dst.sizes) > 0) {
    const hlo::Value converted = carrier == dst.dtype ? value : b.convert(value, carrier);
    if (is_contiguous(dst)) {
      hlo::Value start =
          offset ? *offset : b.constant_splat_int(dst.offset, hlo::TensorType::scalar(ElementType::kS64));
      flat = b.dynamic_update_slice(flat, b.reshape(converted, {numel(dst.sizes)}), {start});
    } else if (auto written = write_gapless_view(b, flat, dst, converted, offset)) {
      flat = *written;
    } else {
      hlo::ScatterDims dims;
      dims.inserted_window_dims = {0};
      dims.scatter_dims_to_operand_dims = {0};
      dims.index_vector_dim = 1;
      hlo::Value indices = b.reshape(view_indices(b, dst, offset), {numel(dst.sizes), 1});
      auto overwrite = [](hlo::Builder&, const std::vector<hlo::Value>& args) {
        return std::vector<hlo::Value>{args[1]};
      };
      hlo::Value update = b.reshape(converted, {numel(dst.sizes)});
      flat = b.scatter({flat}, indices, {update}, dims, overwrite, false, true)[0];
    }
  }
  if (!storage) return flat;
  return b.reshape(reinterpret(b, flat, partial_write_dtype(storage->dtype(), dst.dtype)), storage->dims());
}

}  // namespace torch_tpu::aten
