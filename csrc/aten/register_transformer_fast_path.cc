// The inference "fast path" ops of nn.MultiheadAttention and
// nn.TransformerEncoderLayer on tpu.
//
// In eval mode without autograd, PyTorch sends those modules on devices it
// lists as supported (the PrivateUse1 device among them) to fused kernels:
// _native_multi_head_attention and _transformer_encoder_layer_fwd. Here they
// are composites of the ops the slow path uses (linear, matmul, softmax,
// layer_norm, the activation), so every eager mode and the compile cache
// take them as any other op sequence. The semantics follow the CPU kernels:
// masks are boolean (a float mask counts nonzero entries as masked), and a
// row whose keys are all masked gives NaN weights and output, as on CPU
// (whose training-mode path, and ours, give NaN too).
#include <ATen/core/Tensor.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

namespace torch_tpu::aten {

namespace {

// `mask` (True = masked) shaped to broadcast against scores [B, H, T, S].
at::Tensor broadcastable_mask(const char* op, const at::Tensor& mask, std::optional<int64_t> mask_type, int64_t batch,
                              int64_t heads, int64_t queries, int64_t keys) {
  at::Tensor m = mask.scalar_type() == at::kBool ? mask : mask.ne(0);
  switch (mask_type.value_or(-1)) {
    case 0:  // an attention mask [T, S]
      TORCH_CHECK(m.dim() == 2 && m.size(0) == queries && m.size(1) == keys, op,
                  ": mask_type 0 expects an attention mask of shape [", queries, ", ", keys, "], got ", m.sizes());
      return m.view({1, 1, queries, keys});
    case 1:  // a key padding mask [B, S]
      TORCH_CHECK(m.dim() == 2 && m.size(0) == batch && m.size(1) == keys, op,
                  ": mask_type 1 expects a key padding mask of shape [", batch, ", ", keys, "], got ", m.sizes());
      return m.view({batch, 1, 1, keys});
    case 2:  // a merged mask [B, H, T, S], as CPU requires it
      TORCH_CHECK(m.sizes() == at::IntArrayRef({batch, heads, queries, keys}), op,
                  ": mask_type 2 expects a merged mask of the scores' shape [", batch, ", ", heads, ", ", queries,
                  ", ", keys, "], got ", m.sizes());
      return m;
    case -1:  // no mask type given: any mask that broadcasts to the scores
      TORCH_CHECK(m.dim() <= 4, op, ": mask of shape ", m.sizes(), " does not broadcast to the scores' [", batch, ", ",
                  heads, ", ", queries, ", ", keys, "]");
      return m;
    default:
      TORCH_CHECK(false, op, ": mask_type must be 0, 1 or 2, got ", *mask_type);
  }
}

std::tuple<at::Tensor, at::Tensor> multi_head_attention(const at::Tensor& query, const at::Tensor& key,
                                                        const at::Tensor& value, int64_t embed_dim, int64_t num_head,
                                                        const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                                                        const at::Tensor& proj_weight, const at::Tensor& proj_bias,
                                                        const std::optional<at::Tensor>& mask, bool need_weights,
                                                        bool average_attn_weights, std::optional<int64_t> mask_type) {
  const char* op = "aten::_native_multi_head_attention";
  TORCH_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3, op,
              ": expected 3-D query, key and value ([batch, sequence, embed_dim]), got ", query.sizes(), ", ",
              key.sizes(), " and ", value.sizes());
  TORCH_CHECK(num_head > 0 && embed_dim % num_head == 0, op, ": embed_dim ", embed_dim,
              " is not divisible by num_head ", num_head);
  TORCH_CHECK(query.size(2) == embed_dim && key.size(0) == query.size(0) && value.sizes() == key.sizes(), op,
              ": query ", query.sizes(), ", key ", key.sizes(), " and value ", value.sizes(),
              " do not fit embed_dim ", embed_dim);
  TORCH_CHECK(qkv_weight.dim() == 2 && qkv_weight.size(0) == 3 * embed_dim && qkv_bias.numel() == 3 * embed_dim, op,
              ": qkv_weight must be [3 * embed_dim, embed_dim] and qkv_bias [3 * embed_dim], got ",
              qkv_weight.sizes(), " and ", qkv_bias.sizes());
  const int64_t batch = query.size(0), queries = query.size(1), keys = key.size(1);
  const int64_t head_dim = embed_dim / num_head;
  auto w = qkv_weight.chunk(3, 0);
  auto b = qkv_bias.chunk(3, 0);
  auto heads = [&](const at::Tensor& x, int64_t i, int64_t length) {
    return at::linear(x, w[i], b[i]).view({batch, length, num_head, head_dim}).transpose(1, 2);
  };
  at::Tensor q = heads(query, 0, queries).mul(1.0 / std::sqrt(static_cast<double>(head_dim)));
  at::Tensor scores = at::matmul(q, heads(key, 1, keys).transpose(-2, -1));  // [B, H, T, S]
  at::Tensor weights;
  if (mask && mask->defined()) {
    at::Tensor m = broadcastable_mask(op, *mask, mask_type, batch, num_head, queries, keys);
    weights = scores.masked_fill(m, -std::numeric_limits<double>::infinity()).softmax(-1);
  } else {
    weights = scores.softmax(-1);
  }
  at::Tensor context = at::matmul(weights, heads(value, 2, keys)).transpose(1, 2).reshape({batch, queries, embed_dim});
  at::Tensor out = at::linear(context, proj_weight, proj_bias);
  if (!need_weights) return {out, at::Tensor()};
  return {out, average_attn_weights ? weights.mean(1) : weights};
}

at::Tensor transformer_encoder_layer(const at::Tensor& src, int64_t embed_dim, int64_t num_heads,
                                     const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                                     const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
                                     bool norm_first, double eps, const at::Tensor& norm_weight_1,
                                     const at::Tensor& norm_bias_1, const at::Tensor& norm_weight_2,
                                     const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
                                     const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2,
                                     const at::Tensor& ffn_bias_2, const std::optional<at::Tensor>& mask,
                                     std::optional<int64_t> mask_type) {
  auto attention = [&](const at::Tensor& x) {
    return std::get<0>(multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                            proj_bias, mask, /*need_weights=*/false, true, mask_type));
  };
  auto feed_forward = [&](const at::Tensor& x) {
    at::Tensor hidden = at::linear(x, ffn_weight_1, ffn_bias_1);
    hidden = use_gelu ? at::gelu(hidden) : at::relu(hidden);
    return at::linear(hidden, ffn_weight_2, ffn_bias_2);
  };
  auto norm = [&](const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    return at::layer_norm(x, {embed_dim}, weight, bias, eps);
  };
  if (norm_first) {
    at::Tensor x = src.add(attention(norm(src, norm_weight_1, norm_bias_1)));
    return x.add(feed_forward(norm(x, norm_weight_2, norm_bias_2)));
  }
  at::Tensor x = norm(src.add(attention(src)), norm_weight_1, norm_bias_1);
  return norm(x.add(feed_forward(x)), norm_weight_2, norm_bias_2);
}

// TransformerEncoder asks this before packing a padded batch into a nested
// tensor. tpu tensors cannot be nested, so no mask qualifies: the answer
// sends the encoder down its padded path, where each layer still takes the
// fused layer op above with the padding mask.
bool nested_tensor_from_mask_left_aligned(const at::Tensor&, const at::Tensor&) { return false; }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_native_multi_head_attention", multi_head_attention);
  m.impl("_transformer_encoder_layer_fwd", transformer_encoder_layer);
  m.impl("_nested_tensor_from_mask_left_aligned", nested_tensor_from_mask_left_aligned);
}

}  // namespace torch_tpu::aten
