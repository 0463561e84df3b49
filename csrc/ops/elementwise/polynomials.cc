#include "ops/elementwise/polynomials.h"

#include <vector>

#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

hlo::Value k(hlo::Builder& b, double v, const hlo::Value& like) { return splat_like(b, v, like); }

enum class Family { kChebyshevT, kChebyshevU, kChebyshevV, kChebyshevW, kHermiteH, kHermiteHe, kLaguerre, kLegendre };

Family family(BinaryMathOp p) {
  switch (p) {
    case BinaryMathOp::kChebyshevT:
    case BinaryMathOp::kShiftedChebyshevT: return Family::kChebyshevT;
    case BinaryMathOp::kChebyshevU:
    case BinaryMathOp::kShiftedChebyshevU: return Family::kChebyshevU;
    case BinaryMathOp::kChebyshevV:
    case BinaryMathOp::kShiftedChebyshevV: return Family::kChebyshevV;
    case BinaryMathOp::kChebyshevW:
    case BinaryMathOp::kShiftedChebyshevW: return Family::kChebyshevW;
    case BinaryMathOp::kHermiteH: return Family::kHermiteH;
    case BinaryMathOp::kHermiteHe: return Family::kHermiteHe;
    case BinaryMathOp::kLaguerreL: return Family::kLaguerre;
    case BinaryMathOp::kLegendreP: return Family::kLegendre;
    default: break;
  }
  throw hlo::HloError("lower_polynomial: not a polynomial op");
}

bool is_shifted(BinaryMathOp p) {
  return p == BinaryMathOp::kShiftedChebyshevT || p == BinaryMathOp::kShiftedChebyshevU ||
         p == BinaryMathOp::kShiftedChebyshevV || p == BinaryMathOp::kShiftedChebyshevW;
}

bool is_chebyshev(Family f) {
  return f == Family::kChebyshevT || f == Family::kChebyshevU || f == Family::kChebyshevV ||
         f == Family::kChebyshevW;
}

// P_1(x).
hlo::Value first(hlo::Builder& b, Family f, const hlo::Value& x) {
  hlo::Value two_x = b.add(x, x);
  switch (f) {
    case Family::kChebyshevT:
    case Family::kHermiteHe:
    case Family::kLegendre: return x;
    case Family::kChebyshevU:
    case Family::kHermiteH: return two_x;
    case Family::kChebyshevV: return b.subtract(two_x, k(b, 1, x));
    case Family::kChebyshevW: return b.add(two_x, k(b, 1, x));
    case Family::kLaguerre: return b.subtract(k(b, 1, x), x);
  }
  return x;
}

// P_{m+1} from P_m (q) and P_{m-1} (p).
hlo::Value next(hlo::Builder& b, Family f, const hlo::Value& m, const hlo::Value& x, const hlo::Value& p,
                const hlo::Value& q) {
  switch (f) {
    case Family::kChebyshevT:
    case Family::kChebyshevU:
    case Family::kChebyshevV:
    case Family::kChebyshevW: return b.subtract(b.multiply(b.add(x, x), q), p);
    case Family::kHermiteH: return b.subtract(b.multiply(b.add(x, x), q), b.multiply(b.add(m, m), p));
    case Family::kHermiteHe: return b.subtract(b.multiply(x, q), b.multiply(m, p));
    case Family::kLaguerre: {
      hlo::Value a = b.add(b.add(m, m), b.subtract(k(b, 1, x), x));
      return b.divide(b.subtract(b.multiply(a, q), b.multiply(m, p)), b.add(m, k(b, 1, m)));
    }
    case Family::kLegendre: {
      hlo::Value a = b.add(b.add(m, m), k(b, 1, m));
      return b.divide(b.subtract(b.multiply(b.multiply(a, x), q), b.multiply(m, p)), b.add(m, k(b, 1, m)));
    }
  }
  return q;
}

hlo::Value any(hlo::Builder& b, const hlo::Value& pred) {
  std::vector<int64_t> all;
  for (int64_t d = 0; d < pred.rank(); ++d) all.push_back(d);
  return b.reduce({pred}, {b.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kPred))}, all,
                  [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
                    return std::vector<hlo::Value>{r.or_(a[0], a[1])};
                  })[0];
}

// P_n(x) by the recurrence for the elements in `use` with n >= 2: one loop
// iteration per degree, as many as the largest such n needs. An element
// stops early once its value is NaN, as CPU's loops do (a Chebyshev
// polynomial outside [-1, 1] overflows to inf, then inf - inf is NaN), so
// a degree of 10^18 there ends after a few hundred iterations. The degree
// is counted in int64 (a float counter stops growing at 2^24 in float32).
hlo::Value recurrence(hlo::Builder& b, Family f, const hlo::Value& x, const hlo::Value& n, const hlo::Value& use) {
  const hlo::Value one_i = b.constant_splat_int(1, hlo::TensorType(ElementType::kS64, x.dims()));
  const hlo::Value active_n = b.select(use, b.convert(n, ElementType::kS64), one_i);
  auto going = [](hlo::Builder& c, const std::vector<hlo::Value>& v) {
    return c.and_(c.compare(v[0], v[4], "LT"), c.compare(v[2], v[2], "EQ"));
  };
  std::vector<hlo::Value> out = b.while_loop(
      {one_i, k(b, 1, x), first(b, f, x), x, active_n},
      [going](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{any(c, going(c, v))};
      },
      [f, going](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        const hlo::Value &m = v[0], &p = v[1], &q = v[2], &x = v[3], &n = v[4];
        const hlo::Value on = going(c, v);
        hlo::Value r = next(c, f, c.convert(m, x.dtype()), x, p, q);
        return std::vector<hlo::Value>{c.add(m, c.constant_splat_int(1, hlo::TensorType(ElementType::kS64, m.dims()))),
                                       c.select(on, q, p), c.select(on, r, q), x, n};
      });
  return out[2];
}

hlo::Value odd(hlo::Builder& b, const hlo::Value& n) {
  return b.compare(b.remainder(n, k(b, 2, n)), k(b, 0, n), "NE");
}

// (+-)v: negative when the degree is odd.
hlo::Value alternating(hlo::Builder& b, const hlo::Value& n, const hlo::Value& v) {
  return b.select(odd(b, n), b.negate(v), v);
}

}  // namespace

hlo::Value lower_polynomial(hlo::Builder& b, BinaryMathOp p, const hlo::Value& input, const hlo::Value& degree) {
  const Family f = family(p);
  // The shifted Chebyshev polynomials are the plain ones at 2x - 1.
  const hlo::Value x = is_shifted(p) ? b.subtract(b.add(input, input), k(b, 1, input)) : input;
  const hlo::Value n = b.unary("stablehlo.round_nearest_afz", b.select(b.compare(degree, k(b, 0, degree), "LT"),
                                                                         b.ceil(degree), b.floor(degree)));
  const hlo::Value ax = b.abs(x);
  hlo::Value one = k(b, 1, x), zero = k(b, 0, x);

  // CPU converts the degree to int64: NaN, infinities and degrees from 2^63
  // up become INT64_MIN, a negative degree, whose polynomial is 0.
  const hlo::Value no_degree = b.not_(b.compare(b.abs(n), k(b, 9223372036854775808.0, n), "LT"));
  // Elements the recurrence computes: degree >= 2 and no closed form or
  // exact value below (this also bounds the loop by the largest such degree).
  hlo::Value use = b.and_(b.compare(n, k(b, 2, n), "GE"), b.not_(no_degree));
  hlo::Value inside = b.constant_splat_int(0, hlo::TensorType(ElementType::kPred, x.dims()));
  if (is_chebyshev(f)) {
    const double cutoff = (f == Family::kChebyshevT || is_shifted(p)) ? 6 : 8;
    inside = b.and_(b.compare(ax, one, "LT"), b.compare(n, k(b, cutoff, n), "GT"));
  }
  if (is_chebyshev(f) || f == Family::kLegendre) use = b.and_(use, b.compare(ax, one, "NE"));
  if (f == Family::kLaguerre) use = b.and_(use, b.compare(ax, zero, "NE"));
  use = b.and_(use, b.not_(inside));
  hlo::Value result = recurrence(b, f, x, n, use);
  if (is_chebyshev(f)) {
    // Closed forms inside (-1, 1) for large degrees (the CPU kernels' cutoffs).
    hlo::Value theta = b.unary("chlo.acos", b.select(inside, x, zero));
    hlo::Value two_n1 = b.add(b.add(n, n), one);
    hlo::Value closed;
    switch (f) {
      case Family::kChebyshevT: closed = b.cosine(b.multiply(n, theta)); break;
      case Family::kChebyshevU: {
        hlo::Value s = b.sine(theta);
        hlo::Value n1 = b.add(n, one);
        closed = b.select(b.compare(s, zero, "NE"), b.divide(b.sine(b.multiply(n1, theta)), s),
                          b.multiply(b.multiply(n1, b.cosine(b.multiply(n1, theta))), x));
        break;
      }
      case Family::kChebyshevV: {
        hlo::Value half = b.multiply(theta, k(b, 0.5, theta));
        closed = b.select(b.compare(b.sine(half), one, "NE"),
                          b.divide(b.cosine(b.multiply(b.add(n, k(b, 0.5, n)), theta)), b.cosine(half)),
                          alternating(b, n, two_n1));
        break;
      }
      default: {  // W
        hlo::Value half = b.multiply(theta, k(b, 0.5, theta));
        closed = b.select(b.compare(b.cosine(half), one, "NE"),
                          b.divide(b.sine(b.multiply(b.add(n, k(b, 0.5, n)), theta)), b.sine(half)),
                          b.select(b.compare(x, zero, "GT"), two_n1, alternating(b, n, one)));
        break;
      }
    }
    result = b.select(inside, closed, result);
    // Exact values at x = +-1.
    hlo::Value at_one;
    hlo::Value positive = b.compare(x, zero, "GT");
    switch (f) {
      case Family::kChebyshevT: at_one = b.select(positive, one, alternating(b, n, one)); break;
      case Family::kChebyshevU: {
        hlo::Value n1 = b.add(n, one);
        at_one = b.select(positive, n1, alternating(b, n, n1));
        break;
      }
      case Family::kChebyshevV: at_one = b.select(positive, one, alternating(b, n, two_n1)); break;
      default: at_one = b.select(positive, two_n1, alternating(b, n, one)); break;
    }
    result = b.select(b.compare(ax, one, "EQ"), at_one, result);
  }
  if (f == Family::kLegendre) {
    result = b.select(b.compare(ax, one, "EQ"), b.select(b.compare(x, zero, "GT"), one, alternating(b, n, one)),
                      result);
  }
  if (f == Family::kLaguerre) result = b.select(b.compare(ax, zero, "EQ"), one, result);
  // Degrees 0 and 1, and 0 for negative degrees; the n >= 2 cases above.
  result = b.select(b.compare(n, one, "EQ"), first(b, f, x), result);
  if (f == Family::kLaguerre) result = b.select(b.compare(ax, zero, "EQ"), one, result);
  result = b.select(b.compare(n, zero, "EQ"), one, result);
  return b.select(b.or_(b.compare(n, zero, "LT"), no_degree), zero, result);
}

}  // namespace torch_tpu::ops
