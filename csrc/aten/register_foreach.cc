// ATen glue for the _foreach_ ops that torch.optim's foreach steps and
// clip_grad_norm_ use: a whole list is ONE program per device (not one
// launch per tensor). Every element computes exactly what the per-tensor op
// would (its own type promotion), with the elementwise lowerings of
// csrc/ops/elementwise through csrc/ops/optim/foreach.cc. Scalars and scalar
// lists (learning rates, bias corrections, eps) are runtime inputs, so a
// training loop with a changing learning rate never recompiles.
//
// Whatever the one-program path does not cover (a CPU tensor in a list,
// lists of different lengths, broadcasting between elements, bool or
// complex tensors, a result that cannot be cast in place) goes to
// PyTorch's per-tensor implementation, which computes it op by op on tpu or
// raises the error the per-tensor op raises.
#include <ATen/core/Tensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/_foreach_abs_native.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_exp_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_maximum_native.h>
#include <ATen/ops/_foreach_minimum_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_pow_native.h>
#include <ATen/ops/_foreach_reciprocal_native.h>
#include <ATen/ops/_foreach_sign_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarType.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/optim/foreach.h"

namespace torch_tpu::aten {

namespace {

using at::TensorList;
using c10::ScalarType;
using ops::ForeachOp;
using ops::UnaryOp;
using Scalars = at::ArrayRef<c10::Scalar>;

// One argument of one element: a tpu tensor, or a scalar (a Python number,
// or a CPU 0-dim tensor's value). `shared` >= 0 marks an argument every
// element has (the single tensor or scalar of an overload): it becomes one
// program input (per type, for scalars).
struct Arg {
  const at::Tensor* tensor = nullptr;  // also kept for a CPU 0-dim tensor, for type promotion
  bool is_scalar = false;
  c10::Scalar scalar;
  int shared = -1;
};

// Optimizer steps call these ops on lists of hundreds of tensors every
// step, so an element allocates nothing: its arguments fit inline and its
// shape is a view of its first tensor's sizes (every tensor outlives the
// call).
struct Element {
  c10::SmallVector<Arg, 4> args;
  ScalarType out = ScalarType::Undefined;
  const at::Tensor* dst = nullptr;  // in-place: the list element written
  c10::Device device = c10::Device(c10::DeviceType::PrivateUse1, 0);
  c10::IntArrayRef dims;
};

// Where an argument position takes its values from, across the list.
struct Source {
  TensorList list;
  const at::Tensor* tensor = nullptr;
  std::optional<c10::Scalar> scalar;
  std::optional<Scalars> scalars;
  bool is_list = false;
};
Source L(TensorList l) {
  Source s;
  s.list = l;
  s.is_list = true;
  return s;
}
Source T(const at::Tensor& t) {
  Source s;
  s.tensor = &t;
  return s;
}
Source S(const c10::Scalar& v) {
  Source s;
  s.scalar = v;
  return s;
}
Source SL(Scalars v) {
  Source s;
  s.scalars = v;
  return s;
}

bool is_tpu(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

// The elements of a call, or nullopt when the one-program path does not
// apply (then the caller runs PyTorch's per-tensor implementation).
std::optional<std::vector<Element>> zip(const std::vector<Source>& sources) {
  size_t n = 0;
  bool have_n = false;
  for (const Source& s : sources) {
    size_t len = s.is_list ? s.list.size() : s.scalars ? s.scalars->size() : 0;
    if (!s.is_list && !s.scalars) continue;
    if (!have_n) {
      n = len;
      have_n = true;
    } else if (len != n) {
      return std::nullopt;
    }
  }
  if (!have_n || n == 0) return std::nullopt;
  // The arguments every element shares, made once (a CPU tensor's item()
  // is a dispatcher call).
  std::vector<std::optional<Arg>> shared(sources.size());
  for (size_t k = 0; k < sources.size(); ++k) {
    const Source& s = sources[k];
    if (s.tensor) {
      const at::Tensor& t = *s.tensor;
      if (!t.defined() || t.dim() != 0) return std::nullopt;
      Arg a;
      a.tensor = &t;
      a.shared = static_cast<int>(k);
      if (t.device().is_cpu()) {
        a.is_scalar = true;
        a.scalar = t.item();
      } else if (!is_tpu(t)) {
        return std::nullopt;
      }
      shared[k] = a;
    } else if (s.scalar) {
      Arg a;
      a.is_scalar = true;
      a.scalar = *s.scalar;
      a.shared = static_cast<int>(k);
      shared[k] = a;
    }
  }
  std::vector<Element> elements(n);
  for (size_t i = 0; i < n; ++i) {
    Element& e = elements[i];
    for (size_t k = 0; k < sources.size(); ++k) {
      const Source& s = sources[k];
      if (shared[k]) {
        e.args.push_back(*shared[k]);
      } else if (s.is_list) {
        const at::Tensor& t = s.list[i];
        if (!is_tpu(t)) return std::nullopt;
        Arg a;
        a.tensor = &t;
        e.args.push_back(a);
      } else {
        Arg a;
        a.is_scalar = true;
        a.scalar = (*s.scalars)[i];
        e.args.push_back(a);
      }
    }
  }
  return elements;
}

bool plain_dtype(ScalarType t) {
  return has_element_type(t) && !c10::isComplexType(t) && t != ScalarType::Bool;
}

// Tensors of an element: on one tpu device, of one shape (shared ones
// 0-dim), of types the one-program path handles.
bool check_tensors(Element& e, bool allow_bool) {
  const at::Tensor* first = nullptr;
  for (const Arg& a : e.args) {
    if (!a.tensor || (a.is_scalar && a.shared >= 0)) continue;
    const at::Tensor& t = *a.tensor;
    const ScalarType st = t.scalar_type();
    if (!(plain_dtype(st) || (allow_bool && st == ScalarType::Bool))) return false;
    if (a.shared >= 0) continue;  // a 0-dim tpu tensor: checked for its device below
    if (!first) {
      first = &t;
    } else if (t.sizes() != first->sizes()) {
      return false;
    }
  }
  if (!first) return false;
  e.device = first->device();
  e.dims = first->sizes();
  for (const Arg& a : e.args) {
    if (a.tensor && !a.is_scalar && a.tensor->device() != e.device) return false;
  }
  return true;
}

c10::ScalarType promote(const Element& e, size_t count) {
  at::native::ResultTypeState state;
  for (size_t i = 0; i < count && i < e.args.size(); ++i) {
    const Arg& a = e.args[i];
    if (a.tensor) {
      state = at::native::update_result_type_state(*a.tensor, state);
    } else {
      state = at::native::update_result_type_state(a.scalar, state);
    }
  }
  return at::native::result_type(state);
}

ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

struct Spec {
  const char* name;
  ForeachOp op;
  UnaryOp unary = UnaryOp::kNeg;
};

// The elements' destinations as one list: the caller's list itself when
// the elements are all of it in order (one device), else copies.
struct Destinations {
  c10::ArrayRef<at::Tensor> in_place;  // a run of the caller's list
  std::vector<at::Tensor> copies;      // otherwise
  c10::ArrayRef<at::Tensor> get() const { return copies.empty() ? in_place : c10::ArrayRef<at::Tensor>(copies); }
};

Destinations destinations(const std::vector<const Element*>& elements) {
  Destinations d;
  const at::Tensor* first = elements.empty() ? nullptr : elements[0]->dst;
  bool in_order = first != nullptr;
  for (size_t i = 0; in_order && i < elements.size(); ++i) in_order = elements[i]->dst == first + i;
  if (in_order) {
    d.in_place = c10::ArrayRef<at::Tensor>(first, elements.size());
  } else {
    for (const Element* e : elements) d.copies.push_back(*e->dst);
  }
  return d;
}

// One program for the elements (all on one device): functional results, or
// written into the elements' destinations.
std::vector<at::Tensor> run_group(const Spec& spec, const std::vector<const Element*>& elements, bool inplace) {
  OpCall call{spec.name, "", {}, {}};
  // Every element has the same arguments (zip), so one flat list of slots
  // serves them all, `per` to an element.
  const size_t per = elements.empty() ? 0 : elements[0]->args.size();
  call.attributes.reserve(2 + elements.size() * (1 + per));
  call.attributes.push_back(static_cast<char>(spec.op));
  call.attributes.push_back(static_cast<char>(spec.unary));
  call.tensors.reserve(elements.size() * per);
  // A shared argument is one program input: (source, type) -> scalar index,
  // source -> tensor index. An overload has at most a few.
  c10::SmallVector<std::tuple<int, int, size_t>, 4> shared_scalars;
  c10::SmallVector<std::pair<int, size_t>, 2> shared_tensors;
  std::vector<ArgSlot> slots;
  slots.reserve(elements.size() * per);
  std::vector<ElementType> outs;
  outs.reserve(elements.size());
  for (const Element* element : elements) {
    const Element& e = *element;
    TORCH_INTERNAL_ASSERT(e.args.size() == per, spec.name, ": elements with different arguments");
    const ElementType out = to_element_type(e.out, spec.name);
    const ElementType scalar_type = ops::foreach_compute_type(spec.op, out);
    const ScalarType scalar_st = to_scalar_type(scalar_type);
    outs.push_back(out);
    call.attributes.push_back(static_cast<char>(out));
    for (const Arg& a : e.args) {
      ArgSlot slot{};
      if (a.is_scalar) {
        const c10::Scalar value = cast_scalar(a.scalar, scalar_st);
        if (a.shared >= 0) {
          auto it = std::find_if(shared_scalars.begin(), shared_scalars.end(), [&](const auto& entry) {
            return std::get<0>(entry) == a.shared && std::get<1>(entry) == static_cast<int>(scalar_type);
          });
          if (it == shared_scalars.end()) {
            call.scalars.push_back({scalar_type, value});
            shared_scalars.emplace_back(a.shared, static_cast<int>(scalar_type), call.scalars.size() - 1);
            it = shared_scalars.end() - 1;
          }
          slot = {true, std::get<2>(*it)};
        } else {
          call.scalars.push_back({scalar_type, value});
          slot = {true, call.scalars.size() - 1};
        }
        call.attributes.push_back(a.shared >= 0 ? 'S' : 's');
      } else {
        // Borrowed: the caller's lists hold every tensor for the whole call.
        if (a.shared >= 0) {
          auto it = std::find_if(shared_tensors.begin(), shared_tensors.end(),
                                 [&](const auto& entry) { return entry.first == a.shared; });
          if (it == shared_tensors.end()) {
            call.tensors.push_back(TensorArg::borrowed(*a.tensor));
            shared_tensors.emplace_back(a.shared, call.tensors.size() - 1);
            it = shared_tensors.end() - 1;
          }
          slot = {false, it->second};
        } else {
          call.tensors.push_back(TensorArg::borrowed(*a.tensor));
          slot = {false, call.tensors.size() - 1};
        }
        call.attributes.push_back(a.shared >= 0 ? 'T' : 't');
      }
      slots.push_back(slot);
    }
  }
  const ForeachOp op = spec.op;
  const UnaryOp unary = spec.unary;
  // Lowered (if at all) within this call: it may refer to the locals.
  auto body = [&elements, &slots, &outs, per, op, unary](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                         const std::vector<hlo::Value>& s) {
    std::vector<hlo::Value> results;
    results.reserve(elements.size());
    std::vector<hlo::Value> args;
    for (size_t i = 0; i < elements.size(); ++i) {
      args.clear();
      for (size_t k = 0; k < per; ++k) args.push_back(slots[i * per + k].pick(t, s));
      hlo::Value r = ops::lower_foreach_element(b, op, unary, args, outs[i]);
      results.push_back(ops::broadcast_to(b, r, elements[i]->dims.vec()));
    }
    return results;
  };
  if (inplace) {
    run_op_into(call, body, destinations(elements).get());
    return {};
  }
  return run_op(call, body);
}

// Runs the elements, one program per device.
std::vector<at::Tensor> run_elements(const Spec& spec, const std::vector<Element>& elements, bool inplace) {
  std::map<int, std::vector<size_t>> by_device;
  for (size_t i = 0; i < elements.size(); ++i) {
    std::vector<size_t>& indices = by_device[elements[i].device.index()];
    if (indices.empty()) indices.reserve(elements.size());
    indices.push_back(i);
  }
  std::vector<at::Tensor> results(inplace ? 0 : elements.size());
  for (const auto& [device, indices] : by_device) {
    std::vector<const Element*> group;
    group.reserve(indices.size());
    for (size_t i : indices) group.push_back(&elements[i]);
    auto outs = run_group(spec, group, inplace);
    if (inplace) {
      // Foreach ops have no ADInplaceOrView kernel: bump the destinations'
      // versions here, as CUDA's kernels do, so that autograd sees a saved
      // tensor that was updated (an optimizer step before backward).
      for (const Element* e : group) e->dst->unsafeGetTensorImpl()->bump_version();
    } else {
      for (size_t j = 0; j < indices.size(); ++j) {
        // As each op alone would lay it out (x + 1 of a transposed x is transposed).
        std::vector<TensorArg> inputs;
        for (const Arg& a : elements[indices[j]].args) {
          if (!a.is_scalar) inputs.push_back(TensorArg::borrowed(*a.tensor));
        }
        results[indices[j]] = in_iterator_layout(outs.at(j), inputs);
      }
    }
  }
  return results;
}

// The bytes of its storage a tensor's elements span.
struct Span {
  const void* storage;
  int64_t begin, end;
  size_t index;  // of the destination, in destination_spans
};

Span span_of(const at::Tensor& t, size_t index = 0) {
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * std::abs(t.stride(d));
  const int64_t begin = t.storage_offset() * static_cast<int64_t>(t.itemsize());
  return {t.storage().unsafeGetStorageImpl(), begin, begin + extent * static_cast<int64_t>(t.itemsize()), index};
}

bool before(const Span& a, const Span& b) {
  return a.storage != b.storage ? std::less<const void*>()(a.storage, b.storage) : a.begin < b.begin;
}

// The non-empty destinations' spans, by storage and then position.
std::vector<Span> destination_spans(TensorList self) {
  std::vector<Span> spans;
  spans.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) {
    if (self[i].numel() > 0) spans.push_back(span_of(self[i], i));
  }
  std::sort(spans.begin(), spans.end(), before);
  return spans;
}

// Whether the destinations' memory spans are disjoint (`spans`:
// destination_spans). One program reads every input before it writes any
// output, so destinations that share memory (x and x.view(2, 4), or one
// tensor named twice) go op by op, as CPU updates them. Views of one flat
// buffer side by side stay one program.
bool disjoint(const std::vector<Span>& spans) {
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].storage == spans[i - 1].storage && spans[i].begin < spans[i - 1].end) return false;
  }
  return true;
}

// Whether an element's input overlaps a destination in a way one program,
// which reads every input before it writes any output, cannot reproduce
// (`spans`: the destinations' destination_spans, disjoint; every element's
// dst set):
// - another element's destination: CPU's loop reads it after writing it
//   (`_foreach_add_([a, b], [b, a])` adds the new a to b);
// - part of its own destination (`x[:4]` reading `x[2:6]`): the per-tensor
//   op refuses that, as CPU's does.
// (Gradients viewing one DDP bucket, each its own element's input and
// destination, overlap neither way.)
bool overlapping_reads(const std::vector<Element>& elements, const std::vector<Span>& spans) {
  for (size_t j = 0; j < elements.size(); ++j) {
    for (const Arg& a : elements[j].args) {
      if (!a.tensor || !a.tensor->has_storage() || a.tensor->numel() == 0) continue;
      const Span read = span_of(*a.tensor);
      // Spans are disjoint and sorted: the first that could overlap is the
      // last one starting at or before the read, then those starting
      // inside it.
      auto it = std::upper_bound(spans.begin(), spans.end(), read, before);
      if (it != spans.begin() && std::prev(it)->storage == read.storage) --it;
      for (; it != spans.end() && it->storage == read.storage && it->begin < read.end; ++it) {
        if (read.begin >= it->end) continue;
        if (it->index != j) return true;
        if (at::get_overlap_status(*a.tensor, *elements[j].dst) == at::MemOverlapStatus::Partial) return true;
      }
    }
  }
  return false;
}

// In-place: every result casts to its destination, the destinations do
// not overlap and no input overlaps a destination (overlapping_reads).
bool prepare_inplace(std::vector<Element>& elements, TensorList self) {
  for (size_t i = 0; i < elements.size(); ++i) {
    Element& e = elements[i];
    e.dst = &self[i];
    if (!c10::canCast(e.out, self[i].scalar_type())) return false;
    if (self[i].sizes() != e.dims) return false;
  }
  const std::vector<Span> spans = destination_spans(self);
  return disjoint(spans) && !overlapping_reads(elements, spans);
}

// ---- result dtypes per op --------------------------------------------------------------------

enum class Rule {
  kPromote2,     // the first two arguments, like a binary op
  kPromote3,     // the first three (addcmul / addcdiv)
  kDiv,          // binary, integers to the default float
  kSelf,         // the first argument's (lerp: all tensors must match)
  kFloatUnary,   // integers to the default float
  kSameUnary,    // the input's
  kFloatPow,     // binary promotion, float results only
};

bool assign_dtypes(std::vector<Element>& elements, Rule rule) {
  for (Element& e : elements) {
    switch (rule) {
      case Rule::kPromote2: e.out = promote(e, 2); break;
      case Rule::kPromote3: e.out = promote(e, 3); break;
      case Rule::kDiv:
        e.out = promote(e, 2);
        if (c10::isIntegralType(e.out, true)) e.out = default_float();
        break;
      case Rule::kSelf:
        e.out = e.args[0].tensor->scalar_type();
        for (const Arg& a : e.args) {
          if (a.tensor && a.tensor->scalar_type() != e.out) return false;
        }
        break;
      case Rule::kFloatUnary: {
        const ScalarType in = e.args[0].tensor->scalar_type();
        e.out = c10::isIntegralType(in, true) ? default_float() : in;
        break;
      }
      case Rule::kSameUnary: e.out = e.args[0].tensor->scalar_type(); break;
      case Rule::kFloatPow:
        e.out = promote(e, 2);
        if (!c10::isFloatingType(e.out)) return false;
        break;
    }
    if (!plain_dtype(e.out)) return false;
  }
  return true;
}

// The whole path: elements, checks, dtypes, programs. Returns nullopt when
// the per-tensor implementation must run instead.
std::optional<std::vector<at::Tensor>> try_run(const Spec& spec, const std::vector<Source>& sources, Rule rule,
                                               TensorList* self_inplace,
                                               std::optional<c10::Scalar> alpha = std::nullopt) {
  auto elements = zip(sources);
  if (!elements) return std::nullopt;
  for (Element& e : *elements) {
    if (!check_tensors(e, false)) return std::nullopt;
  }
  if (!assign_dtypes(*elements, rule)) return std::nullopt;
  if (alpha && !(alpha->isIntegral(true) && alpha->toLong() == 1)) {
    for (Element& e : *elements) {
      if (c10::isIntegralType(e.out, true) && !alpha->isIntegral(true)) return std::nullopt;
      Arg a;
      a.is_scalar = true;
      a.scalar = *alpha;
      a.shared = 1000;
      e.args.push_back(a);
    }
  }
  if (self_inplace && !prepare_inplace(*elements, *self_inplace)) return std::nullopt;
  return run_elements(spec, *elements, self_inplace != nullptr);
}

// ---- add / sub / mul / div -------------------------------------------------------------------

#define TPU_FOREACH_BINARY(NAME, OP, RULE)                                                                   \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, const c10::Scalar& s) {                           \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), S(s)}, RULE, nullptr)) return *r; \
    return at::native::foreach_tensor_##NAME##_scalar_kernel_slow(self, s);                                 \
  }                                                                                                         \
  void NAME##_scalar_(TensorList self, const c10::Scalar& s) {                                              \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), S(s)}, RULE, &self)) return;              \
    at::native::foreach_tensor_##NAME##_scalar_kernel_slow_(self, s);                                       \
  }                                                                                                         \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, Scalars s) {                                   \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), SL(s)}, RULE, nullptr)) return *r; \
    return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow(self, s);                             \
  }                                                                                                         \
  void NAME##_scalarlist_(TensorList self, Scalars s) {                                                     \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), SL(s)}, RULE, &self)) return;             \
    at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow_(self, s);                                   \
  }

TPU_FOREACH_BINARY(add, ForeachOp::kAdd, Rule::kPromote2)
TPU_FOREACH_BINARY(sub, ForeachOp::kSub, Rule::kPromote2)
TPU_FOREACH_BINARY(mul, ForeachOp::kMul, Rule::kPromote2)
TPU_FOREACH_BINARY(div, ForeachOp::kDiv, Rule::kDiv)
#undef TPU_FOREACH_BINARY

// List and Tensor overloads: add / sub take alpha, mul / div do not.
#define TPU_FOREACH_LIST_ALPHA(NAME, OP)                                                                       \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other, const c10::Scalar& alpha) {         \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, Rule::kPromote2, nullptr, \
                         alpha))                                                                              \
      return *r;                                                                                              \
    return at::native::foreach_tensor_##NAME##_list_kernel_slow(self, other, alpha);                          \
  }                                                                                                           \
  void NAME##_list_(TensorList self, TensorList other, const c10::Scalar& alpha) {                            \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, Rule::kPromote2, &self, alpha))  \
      return;                                                                                                 \
    at::native::foreach_tensor_##NAME##_list_kernel_slow_(self, other, alpha);                                \
  }
TPU_FOREACH_LIST_ALPHA(add, ForeachOp::kAdd)
TPU_FOREACH_LIST_ALPHA(sub, ForeachOp::kSub)
#undef TPU_FOREACH_LIST_ALPHA

std::vector<at::Tensor> add_tensor(TensorList self, const at::Tensor& other, const c10::Scalar& alpha) {
  if (auto r = try_run({"aten::_foreach_add", ForeachOp::kAdd}, {L(self), T(other)}, Rule::kPromote2,
                       nullptr, alpha))
    return *r;
  return at::native::foreach_tensor_add_tensor_kernel_slow(self, other, alpha);
}
void add_tensor_(TensorList self, const at::Tensor& other, const c10::Scalar& alpha) {
  if (try_run({"aten::_foreach_add", ForeachOp::kAdd}, {L(self), T(other)}, Rule::kPromote2, &self, alpha))
    return;
  at::native::foreach_tensor_add_tensor_kernel_slow_(self, other, alpha);
}

#define TPU_FOREACH_LIST_TENSOR(NAME, OP, RULE)                                                                \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other) {                                     \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, RULE, nullptr)) return *r; \
    return at::native::foreach_tensor_##NAME##_list_kernel_slow(self, other);                                  \
  }                                                                                                            \
  void NAME##_list_(TensorList self, TensorList other) {                                                       \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, RULE, &self)) return;             \
    at::native::foreach_tensor_##NAME##_list_kernel_slow_(self, other);                                        \
  }                                                                                                            \
  std::vector<at::Tensor> NAME##_tensor(TensorList self, const at::Tensor& other) {                            \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), T(other)}, RULE, nullptr)) return *r; \
    return at::native::foreach_tensor_##NAME##_tensor_kernel_slow(self, other);                                \
  }                                                                                                            \
  void NAME##_tensor_(TensorList self, const at::Tensor& other) {                                              \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), T(other)}, RULE, &self)) return;             \
    at::native::foreach_tensor_##NAME##_tensor_kernel_slow_(self, other);                                      \
  }
TPU_FOREACH_LIST_TENSOR(mul, ForeachOp::kMul, Rule::kPromote2)
TPU_FOREACH_LIST_TENSOR(div, ForeachOp::kDiv, Rule::kDiv)
#undef TPU_FOREACH_LIST_TENSOR

// ---- addcmul / addcdiv -----------------------------------------------------------------------

// The Tensor overload's scalars: a 1-D CPU tensor with one value per element
// (CPU and CUDA read it on the host too).
std::optional<std::vector<c10::Scalar>> host_scalars(const at::Tensor& scalars, size_t n) {
  if (!scalars.defined() || !scalars.device().is_cpu() || scalars.dim() != 1 ||
      static_cast<size_t>(scalars.numel()) != n) {
    return std::nullopt;
  }
  std::vector<c10::Scalar> out;
  at::Tensor c = scalars.contiguous();
  for (size_t i = 0; i < n; ++i) out.push_back(c[static_cast<int64_t>(i)].item());
  return out;
}

bool addcdiv_ints(TensorList t1, TensorList t2) {
  for (size_t i = 0; i < t1.size() && i < t2.size(); ++i) {
    if (c10::isIntegralType(t1[i].scalar_type(), true) && c10::isIntegralType(t2[i].scalar_type(), true)) return true;
  }
  return false;
}

#define TPU_FOREACH_ADDC(NAME, OP, IS_DIV)                                                                       \
  std::optional<std::vector<at::Tensor>> NAME##_run(TensorList self, TensorList a, TensorList b, Source value,  \
                                                    bool inplace) {                                              \
    if (IS_DIV && addcdiv_ints(a, b)) return std::nullopt;                                                       \
    return try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(a), L(b), value}, Rule::kPromote3,        \
                   inplace ? &self : nullptr);                                                                   \
  }                                                                                                              \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, TensorList a, TensorList b, const c10::Scalar& v) {   \
    if (auto r = NAME##_run(self, a, b, S(v), false)) return *r;                                                 \
    return at::native::foreach_tensor_##NAME##_scalar_slow(self, a, b, v);                                      \
  }                                                                                                              \
  void NAME##_scalar_(TensorList self, TensorList a, TensorList b, const c10::Scalar& v) {                      \
    if (NAME##_run(self, a, b, S(v), true)) return;                                                              \
    at::native::foreach_tensor_##NAME##_scalar_slow_(self, a, b, v);                                            \
  }                                                                                                              \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, TensorList a, TensorList b, Scalars v) {          \
    if (auto r = NAME##_run(self, a, b, SL(v), false)) return *r;                                                \
    return at::native::foreach_tensor_##NAME##_scalarlist_slow(self, a, b, v);                                  \
  }                                                                                                              \
  void NAME##_scalarlist_(TensorList self, TensorList a, TensorList b, Scalars v) {                             \
    if (NAME##_run(self, a, b, SL(v), true)) return;                                                             \
    at::native::foreach_tensor_##NAME##_scalarlist_slow_(self, a, b, v);                                        \
  }                                                                                                              \
  std::vector<at::Tensor> NAME##_tensor(TensorList self, TensorList a, TensorList b, const at::Tensor& v) {    \
    if (auto values = host_scalars(v, self.size())) {                                                            \
      if (auto r = NAME##_run(self, a, b, SL(*values), false)) return *r;                                        \
    }                                                                                                            \
    return at::native::foreach_tensor_##NAME##_tensor_slow(self, a, b, v);                                      \
  }                                                                                                              \
  void NAME##_tensor_(TensorList self, TensorList a, TensorList b, const at::Tensor& v) {                       \
    if (auto values = host_scalars(v, self.size())) {                                                            \
      if (NAME##_run(self, a, b, SL(*values), true)) return;                                                     \
    }                                                                                                            \
    at::native::foreach_tensor_##NAME##_tensor_slow_(self, a, b, v);                                            \
  }
TPU_FOREACH_ADDC(addcmul, ForeachOp::kAddcmul, false)
TPU_FOREACH_ADDC(addcdiv, ForeachOp::kAddcdiv, true)
#undef TPU_FOREACH_ADDC

// ---- lerp ------------------------------------------------------------------------------------

std::vector<at::Tensor> lerp_scalar(TensorList self, TensorList end, const c10::Scalar& w) {
  if (auto r = try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), S(w)}, Rule::kSelf,
                       nullptr))
    return *r;
  return at::native::foreach_tensor_lerp_list_kernel_slow(self, end, w);
}
void lerp_scalar_(TensorList self, TensorList end, const c10::Scalar& w) {
  if (try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), S(w)}, Rule::kSelf, &self)) return;
  at::native::foreach_tensor_lerp_list_kernel_slow_(self, end, w);
}
std::vector<at::Tensor> lerp_scalarlist(TensorList self, TensorList end, Scalars w) {
  if (auto r = try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), SL(w)}, Rule::kSelf,
                       nullptr))
    return *r;
  return at::native::foreach_tensor_lerp_scalarlist_kernel_slow(self, end, w);
}
void lerp_scalarlist_(TensorList self, TensorList end, Scalars w) {
  if (try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), SL(w)}, Rule::kSelf, &self))
    return;
  at::native::foreach_tensor_lerp_scalarlist_kernel_slow_(self, end, w);
}
std::vector<at::Tensor> lerp_list(TensorList self, TensorList end, TensorList w) {
  if (auto r = try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), L(w)}, Rule::kSelf,
                       nullptr))
    return *r;
  return at::native::foreach_tensor_ternary_lerp_slow(self, end, w);
}
void lerp_list_(TensorList self, TensorList end, TensorList w) {
  if (try_run({"aten::_foreach_lerp", ForeachOp::kLerp}, {L(self), L(end), L(w)}, Rule::kSelf, &self)) return;
  at::native::foreach_tensor_ternary_lerp_slow_(self, end, w);
}

// ---- clamp_min / clamp_max / maximum / minimum -----------------------------------------------

// _foreach_maximum is clamp_min and _foreach_minimum clamp_max, as in PyTorch.
#define TPU_FOREACH_CLAMP(NAME, OP)                                                                               \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, const c10::Scalar& s) {                                \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), S(s)}, Rule::kPromote2, nullptr))      \
      return *r;                                                                                                 \
    return at::native::foreach_tensor_##NAME##_scalar_kernel_slow(self, s);                                      \
  }                                                                                                              \
  void NAME##_scalar_(TensorList self, const c10::Scalar& s) {                                                   \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), S(s)}, Rule::kPromote2, &self)) return;        \
    at::native::foreach_tensor_##NAME##_scalar_kernel_slow_(self, s);                                            \
  }                                                                                                              \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, Scalars s) {                                        \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), SL(s)}, Rule::kPromote2, nullptr))     \
      return *r;                                                                                                 \
    return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow(self, s);                                  \
  }                                                                                                              \
  void NAME##_scalarlist_(TensorList self, Scalars s) {                                                          \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), SL(s)}, Rule::kPromote2, &self)) return;       \
    at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow_(self, s);                                        \
  }                                                                                                              \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other) {                                       \
    if (auto r = try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, Rule::kPromote2, nullptr))  \
      return *r;                                                                                                 \
    return at::native::foreach_tensor_##NAME##_list_kernel_slow(self, other);                                    \
  }                                                                                                              \
  void NAME##_list_(TensorList self, TensorList other) {                                                         \
    if (try_run({"aten::_foreach_" #NAME, OP}, {L(self), L(other)}, Rule::kPromote2, &self)) return;    \
    at::native::foreach_tensor_##NAME##_list_kernel_slow_(self, other);                                          \
  }
TPU_FOREACH_CLAMP(clamp_min, ForeachOp::kClampMin)
TPU_FOREACH_CLAMP(clamp_max, ForeachOp::kClampMax)
#undef TPU_FOREACH_CLAMP

// ---- pow -------------------------------------------------------------------------------------

std::vector<at::Tensor> pow_list(TensorList self, TensorList e) {
  if (auto r = try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), L(e)}, Rule::kFloatPow, nullptr))
    return *r;
  return at::native::foreach_tensor_pow_list_kernel_slow(self, e);
}
void pow_list_(TensorList self, TensorList e) {
  if (try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), L(e)}, Rule::kFloatPow, &self)) return;
  at::native::foreach_tensor_pow_list_kernel_slow_(self, e);
}
std::vector<at::Tensor> pow_scalar(TensorList self, const c10::Scalar& e) {
  if (auto r = try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), S(e)}, Rule::kFloatPow, nullptr))
    return *r;
  return at::native::foreach_tensor_pow_scalar_kernel_slow(self, e);
}
void pow_scalar_(TensorList self, const c10::Scalar& e) {
  if (try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), S(e)}, Rule::kFloatPow, &self)) return;
  at::native::foreach_tensor_pow_scalar_kernel_slow_(self, e);
}
std::vector<at::Tensor> pow_scalarlist(TensorList self, Scalars e) {
  if (auto r = try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), SL(e)}, Rule::kFloatPow, nullptr))
    return *r;
  return at::native::foreach_tensor_pow_scalarlist_kernel_slow(self, e);
}
void pow_scalarlist_(TensorList self, Scalars e) {
  if (try_run({"aten::_foreach_pow", ForeachOp::kPow}, {L(self), SL(e)}, Rule::kFloatPow, &self)) return;
  at::native::foreach_tensor_pow_scalarlist_kernel_slow_(self, e);
}
std::vector<at::Tensor> scalar_pow_list(const c10::Scalar& base, TensorList e) {
  if (auto r = try_run({"aten::_foreach_pow", ForeachOp::kPow}, {S(base), L(e)}, Rule::kFloatPow, nullptr))
    return *r;
  return at::native::foreach_scalar_pow_list_kernel_slow(base, e);
}

// ---- unary -----------------------------------------------------------------------------------

#define TPU_FOREACH_UNARY(NAME, UOP, RULE)                                                                      \
  std::vector<at::Tensor> NAME(TensorList self) {                                                              \
    if (auto r = try_run({"aten::_foreach_" #NAME, ForeachOp::kUnary, UOP}, {L(self)}, RULE, nullptr)) \
      return *r;                                                                                               \
    return at::native::foreach_tensor_##NAME##_slow(self);                                                     \
  }                                                                                                            \
  void NAME##_(TensorList self) {                                                                              \
    if (try_run({"aten::_foreach_" #NAME, ForeachOp::kUnary, UOP}, {L(self)}, RULE, &self)) return;   \
    at::native::foreach_tensor_##NAME##_slow_(self);                                                           \
  }
TPU_FOREACH_UNARY(sqrt, UnaryOp::kSqrt, Rule::kFloatUnary)
TPU_FOREACH_UNARY(exp, UnaryOp::kExp, Rule::kFloatUnary)
TPU_FOREACH_UNARY(reciprocal, UnaryOp::kReciprocal, Rule::kFloatUnary)
TPU_FOREACH_UNARY(neg, UnaryOp::kNeg, Rule::kSameUnary)
TPU_FOREACH_UNARY(abs, UnaryOp::kAbs, Rule::kSameUnary)
TPU_FOREACH_UNARY(sign, UnaryOp::kSign, Rule::kSameUnary)
#undef TPU_FOREACH_UNARY

// ---- zero_ / copy_ ---------------------------------------------------------------------------

void zero_(TensorList self) {
  std::vector<Element> elements(self.size());
  bool ok = !self.empty();
  std::unordered_set<const c10::TensorImpl*> seen;
  std::unordered_set<const c10::StorageImpl*> storages;
  for (size_t i = 0; ok && i < self.size(); ++i) {
    const at::Tensor& t = self[i];
    // Tensors sharing a storage (gradients viewing one DDP bucket) are
    // zeroed one by one: the shared-storage path of run_op_into computes
    // its values first, from tensor inputs, and this op has none.
    ok = is_tpu(t) && has_element_type(t.scalar_type()) && !c10::isComplexType(t.scalar_type()) &&
         seen.insert(t.unsafeGetTensorImpl()).second && storages.insert(t.storage().unsafeGetStorageImpl()).second;
    if (!ok) break;
    Element& e = elements[i];
    Arg zero;
    zero.is_scalar = true;
    zero.scalar = 0;
    zero.shared = 0;
    e.args.push_back(zero);
    e.out = t.scalar_type();
    e.dst = &t;
    e.device = t.device();
    e.dims = t.sizes();
  }
  if (ok) {
    run_elements({"aten::_foreach_zero_", ForeachOp::kCopy}, elements, true);
    return;
  }
  at::native::foreach_tensor_zero_slow_(self);
}

void copy_(TensorList self, TensorList src, bool non_blocking) {
  const std::vector<Span> spans = destination_spans(self);
  bool ok = !self.empty() && self.size() == src.size() && disjoint(spans);
  std::vector<Element> elements(ok ? self.size() : 0);
  for (size_t i = 0; ok && i < self.size(); ++i) {
    const at::Tensor& d = self[i];
    const at::Tensor& s = src[i];
    auto plain = [](const at::Tensor& t) {
      return has_element_type(t.scalar_type()) && !c10::isComplexType(t.scalar_type());
    };
    ok = is_tpu(d) && is_tpu(s) && d.device() == s.device() && plain(d) && plain(s) && d.sizes() == s.sizes() &&
         !s.is_alias_of(d);
    if (!ok) break;
    Element& e = elements[i];
    Arg a;
    a.tensor = &s;
    e.args.push_back(a);
    e.out = d.scalar_type();
    e.dst = &d;
    e.device = d.device();
    e.dims = d.sizes();
  }
  ok = ok && !overlapping_reads(elements, spans);
  if (ok) {
    run_elements({"aten::_foreach_copy_", ForeachOp::kCopy}, elements, true);
    return;
  }
  at::native::foreach_tensor_copy_list_kernel_slow_(self, src, non_blocking);
}

// ---- norm ------------------------------------------------------------------------------------

std::vector<at::Tensor> norm(TensorList self, const c10::Scalar& ord, std::optional<ScalarType> dtype) {
  const double p = ord.toDouble();
  bool ok = !self.empty() && !ord.isComplex() && !std::isnan(p);
  if (dtype) ok = ok && c10::isFloatingType(*dtype) && plain_dtype(*dtype);
  std::map<int, std::vector<size_t>> by_device;
  for (size_t i = 0; ok && i < self.size(); ++i) {
    const at::Tensor& t = self[i];
    ok = is_tpu(t) && c10::isFloatingType(t.scalar_type()) && plain_dtype(t.scalar_type()) &&
         !(std::isinf(p) && t.numel() == 0);
    // A narrowing dtype takes the slow path, where vector_norm refuses it.
    if (dtype) ok = ok && c10::promoteTypes(t.scalar_type(), *dtype) == *dtype;
    if (ok) by_device[t.device().index()].push_back(i);
  }
  if (!ok) return at::native::foreach_tensor_norm_slow(self, ord, dtype);
  std::vector<at::Tensor> results(self.size());
  for (const auto& [device, indices] : by_device) {
    OpCall call{"aten::_foreach_norm", "", {}, {}};
    char bits[sizeof(double)];
    std::memcpy(bits, &p, sizeof p);
    call.attributes.append(bits, sizeof bits);
    std::vector<ElementType> outs;
    for (size_t i : indices) {
      call.tensors.push_back(self[i]);
      outs.push_back(to_element_type(dtype.value_or(self[i].scalar_type()), call.name));
      call.attributes.push_back(static_cast<char>(outs.back()));
    }
    auto outputs = run_op(call, [outs, p](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                          const std::vector<hlo::Value>&) {
      std::vector<hlo::Value> r;
      for (size_t i = 0; i < t.size(); ++i) r.push_back(ops::lower_vector_norm(b, t[i], p, outs[i]));
      return r;
    });
    for (size_t j = 0; j < indices.size(); ++j) results[indices[j]] = outputs.at(j);
  }
  return results;
}

// ---- linalg_vector_norm (clip_grad_norm_ combines the per-tensor norms with it) ---------------

struct VectorNorm {
  OpCall call;
  double ord;
  std::vector<int64_t> dims;
  bool keepdim;
  ElementType out;
  std::vector<int64_t> shape;
  // A complex input: the complex type its magnitudes are taken in.
  std::optional<ElementType> complex;
};

VectorNorm vector_norm_call(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                            bool keepdim, std::optional<ScalarType> dtype) {
  const char* name = "aten::linalg_vector_norm";
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()) || c10::isComplexType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", self.scalar_type());
  const bool complex = c10::isComplexType(self.scalar_type());
  if (dtype && complex) {
    TORCH_CHECK(c10::isComplexType(*dtype), "linalg.vector_norm: dtype should be complex for complex inputs, but got ",
                *dtype);
  } else if (dtype) {
    TORCH_CHECK(c10::isFloatingType(*dtype), "linalg.vector_norm: dtype should be floating point, got ", *dtype);
  }
  TORCH_CHECK(!dtype || c10::promoteTypes(self.scalar_type(), *dtype) == *dtype,
              "linalg.vector_norm: the dtype of the input (", self.scalar_type(),
              ") should be convertible without narrowing to the specified dtype (", *dtype, ")");
  const double p = ord.toDouble();
  const ScalarType target = dtype.value_or(self.scalar_type());
  VectorNorm v{OpCall{name, "", {self}, {}}, p, {}, keepdim, to_element_type(c10::toRealValueType(target), name), {},
               {}};
  if (complex) v.complex = to_element_type(target, name);
  const int64_t rank = self.dim();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (dim && !dim->empty()) {
    for (int64_t d : *dim) {
      const int64_t w = at::maybe_wrap_dim(d, rank);  // a 0-dim tensor takes 0 and -1
      TORCH_CHECK(rank == 0 || !reduced[static_cast<size_t>(w)], "linalg.vector_norm: dim ", w,
                  " appears multiple times in the list of dims");
      if (rank > 0) reduced[static_cast<size_t>(w)] = true;
    }
  } else {
    std::fill(reduced.begin(), reduced.end(), true);
  }
  int64_t reduced_count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      v.dims.push_back(d);
      reduced_count *= self.size(d);
      if (keepdim) v.shape.push_back(1);
    } else {
      v.shape.push_back(self.size(d));
    }
  }
  TORCH_CHECK(!(p < 0 || std::isinf(p)) || reduced_count > 0, "linalg.vector_norm cannot compute the ", ord,
              " norm on an empty tensor because the operation does not have an identity");
  char bits[sizeof(double)];
  std::memcpy(bits, &p, sizeof p);
  v.call.attributes.append(bits, sizeof bits);
  v.call.attributes.push_back(static_cast<char>(v.out));
  v.call.attributes.push_back(v.complex ? static_cast<char>(*v.complex) : '-');
  v.call.attributes.push_back(keepdim ? 'k' : '-');
  for (int64_t d : v.dims) v.call.attributes.push_back(static_cast<char>(d));
  return v;
}

LoweringBody vector_norm_body(const VectorNorm& v) {
  return [ord = v.ord, dims = v.dims, keepdim = v.keepdim, out = v.out, complex = v.complex](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    // The norm of a complex vector is the norm of its magnitudes.
    const hlo::Value x = complex ? ops::lower_unary(b, ops::UnaryOp::kAbs, t[0], *complex) : t[0];
    return std::vector<hlo::Value>{ops::lower_vector_norm(b, x, ord, dims, keepdim, out)};
  };
}

at::Tensor linalg_vector_norm(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                              bool keepdim, std::optional<ScalarType> dtype) {
  VectorNorm v = vector_norm_call(self, ord, dim, keepdim, dtype);
  return run_op(v.call, vector_norm_body(v)).at(0);
}

at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                                   bool keepdim, std::optional<ScalarType> dtype, at::Tensor& out) {
  VectorNorm v = vector_norm_call(self, ord, dim, keepdim, dtype);
  check_exact(c10::toRealValueType(dtype.value_or(self.scalar_type())), out);
  at::native::resize_output(out, v.shape);
  run_op_into(v.call, vector_norm_body(v), out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_vector_norm", linalg_vector_norm);
  m.impl("linalg_vector_norm.out", linalg_vector_norm_out);
  m.impl("_foreach_add.Scalar", add_scalar);
  m.impl("_foreach_add_.Scalar", add_scalar_);
  m.impl("_foreach_add.ScalarList", add_scalarlist);
  m.impl("_foreach_add_.ScalarList", add_scalarlist_);
  m.impl("_foreach_add.List", add_list);
  m.impl("_foreach_add_.List", add_list_);
  m.impl("_foreach_add.Tensor", add_tensor);
  m.impl("_foreach_add_.Tensor", add_tensor_);
  m.impl("_foreach_sub.Scalar", sub_scalar);
  m.impl("_foreach_sub_.Scalar", sub_scalar_);
  m.impl("_foreach_sub.ScalarList", sub_scalarlist);
  m.impl("_foreach_sub_.ScalarList", sub_scalarlist_);
  m.impl("_foreach_sub.List", sub_list);
  m.impl("_foreach_sub_.List", sub_list_);
  m.impl("_foreach_mul.Scalar", mul_scalar);
  m.impl("_foreach_mul_.Scalar", mul_scalar_);
  m.impl("_foreach_mul.ScalarList", mul_scalarlist);
  m.impl("_foreach_mul_.ScalarList", mul_scalarlist_);
  m.impl("_foreach_mul.List", mul_list);
  m.impl("_foreach_mul_.List", mul_list_);
  m.impl("_foreach_mul.Tensor", mul_tensor);
  m.impl("_foreach_mul_.Tensor", mul_tensor_);
  m.impl("_foreach_div.Scalar", div_scalar);
  m.impl("_foreach_div_.Scalar", div_scalar_);
  m.impl("_foreach_div.ScalarList", div_scalarlist);
  m.impl("_foreach_div_.ScalarList", div_scalarlist_);
  m.impl("_foreach_div.List", div_list);
  m.impl("_foreach_div_.List", div_list_);
  m.impl("_foreach_div.Tensor", div_tensor);
  m.impl("_foreach_div_.Tensor", div_tensor_);
  m.impl("_foreach_addcmul.Scalar", addcmul_scalar);
  m.impl("_foreach_addcmul_.Scalar", addcmul_scalar_);
  m.impl("_foreach_addcmul.ScalarList", addcmul_scalarlist);
  m.impl("_foreach_addcmul_.ScalarList", addcmul_scalarlist_);
  m.impl("_foreach_addcmul.Tensor", addcmul_tensor);
  m.impl("_foreach_addcmul_.Tensor", addcmul_tensor_);
  m.impl("_foreach_addcdiv.Scalar", addcdiv_scalar);
  m.impl("_foreach_addcdiv_.Scalar", addcdiv_scalar_);
  m.impl("_foreach_addcdiv.ScalarList", addcdiv_scalarlist);
  m.impl("_foreach_addcdiv_.ScalarList", addcdiv_scalarlist_);
  m.impl("_foreach_addcdiv.Tensor", addcdiv_tensor);
  m.impl("_foreach_addcdiv_.Tensor", addcdiv_tensor_);
  m.impl("_foreach_lerp.Scalar", lerp_scalar);
  m.impl("_foreach_lerp_.Scalar", lerp_scalar_);
  m.impl("_foreach_lerp.ScalarList", lerp_scalarlist);
  m.impl("_foreach_lerp_.ScalarList", lerp_scalarlist_);
  m.impl("_foreach_lerp.List", lerp_list);
  m.impl("_foreach_lerp_.List", lerp_list_);
  m.impl("_foreach_clamp_min.Scalar", clamp_min_scalar);
  m.impl("_foreach_clamp_min_.Scalar", clamp_min_scalar_);
  m.impl("_foreach_clamp_min.ScalarList", clamp_min_scalarlist);
  m.impl("_foreach_clamp_min_.ScalarList", clamp_min_scalarlist_);
  m.impl("_foreach_clamp_min.List", clamp_min_list);
  m.impl("_foreach_clamp_min_.List", clamp_min_list_);
  m.impl("_foreach_maximum.Scalar", clamp_min_scalar);
  m.impl("_foreach_maximum_.Scalar", clamp_min_scalar_);
  m.impl("_foreach_maximum.ScalarList", clamp_min_scalarlist);
  m.impl("_foreach_maximum_.ScalarList", clamp_min_scalarlist_);
  m.impl("_foreach_maximum.List", clamp_min_list);
  m.impl("_foreach_maximum_.List", clamp_min_list_);
  m.impl("_foreach_clamp_max.Scalar", clamp_max_scalar);
  m.impl("_foreach_clamp_max_.Scalar", clamp_max_scalar_);
  m.impl("_foreach_clamp_max.ScalarList", clamp_max_scalarlist);
  m.impl("_foreach_clamp_max_.ScalarList", clamp_max_scalarlist_);
  m.impl("_foreach_clamp_max.List", clamp_max_list);
  m.impl("_foreach_clamp_max_.List", clamp_max_list_);
  m.impl("_foreach_minimum.Scalar", clamp_max_scalar);
  m.impl("_foreach_minimum_.Scalar", clamp_max_scalar_);
  m.impl("_foreach_minimum.ScalarList", clamp_max_scalarlist);
  m.impl("_foreach_minimum_.ScalarList", clamp_max_scalarlist_);
  m.impl("_foreach_minimum.List", clamp_max_list);
  m.impl("_foreach_minimum_.List", clamp_max_list_);
  m.impl("_foreach_pow.List", pow_list);
  m.impl("_foreach_pow_.List", pow_list_);
  m.impl("_foreach_pow.Scalar", pow_scalar);
  m.impl("_foreach_pow_.Scalar", pow_scalar_);
  m.impl("_foreach_pow.ScalarList", pow_scalarlist);
  m.impl("_foreach_pow_.ScalarList", pow_scalarlist_);
  m.impl("_foreach_pow.ScalarAndTensor", scalar_pow_list);
  m.impl("_foreach_sqrt", sqrt);
  m.impl("_foreach_sqrt_", sqrt_);
  m.impl("_foreach_exp", exp);
  m.impl("_foreach_exp_", exp_);
  m.impl("_foreach_reciprocal", reciprocal);
  m.impl("_foreach_reciprocal_", reciprocal_);
  m.impl("_foreach_neg", neg);
  m.impl("_foreach_neg_", neg_);
  m.impl("_foreach_abs", abs);
  m.impl("_foreach_abs_", abs_);
  m.impl("_foreach_sign", sign);
  m.impl("_foreach_sign_", sign_);
  m.impl("_foreach_zero_", zero_);
  m.impl("_foreach_copy_", copy_);
  m.impl("_foreach_norm.Scalar", norm);
}

}  // namespace torch_tpu::aten
