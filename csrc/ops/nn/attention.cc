#include "ops/nn/attention.h"

#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/linalg/matmul.h"

namespace torch_tpu::ops {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Dims {
  int64_t batch, q_heads, kv_heads, group, l, s, e, ev;
};

Dims dims_of(const hlo::Value& q, const hlo::Value& k, const hlo::Value& v) {
  Dims d;
  d.batch = q.dims()[0];
  d.q_heads = q.dims()[1];
  d.kv_heads = k.dims()[1];
  d.group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  d.l = q.dims()[2];
  d.s = k.dims()[2];
  d.e = q.dims()[3];
  d.ev = v.dims()[3];
  return d;
}

// Grouped views: queries [B, Hkv, G, L, *], keys and values [B, Hkv, S, *].
// Without grouping (G = 1) the query-side values stay [B, H, L, *]: XLA's CPU
// compiler runs the plain 4-d contractions about 15% faster than the same
// ones with a unit G dimension.
hlo::Value grouped(hlo::Builder& b, const hlo::Value& x, const Dims& d) {
  if (d.group == 1) return x;
  return b.reshape(x, {d.batch, d.kv_heads, d.group, x.dims()[2], x.dims()[3]});
}

hlo::Value ungrouped(hlo::Builder& b, const hlo::Value& x, const Dims& d) {
  if (d.group == 1) return x;
  return b.reshape(x, {d.batch, d.q_heads, x.dims()[3], x.dims()[4]});
}

// Dimensions of a grouped query-side value, given as in the 5-d layout
// [B, Hkv, G, L, *]; without grouping G is absent and later ones shift.
std::vector<int64_t> qdims(const Dims& d, std::vector<int64_t> five) {
  if (d.group > 1) return five;
  std::vector<int64_t> four;
  for (int64_t i : five) {
    if (i != 2) four.push_back(i < 2 ? i : i - 1);
  }
  return four;
}

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

// Per-row values [B, H, L] over the scores' shape [B, H, L, S].
hlo::Value rows_to(hlo::Builder& b, const hlo::Value& rows, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(rows, dims, {0, 1, 2});
}

// The scaled, biased and masked scores [B, Hq, L, S] in f32 (f64).
hlo::Value scores(hlo::Builder& b, const hlo::Value& q, const hlo::Value& k, const std::optional<hlo::Value>& bias,
                  const AttentionOptions& o, const Dims& d) {
  // [B, Hkv, G, L, E] . [B, Hkv, S, E] -> [B, Hkv, G, L, S]
  hlo::Value s =
      ungrouped(b, accumulate_dot(b, grouped(b, q, d), k, {{0, 1}, {0, 1}, qdims(d, {4}), {3}}, o.f32_precision), d);
  const ElementType acc = s.dtype();
  s = b.multiply(s, b.constant_splat(o.scale, s.type()));
  if (bias && bias->dtype() == ElementType::kPred) {  // true: takes part
    s = b.select(broadcast_to(b, *bias, s.dims()), s, b.constant_splat(-kInf, s.type()));
  } else if (bias) {
    s = b.add(s, broadcast_to(b, convert_to(b, *bias, acc), s.dims()));
  }
  if (o.causal) {
    hlo::TensorType positions(ElementType::kS64, {d.l, d.s});
    hlo::Value keep = b.compare(b.iota(positions, 0), b.iota(positions, 1), "GE");
    keep = b.broadcast_in_dim(keep, s.dims(), {2, 3});
    s = b.select(keep, s, b.constant_splat(-kInf, s.type()));
  }
  return s;
}

}  // namespace

AttentionOutputs lower_attention(hlo::Builder& b, const hlo::Value& q, const hlo::Value& k, const hlo::Value& v,
                                 const std::optional<hlo::Value>& bias, const AttentionOptions& options) {
  const Dims d = dims_of(q, k, v);
  hlo::Value s = scores(b, q, k, bias, options, d);
  const ElementType acc = s.dtype();
  hlo::Value neg_inf = b.constant_splat(-kInf, hlo::TensorType::scalar(acc));
  hlo::Value row_max = b.reduce({s}, {neg_inf}, {3}, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.maximum_in_reduction(a[0], a[1])};
  })[0];
  // A fully masked row has max -inf: shift by 0 instead, so every weight is 0.
  hlo::Value masked_row = b.compare(row_max, b.constant_splat(-kInf, row_max.type()), "EQ");
  hlo::Value shift = b.select(masked_row, b.constant_splat(0, row_max.type()), row_max);
  hlo::Value p = b.exponential(b.subtract(s, rows_to(b, shift, s.dims())));
  hlo::Value total = sum_over(b, p, {3});
  hlo::Value empty_row = b.compare(total, b.constant_splat(0, total.type()), "EQ");
  hlo::Value safe_total = b.select(empty_row, b.constant_splat(1, total.type()), total);
  hlo::Value weights = b.divide(p, rows_to(b, safe_total, p.dims()));
  // The weights meet v in v's dtype, as the unfused path multiplies them.
  hlo::Value out =
      accumulate_dot(b, grouped(b, convert_to(b, weights, v.dtype()), d), v, {{0, 1}, {0, 1}, qdims(d, {4}), {2}},
                     options.f32_precision);
  AttentionOutputs r;
  r.out = convert_to(b, ungrouped(b, out, d), q.dtype());
  // In the accumulation type (f64 for f64 inputs), as CPU's flash kernel
  // keeps it: the backward recomputes the weights from it.
  r.logsumexp = b.add(shift, b.log(total));
  return r;
}

AttentionGrads lower_attention_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& q,
                                        const hlo::Value& k, const hlo::Value& v,
                                        const std::optional<hlo::Value>& bias, const hlo::Value& logsumexp,
                                        const hlo::Value& out, const AttentionOptions& options, bool want_q,
                                        bool want_k, bool want_v, bool want_bias) {
  const Dims d = dims_of(q, k, v);
  const hlo::Precision f32 = options.f32_precision;
  // The gradient runs in f32 (f64) throughout.
  const ElementType acc = accumulation_type(q.dtype());
  hlo::Value qf = convert_to(b, q, acc), kf = convert_to(b, k, acc), vf = convert_to(b, v, acc);
  hlo::Value s = scores(b, qf, kf, bias, options, d);
  // Fully masked rows (logsumexp -inf) get weight 0 everywhere.
  hlo::Value lse = convert_to(b, logsumexp, acc);
  hlo::Value masked_row = b.compare(lse, b.constant_splat(-kInf, lse.type()), "EQ");
  lse = b.select(masked_row, b.constant_splat(kInf, lse.type()), lse);
  hlo::Value weights = b.exponential(b.subtract(s, rows_to(b, lse, s.dims())));
  hlo::Value dy = convert_to(b, grad_out, acc);
  hlo::Value p5 = grouped(b, weights, d);  // [B, Hkv, G, L, S]
  hlo::Value dy5 = grouped(b, dy, d);      // [B, Hkv, G, L, Ev]
  AttentionGrads g;
  if (want_v) {
    // sum over G and L: [B, Hkv, S, Ev]
    g.v = convert_to(b, accumulate_dot(b, p5, dy5, {{0, 1}, {0, 1}, qdims(d, {2, 3}), qdims(d, {2, 3})}, f32),
                     v.dtype());
  }
  if (!(want_q || want_k || want_bias)) return g;
  // d weights = dy . v^T: [B, Hkv, G, L, S]
  hlo::Value dp = accumulate_dot(b, dy5, vf, {{0, 1}, {0, 1}, qdims(d, {4}), {3}}, f32);
  // sum_s weights * dp = dy . out. Taken from the forward's output, as
  // CPU's flash kernel does: with the weights recomputed, a large score's
  // rounding in logsumexp leaves them summing to 1 +- 1e-3, and dp - row
  // cancels where the softmax is nearly one-hot. [B, Hkv, G, L]
  hlo::Value row = sum_over(b, b.multiply(dy5, grouped(b, convert_to(b, out, acc), d)), qdims(d, {4}));
  hlo::Value ds = b.multiply(p5, b.subtract(dp, b.broadcast_in_dim(row, dp.dims(), qdims(d, {0, 1, 2, 3}))));
  if (want_bias) {
    // Summed over the dimensions the bias was broadcast along.
    const auto& full = s.dims();
    const auto& bd = bias->dims();
    const int64_t lead = static_cast<int64_t>(full.size()) - bias->rank();
    std::vector<int64_t> reduced;
    for (int64_t i = 0; i < static_cast<int64_t>(full.size()); ++i) {
      if (i < lead || (bd[i - lead] == 1 && full[i] != 1)) reduced.push_back(i);
    }
    hlo::Value db = b.reshape(sum_over(b, ungrouped(b, ds, d), reduced), bd);
    g.bias = convert_to(b, db, bias->dtype());
  }
  hlo::Value dscaled = b.multiply(ds, b.constant_splat(options.scale, ds.type()));
  if (want_q) {
    // [B, Hkv, G, L, S] . [B, Hkv, S, E] -> [B, Hkv, G, L, E]
    hlo::Value dq = accumulate_dot(b, dscaled, kf, {{0, 1}, {0, 1}, qdims(d, {4}), {2}}, f32);
    g.q = convert_to(b, ungrouped(b, dq, d), q.dtype());
  }
  if (want_k) {
    // sum over G and L: [B, Hkv, S, E]
    hlo::Value dk = accumulate_dot(b, dscaled, grouped(b, qf, d), {{0, 1}, {0, 1}, qdims(d, {2, 3}), qdims(d, {2, 3})},
                                     f32);
    g.k = convert_to(b, dk, k.dtype());
  }
  return g;
}

}  // namespace torch_tpu::ops
