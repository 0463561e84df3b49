// ATen glue for F.scaled_dot_product_attention on tpu.
//
// SDPA is composite: it asks the device's _fused_sdp_choice_stub which
// backend to run. On tpu that is the "overrideable" fused kernel
// (_scaled_dot_product_fused_attention_overrideable and its backward, one
// program each) for 4-D (and 3-D) inputs without dropout, including
// grouped-query attention, causal masking and boolean or additive masks;
// anything else (dropout > 0, other ranks, shapes the kernel does not take)
// runs PyTorch's math path, which is composite over matmul, softmax and
// dropout and stays on tpu. torch.nn.attention.sdpa_kernel() choices are
// honoured.
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/matmul_precision.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/nn/attention.h"

namespace torch_tpu::aten {

namespace {

const at::Tensor* defined(const std::optional<at::Tensor>& t) { return t && t->defined() ? &*t : nullptr; }
const at::Tensor* defined(const at::Tensor& t) { return t.defined() ? &t : nullptr; }

void put(std::string& key, double v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

bool is_float(c10::ScalarType t) { return c10::isFloatingType(t); }

// Size tests on symbolic sizes too: under torch.export / torch.compile with
// dynamic shapes the choice runs on fake tensors, and reading a plain size
// would specialize the dimension to its example value.
bool holds(const c10::SymBool& b) { return b.guard_bool(__FILE__, __LINE__); }

// Why the fused kernel cannot take these inputs; nullptr when it can.
const char* unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor* mask,
                        bool is_causal, bool allow_gqa) {
  if (q.is_nested() || k.is_nested() || v.is_nested()) return "nested tensors";
  if (q.dim() != k.dim() || q.dim() != v.dim() || (q.dim() != 4 && q.dim() != 3)) {
    return "query, key and value must all be 3-D or all 4-D";
  }
  if (!is_float(q.scalar_type()) || k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type()) {
    return "query, key and value must have one floating dtype";
  }
  if (is_causal && mask) return "an explicit attn_mask with is_causal=True";
  const int64_t h = q.dim() - 3;  // the heads' dimension
  if (q.dim() == 4 && (holds(k.sym_size(0) != q.sym_size(0)) || holds(v.sym_size(0) != q.sym_size(0)))) {
    return "batch sizes differ";
  }
  if (holds(k.sym_size(h) != v.sym_size(h)) || holds(k.sym_size(h + 1) != v.sym_size(h + 1))) {
    return "key and value shapes differ";
  }
  if (holds(k.sym_size(h + 2) != q.sym_size(h + 2))) return "query and key head dims differ";
  if (holds(k.sym_size(h) == 0) || holds(q.sym_size(h) % k.sym_size(h) != 0)) {
    return "query heads not a multiple of key/value heads";
  }
  if (holds(q.sym_size(h) != k.sym_size(h)) && !allow_gqa) {
    return "query and key/value head counts differ without enable_gqa";
  }
  if (mask) {
    if (mask->scalar_type() != at::kBool && mask->scalar_type() != q.scalar_type()) return "mask dtype";
    std::vector<c10::SymInt> scores(q.sym_sizes().begin(), q.sym_sizes().end());
    scores.back() = k.sym_size(-2);
    if (mask->dim() > q.dim() || !at::is_expandable_to(mask->sym_sizes(), scores)) return "mask shape";
  }
  return nullptr;
}

// The fused kernel has a backward but no batching rule, forward-mode
// derivative or double backward: under torch.func's transforms (vmap, jvp,
// grad, functionalize), or with forward-AD tangents, the math path
// (ordinary ops, which have all three) runs instead.
bool under_a_transform(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const std::optional<at::Tensor>& mask) {
  // functorch includes its front-mode key while any transform is active.
  if (c10::impl::tls_local_dispatch_key_set().included_.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode)) {
    return true;
  }
  for (const at::Tensor* t : {&q, &k, &v, defined(mask)}) {
    if (t && t->_fw_grad(/*level=*/0).defined()) return true;
  }
  return false;
}

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  // Checked here, where every path starts: the math path's message would
  // name the batched matmul that fails.
  TORCH_CHECK(k.dim() < 2 || v.dim() < 2 || !holds(k.sym_size(-2) != v.sym_size(-2)),
              "scaled_dot_product_attention: key and value must have the same sequence length, got key ",
              k.sym_sizes(), " and value ", v.sym_sizes());
  auto& ctx = at::globalContext();
  // sdpa_kernel(FLASH_ATTENTION) (or the memory-efficient or cuDNN kernel)
  // asks for a fused kernel: on tpu that is the overrideable one, as CPU
  // runs its own flash kernel for the request.
  const bool fused = ctx.userEnabledOverrideableSDP() || ctx.userEnabledFlashSDP() ||
                     ctx.userEnabledMemEfficientSDP() || ctx.userEnabledCuDNNSDP();
  // Dropout runs on the math path, with the tpu generator's dropout. 3-D
  // inputs do too, as on CPU and CUDA (their fused kernels take 4-D only):
  // the math path has a double backward, which the fused kernel lacks.
  if (fused && dropout_p == 0.0 && q.dim() == 4 && !unsupported(q, k, v, defined(mask), is_causal, enable_gqa) &&
      !under_a_transform(q, k, v, mask)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  // Inputs the fused kernel does not take (dropout, 3-D) run the math path
  // under a fused request too, where CPU's and CUDA's flash kernels take them.
  if (ctx.userEnabledMathSDP() || fused) {
    return static_cast<int64_t>(at::SDPBackend::math);
  }
  return static_cast<int64_t>(at::SDPBackend::error);
}

// 3-D inputs ([H, L, E]) run as one batch.
at::Tensor as_4d(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

struct Plan {
  ops::AttentionOptions options;
  std::string attributes;
  char bias_kind;  // '-': none, 'b': boolean mask, 'f': additive
};

Plan plan(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor* bias,
          double dropout_p, bool is_causal, std::optional<double> scale) {
  TORCH_CHECK(dropout_p == 0.0, op, ": the fused tpu kernel applies no dropout (dropout_p=", dropout_p,
              "); scaled_dot_product_attention runs dropout on the math path");
  if (const char* why = unsupported(q, k, v, bias, is_causal, /*allow_gqa=*/true)) {
    TORCH_CHECK(false, op, ": unsupported inputs: ", why, " (query ", q.sizes(), ", key ", k.sizes(), ", value ",
                v.sizes(), ")");
  }
  Plan p;
  p.options.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  p.options.causal = is_causal;
  p.bias_kind = !bias ? '-' : bias->scalar_type() == at::kBool ? 'b' : 'f';
  put(p.attributes, p.options.scale);
  p.attributes.push_back(is_causal ? 'c' : '-');
  p.attributes.push_back(p.bias_kind);
  p.options.f32_precision = keyed_float32_precision(p.attributes, q.scalar_type());
  return p;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor,
           at::Tensor>
fused_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal, bool return_debug_mask,
                std::optional<double> scale) {
  const char* op = "aten::_scaled_dot_product_fused_attention_overrideable";
  const at::Tensor* bias = defined(attn_bias);
  Plan p = plan(op, query, key, value, bias, dropout_p, is_causal, scale);
  OpCall call{op, std::move(p.attributes), {as_4d(query), as_4d(key), as_4d(value)}, {}};
  if (bias) call.tensors.push_back(*bias);
  const auto options = p.options;
  const bool has_bias = bias != nullptr;
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> bi;
    if (has_bias) bi = t[3];
    auto r = ops::lower_attention(b, t[0], t[1], t[2], bi, options);
    return std::vector<hlo::Value>{r.out, r.logsumexp};
  });
  // The output takes the query's layout, as PyTorch's shape function says
  // (a transposed [B, L, H, E] query gives an output that transposes back to
  // a contiguous tensor, which captured graphs then view).
  at::Tensor output = in_layout_of(query.dim() == 3 ? out.at(0).squeeze(0) : out.at(0), query);
  // As PyTorch's shape function: no cumulative sequence lengths (the inputs
  // are not nested) and no debug mask, so those outputs are undefined; the
  // seed and offset are 0-dim. DTensor's sharding rules rely on this (an
  // output without a placement must be undefined or 0-dim).
  auto seed = at::empty({}, query.options().dtype(at::kLong));
  auto offset = at::empty({}, query.options().dtype(at::kLong));
  return {output, out.at(1), at::Tensor(), at::Tensor(), c10::SymInt(query.size(-2)),
          c10::SymInt(key.size(-2)), seed, offset, at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& cum_seq_q, const at::Tensor& cum_seq_k, c10::SymInt max_q,
    c10::SymInt max_k, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale) {
  const char* op = "aten::_scaled_dot_product_fused_attention_overrideable_backward";
  const at::Tensor* bias = defined(attn_bias);
  Plan p = plan(op, query, key, value, bias, dropout_p, is_causal, scale);
  TORCH_CHECK(grad_out.sizes() == out.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " does not match the output's ", out.sizes());
  const bool want_q = grad_input_mask[0], want_k = grad_input_mask[1], want_v = grad_input_mask[2];
  const bool want_bias = grad_input_mask[3] && bias && p.bias_kind == 'f';
  if (!want_q && !want_k && !want_v && !want_bias) return {};
  std::string attributes = std::move(p.attributes);
  for (bool w : {want_q, want_k, want_v, want_bias}) attributes.push_back(w ? '1' : '0');
  OpCall call{op, std::move(attributes),
              {as_4d(grad_out), as_4d(query), as_4d(key), as_4d(value), logsumexp, as_4d(out)},
              {}};
  if (bias) call.tensors.push_back(*bias);
  const auto options = p.options;
  const bool has_bias = bias != nullptr;
  auto grads = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> bi;
    if (has_bias) bi = t[6];
    auto g = ops::lower_attention_backward(b, t[0], t[1], t[2], t[3], bi, t[4], t[5], options, want_q, want_k,
                                           want_v, want_bias);
    std::vector<hlo::Value> results;
    for (const auto* v : {&g.q, &g.k, &g.v, &g.bias}) {
      if (*v) results.push_back(**v);
    }
    return results;
  });
  std::array<at::Tensor, 4> result;
  size_t next = 0;
  const std::array<bool, 4> wanted{want_q, want_k, want_v, want_bias};
  for (size_t i = 0; i < 4; ++i) {
    if (!wanted[i]) continue;
    at::Tensor g = grads.at(next++);
    if (i < 3 && query.dim() == 3) g = g.squeeze(0);
    // Each gradient in its input's layout (empty_like, as the shape function).
    const at::Tensor& input = i == 0 ? query : i == 1 ? key : i == 2 ? value : attn_bias;
    result[i] = in_layout_of(g, input);
  }
  return {result[0], result[1], result[2], result[3]};
}

}  // namespace

// The stub SDPA consults (at::_fused_sdp_choice dispatches to the same).
int64_t tpu_fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                             std::optional<double> scale, bool enable_gqa) {
  return fused_sdp_choice(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", tpu_fused_sdp_choice);
  m.impl("_scaled_dot_product_fused_attention_overrideable", fused_attention);
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", fused_attention_backward);
}

}  // namespace torch_tpu::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_tpu::aten::tpu_fused_sdp_choice)
}  // namespace at::native
