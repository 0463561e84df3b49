#include "ops/nn/ctc.h"

#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Value i32(hlo::Builder& b, int64_t v) { return b.constant_splat_int(v, TensorType::scalar(ElementType::kS32)); }

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

// log(exp(x) + exp(y) + exp(z)), -inf when all are.
Value log_sum_exp3(hlo::Builder& b, const Value& x, const Value& y, const Value& z) {
  Value m = b.maximum(b.maximum(x, y), z);
  Value finite = b.compare(m, fill(b, kNegInf, m), "NE");
  Value safe = b.select(finite, m, fill(b, 0, m));
  Value sum = b.add(b.add(b.exponential(b.subtract(x, safe)), b.exponential(b.subtract(y, safe))),
                    b.exponential(b.subtract(z, safe)));
  return b.select(finite, b.add(safe, b.log(sum)), m);
}

// x [N, K] moved `by` places along dim 1 (positive: towards higher
// indices), filled with `value`.
Value shift(hlo::Builder& b, const Value& x, int64_t by, double value) {
  return b.pad(x, b.constant_splat(value, TensorType::scalar(x.dtype())), {0, by}, {0, -by}, {0, 0});
}

// What both directions need: the extended label sequence (blank, l1,
// blank, l2, ..., blank) and the log-probabilities along it.
struct Extended {
  Value labels;    // s64 [N, S']
  Value skip;      // i1 [N, S']: s - 2 -> s is allowed (a label unlike the one before)
  Value lp;        // [N, T, S']
  Value bad_label;
};

Extended extend(hlo::Builder& b, const Value& log_probs, const Value& targets, const Value& target_lengths,
                int64_t blank) {
  const int64_t t_len = log_probs.dims()[0], n = log_probs.dims()[1], c = log_probs.dims()[2];
  const int64_t s = targets.dims()[1], sp = 2 * s + 1;
  const TensorType label_type(ElementType::kS64, {n, s});
  Value tgt = convert_to(b, targets, ElementType::kS64);
  Value within = b.compare(b.iota(label_type, 1), b.broadcast_in_dim(target_lengths, {n, s}, {0}), "LT");
  Value out_of_range = b.or_(b.compare(tgt, b.constant_splat_int(0, label_type), "LT"),
                             b.compare(tgt, b.constant_splat_int(c, label_type), "GE"));
  Value bad = any_true(b, b.and_(within, out_of_range));
  Value blank_labels = b.constant_splat_int(blank, label_type);
  tgt = b.select(b.and_(within, b.not_(out_of_range)), tgt, blank_labels);
  // Interleave blanks: [N, S, 2] -> [N, 2S], then the final blank.
  Value pairs = b.concatenate({b.reshape(blank_labels, {n, s, 1}), b.reshape(tgt, {n, s, 1})}, 2);
  Value labels = b.concatenate({b.reshape(pairs, {n, 2 * s}), b.constant_splat_int(blank, TensorType(ElementType::kS64, {n, 1}))}, 1);
  Value before = b.pad(labels, b.constant_splat_int(-1, TensorType::scalar(ElementType::kS64)), {0, 2}, {0, -2}, {0, 0});
  // Skips land on label slots (odd s), decided by position as CPU does: a
  // label equal to the blank (which PyTorch's docs forbid) keeps them.
  Value odd = b.compare(b.remainder(b.iota(labels.type(), 1), b.constant_splat_int(2, labels.type())),
                        b.constant_splat_int(1, labels.type()), "EQ");
  Value skip = b.and_(odd, b.compare(labels, before, "NE"));
  Value ntc = b.transpose(log_probs, {1, 0, 2});
  Value index = b.broadcast_in_dim(labels, {n, t_len, sp}, {0, 2});
  return {labels, skip, lower_gather(b, ntc, index, 2).value, bad};
}

// Row t of x [N, T, K] as [N, K].
Value row(hlo::Builder& b, const Value& x, const Value& t) {
  const int64_t n = x.dims()[0], k = x.dims()[2];
  return b.reshape(b.dynamic_slice(x, {i32(b, 0), t, i32(b, 0)}, {n, 1, k}), {n, k});
}

Value put_row(hlo::Builder& b, const Value& x, const Value& r, const Value& t) {
  return b.dynamic_update_slice(x, b.reshape(r, {x.dims()[0], 1, x.dims()[2]}), {i32(b, 0), t, i32(b, 0)});
}

// x [N, K] at index [N] (s64), or -inf where the index is negative.
Value at_index(hlo::Builder& b, const Value& x, const Value& index) {
  const int64_t n = x.dims()[0];
  Value safe = b.maximum(index, b.constant_splat_int(0, index.type()));
  Value v = b.reshape(lower_gather(b, x, b.reshape(safe, {n, 1}), 1).value, {n});
  return b.select(b.compare(index, b.constant_splat_int(0, index.type()), "GE"), v, fill(b, kNegInf, v));
}

// A [N] mask as [N, K].
Value per_row(hlo::Builder& b, const Value& mask, int64_t k) { return b.broadcast_in_dim(mask, {mask.dims()[0], k}, {0}); }

// Index s of [N, S'] equal to 2 * length (+ delta).
Value at_position(hlo::Builder& b, const Value& target_lengths, int64_t sp, int64_t delta) {
  const int64_t n = target_lengths.dims()[0];
  const TensorType t(ElementType::kS64, {n, sp});
  Value two_l = b.multiply(b.broadcast_in_dim(target_lengths, {n, sp}, {0}), b.constant_splat_int(2, t));
  return b.compare(b.iota(t, 1), b.add(two_l, b.constant_splat_int(delta, t)), "EQ");
}

}  // namespace

CtcLoss lower_ctc_loss(hlo::Builder& b, const Value& log_probs, const Value& targets, const Value& input_lengths,
                       const Value& target_lengths, int64_t blank) {
  const int64_t t_len = log_probs.dims()[0], n = log_probs.dims()[1];
  const int64_t sp = 2 * targets.dims()[1] + 1;
  Extended e = extend(b, log_probs, targets, target_lengths, blank);
  const TensorType row_type(log_probs.dtype(), {n, sp});
  Value log_alpha = b.constant_splat(kNegInf, TensorType(log_probs.dtype(), {n, t_len, sp}));
  const TensorType batch_type(ElementType::kS64, {n});
  Value no_input = b.compare(input_lengths, b.constant_splat_int(0, batch_type), "EQ");
  Value no_target = b.compare(target_lengths, b.constant_splat_int(0, batch_type), "EQ");
  // Without input frames only an empty target has an alignment.
  Value empty_case = b.select(no_target, b.constant_splat(0, TensorType(log_probs.dtype(), {n})),
                              b.constant_splat(std::numeric_limits<double>::infinity(), TensorType(log_probs.dtype(), {n})));
  if (t_len == 0) return {empty_case, log_alpha, e.bad_label};

  // t = 0: the first blank, or the first label.
  Value lp0 = row(b, e.lp, i32(b, 0));
  const TensorType pos_type(ElementType::kS64, {n, sp});
  Value pos = b.iota(pos_type, 1);
  Value first = b.or_(b.compare(pos, b.constant_splat_int(0, pos_type), "EQ"),
                      b.and_(b.compare(pos, b.constant_splat_int(1, pos_type), "EQ"), b.not_(per_row(b, no_target, sp))));
  Value alpha0 = b.select(first, lp0, b.constant_splat(kNegInf, row_type));
  alpha0 = b.select(per_row(b, no_input, sp), b.constant_splat(kNegInf, row_type), alpha0);
  log_alpha = put_row(b, log_alpha, alpha0, i32(b, 0));
  const Value& lp_ext = e.lp;
  const Value& skip = e.skip;
  Values out = b.while_loop(
      {i32(b, 1), alpha0, log_alpha},
      [t_len](hlo::Builder& c, const Values& v) { return Values{c.compare(v[0], i32(c, t_len), "LT")}; },
      [&](hlo::Builder& c, const Values& v) {
        const Value& t = v[0];
        Value alpha = v[1];
        Value from1 = shift(c, alpha, 1, kNegInf);
        Value from2 = c.select(skip, shift(c, alpha, 2, kNegInf), c.constant_splat(kNegInf, alpha.type()));
        Value next = c.add(log_sum_exp3(c, alpha, from1, from2), row(c, lp_ext, t));
        Value active = per_row(c, c.compare(c.broadcast_in_dim(c.convert(t, ElementType::kS64), {n}, {}), input_lengths, "LT"), sp);
        Value la = put_row(c, v[2], c.select(active, next, c.constant_splat(kNegInf, alpha.type())), t);
        return Values{c.add(t, i32(c, 1)), c.select(active, next, alpha), la};
      });
  Value two_l = b.multiply(target_lengths, b.constant_splat_int(2, batch_type));
  Value last_blank = at_index(b, out[1], two_l);
  Value last_label = at_index(b, out[1], b.subtract(two_l, b.constant_splat_int(1, batch_type)));
  Value ends = log_sum_exp3(b, last_blank, last_label, b.constant_splat(kNegInf, last_blank.type()));
  Value nll = b.select(no_input, empty_case, b.negate(ends));
  return {nll, out[2], e.bad_label};
}

Value lower_ctc_loss_backward(hlo::Builder& b, const Value& grad, const Value& log_probs, const Value& targets,
                              const Value& input_lengths, const Value& target_lengths, const Value& nll,
                              const Value& log_alpha, int64_t blank, bool zero_infinity) {
  const int64_t t_len = log_probs.dims()[0], n = log_probs.dims()[1], c_len = log_probs.dims()[2];
  const int64_t sp = 2 * targets.dims()[1] + 1;
  if (t_len == 0 || n == 0 || c_len == 0) return b.constant_splat(0, log_probs.type());
  Extended e = extend(b, log_probs, targets, target_lengths, blank);
  const TensorType row_type(log_probs.dtype(), {n, sp});
  const TensorType batch_type(ElementType::kS64, {n});
  // beta at the last frame: the final blank, or the last label.
  Value ends = b.or_(at_position(b, target_lengths, sp, 0),
                     b.and_(at_position(b, target_lengths, sp, -1),
                            per_row(b, b.compare(target_lengths, b.constant_splat_int(0, batch_type), "GT"), sp)));
  // s -> s + 2 is allowed where s + 2 may skip back to s.
  Value skip_ahead = b.pad(e.skip, b.constant_splat_int(0, TensorType::scalar(ElementType::kPred)), {0, -2}, {0, 2},
                           {0, 0});
  const Value& lp_ext = e.lp;
  Value log_beta = b.constant_splat(kNegInf, TensorType(log_probs.dtype(), {n, t_len, sp}));
  Values out = b.while_loop(
      {i32(b, t_len - 1), b.constant_splat(kNegInf, row_type), log_beta},
      [](hlo::Builder& c, const Values& v) { return Values{c.compare(v[0], i32(c, 0), "GE")}; },
      [&](hlo::Builder& c, const Values& v) {
        const Value& t = v[0];
        Value beta = v[1];
        Value lpt = row(c, lp_ext, t);
        Value from1 = shift(c, beta, -1, kNegInf);
        Value from2 = c.select(skip_ahead, shift(c, beta, -2, kNegInf), c.constant_splat(kNegInf, beta.type()));
        Value next = c.add(log_sum_exp3(c, beta, from1, from2), lpt);
        Value t64 = c.broadcast_in_dim(c.convert(t, ElementType::kS64), {n}, {});
        Value last = per_row(c, c.compare(t64, c.subtract(input_lengths, c.constant_splat_int(1, batch_type)), "EQ"), sp);
        Value inside = per_row(c, c.compare(t64, input_lengths, "LT"), sp);
        Value neg_inf = c.constant_splat(kNegInf, beta.type());
        Value now = c.select(last, c.select(ends, lpt, neg_inf), c.select(inside, next, neg_inf));
        return Values{c.subtract(t, i32(c, 1)), now, put_row(c, v[2], now, t)};
      });
  // Each frame's occupancy of each label: sum over the positions s holding
  // it of exp(log_alpha + log_beta + nll - log_prob).
  const std::vector<int64_t> nts = {n, t_len, sp};
  Value terms = b.exponential(b.subtract(b.add(b.add(log_alpha, out[2]), b.broadcast_in_dim(nll, nts, {0})), lp_ext));
  const TensorType onehot_type(ElementType::kS64, {n, sp, c_len});
  Value onehot = b.convert(b.compare(b.broadcast_in_dim(e.labels, {n, sp, c_len}, {0, 1}), b.iota(onehot_type, 2), "EQ"),
                           log_probs.dtype());
  hlo::DotDims d;
  d.lhs_batch_dims = {0};
  d.rhs_batch_dims = {0};
  d.lhs_contracting_dims = {2};
  d.rhs_contracting_dims = {1};
  Value occupancy = b.dot_general(terms, onehot, d, hlo::Precision::kHighest);  // [N, T, C]
  Value ntc = b.transpose(log_probs, {1, 0, 2});
  const std::vector<int64_t> ntc_dims = ntc.dims();
  Value g = b.multiply(b.subtract(b.exponential(ntc), occupancy), b.broadcast_in_dim(grad, ntc_dims, {0}));
  const TensorType frame_type(ElementType::kS64, ntc_dims);
  Value inside = b.compare(b.iota(frame_type, 1), b.broadcast_in_dim(input_lengths, ntc_dims, {0}), "LT");
  Value zero = b.constant_splat(0, g.type());
  g = b.select(inside, g, zero);
  if (zero_infinity) {
    Value infinite = b.compare(nll, b.constant_splat(std::numeric_limits<double>::infinity(), nll.type()), "EQ");
    g = b.select(b.broadcast_in_dim(infinite, ntc_dims, {0}), zero, g);
  }
  return b.transpose(g, {1, 0, 2});
}

}  // namespace torch_tpu::ops
