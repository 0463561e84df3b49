#include "ops/random/distributions.h"

#include <cmath>
#include <limits>

#include "hlo/types.h"
#include "ops/broadcast.h"
#include "ops/random/uniform.h"
#include "ops/reduction/sort.h"

namespace torch_tpu::ops {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<int64_t> with_pair_dim(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out = dims;
  out.push_back(2);
  return out;
}

// x of dims + [2] to the complex value re + i im of dims.
hlo::Value pair_to_complex(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  limits.back() = 1;
  hlo::Value re = b.reshape(b.slice(x, starts, limits, strides), dims);
  starts.back() = 1;
  limits.back() = 2;
  hlo::Value im = b.reshape(b.slice(x, starts, limits, strides), dims);
  return b.complex(re, im);
}

// v of `type`, broadcast to dims.
hlo::Value param(hlo::Builder& b, const hlo::Value& v, ElementType type, const std::vector<int64_t>& dims) {
  return broadcast_to(b, convert_to(b, v, type), dims);
}

// Floats from the compute type to `out`; f16/bf16 results of integer-valued
// computations go through f32 as a C cast would.
hlo::Value to_out(hlo::Builder& b, const hlo::Value& v, ElementType out) { return convert_to(b, v, out); }

double epsilon_of(ElementType t) {
  switch (t) {
    case ElementType::kF16: return std::ldexp(1.0, -10);
    case ElementType::kBF16: return std::ldexp(1.0, -7);
    case ElementType::kF64: return std::numeric_limits<double>::epsilon();
    default: return std::numeric_limits<float>::epsilon();
  }
}

hlo::Value reduce_any(hlo::Builder& b, const hlo::Value& pred) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < pred.rank(); ++i) all.push_back(i);
  hlo::Value init = b.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kPred));
  return b.reduce({pred}, {init}, all, [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{r.or_(a[0], a[1])};
  })[0];
}

hlo::Value reduce_dim(hlo::Builder& b, const hlo::Value& x, int64_t dim, bool max) {
  hlo::TensorType scalar = hlo::TensorType::scalar(x.dtype());
  hlo::Value init = max ? b.constant_splat_int(std::numeric_limits<int32_t>::min(), scalar)
                        : b.constant_splat(0.0, scalar);
  return b.reduce({x}, {init}, {dim}, [max](hlo::Builder& r, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{max ? r.maximum(a[0], a[1]) : r.add(a[0], a[1])};
  })[0];
}

}  // namespace

ElementType random_compute_type(ElementType out) {
  ElementType real = real_part_type(out);
  return real == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
}

int64_t uniform_counters(ElementType out) { return is_complex(out) ? 2 : 1; }
int64_t normal_counters(ElementType out) { return is_complex(out) ? 4 : 2; }

hlo::Value lower_uniform(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                         const hlo::Value& from, const hlo::Value& to, const std::vector<int64_t>& dims,
                         ElementType out) {
  const ElementType real = real_part_type(out);
  const ElementType ct = random_compute_type(out);
  const bool complex = is_complex(out);
  const std::vector<int64_t> gen_dims = complex ? with_pair_dim(dims) : dims;
  hlo::Value u = unit_uniform(b, seed, offset, gen_dims, ct, 1)[0];
  hlo::Value lo = param(b, from, ct, gen_dims);
  hlo::Value hi = param(b, to, ct, gen_dims);
  hlo::Value v = to_out(b, b.add(b.multiply(u, b.subtract(hi, lo)), lo), real);
  hlo::Value lo_out = convert_to(b, lo, real);
  v = b.select(b.compare(v, convert_to(b, hi, real), "GE"), lo_out, v);
  return complex ? pair_to_complex(b, v, dims) : v;
}

hlo::Value standard_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const std::vector<int64_t>& dims, ElementType type) {
  auto u = unit_uniform(b, seed, offset, dims, type, 2, UnitInterval::kOpen);
  hlo::TensorType t(type, dims);
  hlo::Value radius = b.sqrt(b.multiply(b.constant_splat(-2.0, t), b.log(u[0])));
  hlo::Value angle = b.multiply(b.constant_splat(2 * kPi, t), u[1]);
  return b.multiply(radius, b.cosine(angle));
}

hlo::Value lower_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& mean, const hlo::Value& std, const std::vector<int64_t>& dims,
                        ElementType out) {
  const ElementType real = real_part_type(out);
  const ElementType ct = random_compute_type(out);
  const bool complex = is_complex(out);
  const std::vector<int64_t> gen_dims = complex ? with_pair_dim(dims) : dims;
  hlo::Value z = standard_normal(b, seed, offset, gen_dims, ct);
  hlo::Value v = b.add(b.multiply(z, param(b, std, ct, gen_dims)), param(b, mean, ct, gen_dims));
  v = to_out(b, v, real);
  return complex ? pair_to_complex(b, v, dims) : v;
}

hlo::Value lower_bernoulli(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const hlo::Value& p, const std::vector<int64_t>& dims, ElementType out) {
  const ElementType ct = p.dtype() == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
  hlo::Value u = unit_uniform(b, seed, offset, dims, ct, 1)[0];
  hlo::Value hit = b.compare(u, param(b, p, ct, dims), "LT");
  return convert_to(b, hit, out);
}

hlo::Value lower_exponential(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                             const hlo::Value& lambd, const std::vector<int64_t>& dims, ElementType out) {
  const ElementType ct = random_compute_type(out);
  hlo::Value u = unit_uniform(b, seed, offset, dims, ct, 1, UnitInterval::kOpen)[0];
  // log u < 0; capped below -eps/2 of `out` so that no draw rounds to 0
  hlo::Value log_u = b.minimum(b.log(u), b.constant_splat(-epsilon_of(out) / 2, u.type()));
  hlo::Value v = b.divide(b.negate(log_u), param(b, lambd, ct, dims));
  return to_out(b, v, out);
}

hlo::Value lower_geometric(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                           const hlo::Value& p, const std::vector<int64_t>& dims, ElementType out) {
  const ElementType ct = random_compute_type(out);
  hlo::Value u = unit_uniform(b, seed, offset, dims, ct, 1, UnitInterval::kOpen)[0];
  hlo::Value log_q = b.log_plus_one(b.negate(param(b, p, ct, dims)));
  hlo::Value v = b.ceil(b.divide(b.log(u), log_q));
  return to_out(b, v, out);
}

hlo::Value lower_log_normal(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                            const hlo::Value& mean, const hlo::Value& std, const std::vector<int64_t>& dims,
                            ElementType out) {
  const ElementType ct = random_compute_type(out);
  hlo::Value z = standard_normal(b, seed, offset, dims, ct);
  hlo::Value v = b.exponential(b.add(b.multiply(z, param(b, std, ct, dims)), param(b, mean, ct, dims)));
  return to_out(b, v, out);
}

hlo::Value lower_cauchy(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& median, const hlo::Value& sigma, const std::vector<int64_t>& dims,
                        ElementType out) {
  const ElementType ct = random_compute_type(out);
  hlo::Value u = unit_uniform(b, seed, offset, dims, ct, 1)[0];
  hlo::Value centred = b.subtract(u, b.constant_splat(0.5, u.type()));
  hlo::Value t = b.tan(b.multiply(b.constant_splat(kPi, u.type()), centred));
  hlo::Value v = b.add(param(b, median, ct, dims), b.multiply(param(b, sigma, ct, dims), t));
  return to_out(b, v, out);
}

hlo::Value lower_random(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                        const hlo::Value& from, const hlo::Value& range, const std::vector<int64_t>& dims,
                        ElementType out) {
  hlo::TensorType u64(ElementType::kU64, dims);
  hlo::Value bits = random_bits(b, seed, offset, ElementType::kU64, dims);
  hlo::Value r = broadcast_to(b, range, dims);
  hlo::Value full = b.compare(r, b.constant_splat_int(0, u64), "EQ");
  hlo::Value divisor = b.select(full, b.constant_splat_int(1, u64), r);
  hlo::Value k = b.select(full, bits, b.remainder(bits, divisor));
  hlo::Value base = b.bitcast_convert(broadcast_to(b, from, dims), u64);
  hlo::Value v = b.bitcast_convert(b.add(k, base), hlo::TensorType(ElementType::kS64, dims));
  if (out == ElementType::kF16 || out == ElementType::kBF16) v = b.convert(v, ElementType::kF32);
  return convert_to(b, v, out);
}

MultinomialResult lower_multinomial(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                    const hlo::Value& probs, int64_t num_samples, bool replacement) {
  const bool one_row = probs.rank() == 1;
  const ElementType ct = probs.dtype() == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
  const int64_t cats = probs.dims().back();
  const int64_t rows = one_row ? 1 : probs.dims()[0];
  hlo::Value p = convert_to(b, one_row ? b.reshape(probs, {1, cats}) : probs, ct);
  hlo::TensorType pt(ct, {rows, cats});

  MultinomialResult result;
  hlo::Value non_negative = b.compare(p, b.constant_splat(0.0, pt), "GE");
  result.negative = reduce_any(b, b.not_(non_negative));
  result.infinite = reduce_any(b, b.and_(non_negative, b.not_(b.is_finite(p))));
  hlo::Value sums = reduce_dim(b, p, 1, /*max=*/false);
  result.zero_sum = reduce_any(b, b.compare(sums, b.constant_splat(0.0, sums.type()), "LE"));

  hlo::Value samples;
  if (replacement) {
    // Inclusive scan of each row by log2(cats) shifted combines (the
    // shifted-in values are 0: neutral for a sum, and for a maximum of
    // values >= 0).
    hlo::Value zero = b.constant_splat(0.0, hlo::TensorType::scalar(ct));
    auto scan = [&](hlo::Value x, hlo::Value (hlo::Builder::*combine)(const hlo::Value&, const hlo::Value&)) {
      for (int64_t shift = 1; shift < cats; shift *= 2) {
        hlo::Value head = b.slice(x, {0, 0}, {rows, cats - shift}, {1, 1});
        x = (b.*combine)(x, b.pad(head, zero, {0, shift}, {0, 0}, {0, 0}));
      }
      return x;
    };
    // cdf[r, c] = p[r, 0] + ... + p[r, c]
    hlo::Value cdf = scan(p, &hlo::Builder::add);
    // The shifted adds sum each prefix in its own order, so the cdf of a
    // zero-weight category can come out an ulp above its predecessor's
    // (or below): a sliver of the line that would draw it. Carrying the
    // last positive category's cdf forward (a running maximum, exact) gives
    // zero-weight categories zero width and keeps the cdf sorted.
    hlo::Value positive = b.compare(p, b.constant_splat(0.0, pt), "GT");
    cdf = scan(b.select(positive, cdf, b.constant_splat(0.0, pt)), &hlo::Builder::maximum);
    hlo::Value total = b.reshape(b.slice(cdf, {0, cats - 1}, {rows, cats}, {1, 1}), {rows});
    const std::vector<int64_t> sdims{rows, num_samples};
    hlo::Value u = unit_uniform(b, seed, offset, sdims, ct, 1)[0];
    hlo::Value target = b.multiply(u, b.broadcast_in_dim(total, sdims, {0}));
    // pos = #{c : cdf[r, c] <= target}, by binary lifting over the sorted cdf
    hlo::TensorType it(ElementType::kS32, sdims);
    hlo::Value row_index = b.iota(it, 0);
    hlo::Value pos = b.constant_splat_int(0, it);
    int64_t step = 1;
    while (step * 2 <= cats) step *= 2;
    hlo::GatherDims gd;
    gd.collapsed_slice_dims = {0, 1};
    gd.start_index_map = {0, 1};
    gd.index_vector_dim = 2;
    for (; step >= 1; step /= 2) {
      hlo::Value cand = b.add(pos, b.constant_splat_int(step, it));
      hlo::Value in_range = b.compare(cand, b.constant_splat_int(cats, it), "LE");
      hlo::Value col = b.minimum(b.subtract(cand, b.constant_splat_int(1, it)), b.constant_splat_int(cats - 1, it));
      std::vector<int64_t> idims{rows, num_samples, 1};
      hlo::Value index = b.concatenate({b.reshape(row_index, idims), b.reshape(col, idims)}, 2);
      hlo::Value at = b.gather(cdf, index, gd, {1, 1});
      hlo::Value take = b.and_(in_range, b.compare(at, target, "LE"));
      pos = b.select(take, cand, pos);
    }
    // Rounding can put target at the row total: never past the last
    // category of positive weight.
    hlo::Value cat_index = b.iota(hlo::TensorType(ElementType::kS32, {rows, cats}), 1);
    hlo::Value last = reduce_dim(b, b.select(positive, cat_index, b.constant_splat_int(0, cat_index.type())), 1,
                                 /*max=*/true);
    pos = b.minimum(pos, b.broadcast_in_dim(last, sdims, {0}));
    samples = b.convert(pos, ElementType::kS64);
  } else {
    // Exponential races: argsort of p / q with q ~ Exp(1), in logs.
    hlo::Value u = unit_uniform(b, seed, offset, {rows, cats}, ct, 1, UnitInterval::kOpen)[0];
    hlo::Value q = b.negate(b.log(u));
    hlo::Value key = b.subtract(b.log(p), b.log(q));
    samples = b.convert(b.top_k(key, num_samples).second, ElementType::kS64);
  }
  if (one_row) samples = b.reshape(samples, {num_samples});
  result.samples = samples;
  return result;
}

hlo::Value lower_randperm(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, int64_t n,
                          ElementType out) {
  const hlo::Value keys = random_bits(b, seed, offset, ElementType::kU64, {n});
  return convert_to(b, lower_sort_positions(b, lower_order_key(b, keys, /*descending=*/false), 0), out);
}

hlo::Value lower_any_outside(hlo::Builder& b, const hlo::Value& x, double lo, double hi) {
  hlo::Value inside = b.compare(x, b.constant_splat(lo, x.type()), "GE");
  if (!std::isnan(hi)) inside = b.and_(inside, b.compare(x, b.constant_splat(hi, x.type()), "LE"));
  return reduce_any(b, b.not_(inside));
}

}  // namespace torch_tpu::ops
