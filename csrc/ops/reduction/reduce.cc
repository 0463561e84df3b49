#include "ops/reduction/reduce.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

bool is_reduced(const std::vector<int64_t>& dims, int64_t d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

int64_t reduced_count(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

// The lowest (or highest) value of `t`: the identity of max (or min).
Value extreme(hlo::Builder& b, ElementType t, bool lowest) {
  const TensorType s = TensorType::scalar(t);
  if (is_floating(t)) {
    return b.constant_splat(lowest ? -std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::infinity(), s);
  }
  if (t == ElementType::kPred) return b.constant_splat_int(lowest ? 0 : 1, s);
  if (is_unsigned(t)) {
    if (lowest) return b.constant_splat_int(0, s);
    const uint64_t bits = static_cast<uint64_t>(element_size(t)) * 8;
    return b.constant_splat_uint(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1, s);
  }
  const int64_t bits = static_cast<int64_t>(element_size(t)) * 8;
  const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return b.constant_splat_int(lowest ? -max - 1 : max, s);
}

Value identity(hlo::Builder& b, ReduceKind kind, ElementType t) {
  const TensorType s = TensorType::scalar(t);
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kNanSum:
    case ReduceKind::kAny:
    case ReduceKind::kXor:
      return b.constant_splat_int(0, s);
    case ReduceKind::kProd:
    case ReduceKind::kAll:
      return b.constant_splat_int(1, s);
    case ReduceKind::kMax:
      return extreme(b, t, /*lowest=*/true);
    case ReduceKind::kMin:
      return extreme(b, t, /*lowest=*/false);
  }
  return {};
}

// One combining step of `kind` on two 0-dim values of one type.
Value combine(hlo::Builder& b, ReduceKind kind, const Value& acc, const Value& x) {
  const bool pred = acc.dtype() == ElementType::kPred;
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kNanSum:
      return pred ? b.or_(acc, x) : b.add(acc, x);
    case ReduceKind::kProd:
      return pred ? b.and_(acc, x) : b.multiply(acc, x);
    case ReduceKind::kMax:  // NaN propagates, as on CPU
      return pred ? b.or_(acc, x) : b.maximum_in_reduction(acc, x);
    case ReduceKind::kMin:
      return pred ? b.and_(acc, x) : b.minimum_in_reduction(acc, x);
    case ReduceKind::kAll:
      return b.and_(acc, x);
    case ReduceKind::kAny:
      return b.or_(acc, x);
    case ReduceKind::kXor:
      return b.xor_(acc, x);
  }
  return {};
}

// `x` reduced with `kind` over `dims` in its own type; the dims are removed.
Value reduce_dims(hlo::Builder& b, const Value& x, ReduceKind kind, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  return b.reduce({x}, {identity(b, kind, x.dtype())}, dims,
                  [kind](hlo::Builder& r, const std::vector<Value>& args) {
                    return std::vector<Value>{combine(r, kind, args[0], args[1])};
                  })[0];
}

Value truth(hlo::Builder& b, const Value& x) {
  if (x.dtype() == ElementType::kPred) return x;
  return b.compare(x, b.constant_splat_int(0, x.type()), "NE");
}

Value is_nan(hlo::Builder& b, const Value& x) { return b.compare(x, x, "NE"); }

// x's elements as the 64-bit patterns hash_tensor combines.
Value hash_bits(hlo::Builder& b, const Value& x) {
  const TensorType u64(ElementType::kU64, x.dims());
  if (is_floating(x.dtype())) return b.bitcast_convert(convert_to(b, x, ElementType::kF64), u64);
  if (is_unsigned(x.dtype())) return b.convert(x, ElementType::kU64);
  return b.bitcast_convert(b.convert(x, ElementType::kS64), u64);
}


}  // namespace

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims,
                                   bool keepdim) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (!is_reduced(dims, d)) {
      out.push_back(shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

Value restore_reduced_dims(hlo::Builder& b, const Value& reduced, const std::vector<int64_t>& shape,
                           const std::vector<int64_t>& dims, bool keepdim) {
  if (!keepdim || dims.empty()) return reduced;
  return b.reshape(reduced, reduced_shape(shape, dims, true));
}

Value expand_kept(hlo::Builder& b, const Value& kept, const std::vector<int64_t>& shape) {
  if (kept.dims() == shape) return kept;
  std::vector<int64_t> map(shape.size());
  for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<int64_t>(i);
  return b.broadcast_in_dim(kept, shape, map);
}

Value broadcast_reduced(hlo::Builder& b, const Value& reduced, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& dims) {
  std::vector<int64_t> map;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (!is_reduced(dims, d)) map.push_back(d);
  }
  return b.broadcast_in_dim(reduced, shape, map);
}

Value lower_reduce(hlo::Builder& b, const Value& x, ReduceKind kind, const std::vector<int64_t>& dims,
                   bool keepdim, ElementType acc, ElementType out) {
  Value in;
  switch (kind) {
    case ReduceKind::kAll:
    case ReduceKind::kAny:
      in = truth(b, x);
      break;
    case ReduceKind::kMax:
    case ReduceKind::kMin:
      in = x;
      break;
    case ReduceKind::kXor:
      in = hash_bits(b, x);
      break;
    case ReduceKind::kNanSum:
      in = convert_to(b, convert_to(b, x, out), acc);
      if (is_floating(acc)) in = b.select(is_nan(b, in), b.constant_splat_int(0, in.type()), in);
      break;
    default:
      // The input is cast to the result's dtype first, as PyTorch documents
      // for `dtype=` (sum(dtype=float16) of 70000 is inf), then accumulated wider.
      in = convert_to(b, convert_to(b, x, out), acc);
      break;
  }
  Value r = convert_to(b, reduce_dims(b, in, kind, dims), out);
  return restore_reduced_dims(b, r, x.dims(), dims, keepdim);
}

Value lower_mean(hlo::Builder& b, const Value& x, const std::vector<int64_t>& dims, bool keepdim,
                 ElementType out) {
  const ElementType acc = accumulation_type(out);
  Value sum = reduce_dims(b, convert_to(b, x, acc), ReduceKind::kSum, dims);
  const double n = static_cast<double>(reduced_count(x.dims(), dims));
  Value mean = b.divide(sum, b.constant_splat(n, sum.type()));
  return restore_reduced_dims(b, convert_to(b, mean, out), x.dims(), dims, keepdim);
}

std::pair<Value, Value> lower_max_min_dim(hlo::Builder& b, const Value& x, int64_t dim, bool keepdim,
                                          bool is_max) {
  Value in = x.rank() == 0 ? b.reshape(x, {1}) : x;
  const int64_t size = in.dims()[dim];
  // Narrow indices where they fit: 64-bit integers are emulated on TPUs.
  const ElementType index_type =
      size < std::numeric_limits<int32_t>::max() ? ElementType::kS32 : ElementType::kS64;
  Value index = b.iota(TensorType(index_type, in.dims()), dim);
  // Initial index past every real one, so real elements win ties with it.
  Value init_index = extreme(b, index_type, /*lowest=*/false);
  const bool floating = is_floating(in.dtype());
  auto results = b.reduce(
      {in, index}, {extreme(b, in.dtype(), /*lowest=*/is_max), init_index}, {dim},
      [is_max, floating](hlo::Builder& r, const std::vector<Value>& a) {
        const Value& acc_v = a[0];
        const Value& acc_i = a[1];
        const Value& v = a[2];
        const Value& i = a[3];
        Value better = r.compare(v, acc_v, is_max ? "GT" : "LT");
        Value same = r.compare(v, acc_v, "EQ");
        if (floating) {
          // NaN ranks above every number; among NaNs the first one wins.
          Value acc_nan = is_nan(r, acc_v);
          Value v_nan = is_nan(r, v);
          better = r.or_(better, r.and_(v_nan, r.not_(acc_nan)));
          same = r.or_(same, r.and_(v_nan, acc_nan));
        }
        Value take = r.or_(better, r.and_(same, r.compare(i, acc_i, "LT")));
        return std::vector<Value>{r.select(take, v, acc_v), r.select(take, i, acc_i)};
      });
  Value values = results[0];
  Value indices = convert_to(b, results[1], ElementType::kS64);
  if (x.rank() == 0) return {values, indices};
  return {restore_reduced_dims(b, values, x.dims(), {dim}, keepdim),
          restore_reduced_dims(b, indices, x.dims(), {dim}, keepdim)};
}

Value lower_arg_max_min(hlo::Builder& b, const Value& x, std::optional<int64_t> dim, bool keepdim,
                        bool is_max) {
  if (dim) return lower_max_min_dim(b, x, *dim, keepdim, is_max).second;
  const int64_t n = TensorType(x.dtype(), x.dims()).num_elements();
  Value index = lower_max_min_dim(b, b.reshape(x, {n}), 0, false, is_max).second;
  if (!keepdim) return index;
  return b.reshape(index, std::vector<int64_t>(x.dims().size(), 1));
}

std::pair<Value, std::optional<Value>> lower_var(hlo::Builder& b, const Value& x,
                                                 const std::vector<int64_t>& dims, double correction,
                                                 bool keepdim, bool take_sqrt, bool with_mean,
                                                 ElementType out) {
  const ElementType acc = accumulation_type(x.dtype());
  Value xa = convert_to(b, x, acc);
  const int64_t n = reduced_count(x.dims(), dims);
  Value sum = reduce_dims(b, xa, ReduceKind::kSum, dims);
  Value mean = b.divide(sum, b.constant_splat(static_cast<double>(n), sum.type()));
  Value diff = b.subtract(xa, broadcast_reduced(b, mean, x.dims(), dims));
  Value square;
  if (is_complex(acc)) {
    Value re = b.real(diff);
    Value im = b.imag(diff);
    square = b.add(b.multiply(re, re), b.multiply(im, im));
  } else {
    square = b.multiply(diff, diff);
  }
  Value squares = reduce_dims(b, square, ReduceKind::kSum, dims);
  const double divisor = std::max(0.0, static_cast<double>(n) - correction);
  Value var = b.divide(squares, b.constant_splat(divisor, squares.type()));
  if (take_sqrt) var = b.sqrt(var);
  var = restore_reduced_dims(b, convert_to(b, var, out), x.dims(), dims, keepdim);
  std::optional<Value> mean_out;
  if (with_mean) mean_out = restore_reduced_dims(b, convert_to(b, mean, x.dtype()), x.dims(), dims, keepdim);
  return {var, mean_out};
}

Value lower_logsumexp(hlo::Builder& b, const Value& x, const std::vector<int64_t>& dims, bool keepdim,
                      ElementType out) {
  const ElementType acc = accumulation_type(out);
  Value xa = convert_to(b, x, acc);
  // Complex inputs shift by the largest real part.
  Value max = reduce_dims(b, is_complex(acc) ? b.real(xa) : xa, ReduceKind::kMax, dims);
  // An infinite maximum would turn x - max into NaN: shift by 0 instead.
  Value inf = b.constant_splat(std::numeric_limits<double>::infinity(), max.type());
  Value shift = b.select(b.compare(b.abs(max), inf, "EQ"), b.constant_splat_int(0, max.type()), max);
  shift = convert_to(b, shift, acc);
  Value shifted = b.subtract(xa, broadcast_reduced(b, shift, x.dims(), dims));
  Value sum = reduce_dims(b, b.exponential(shifted), ReduceKind::kSum, dims);
  Value r = b.add(b.log(sum), shift);
  return restore_reduced_dims(b, convert_to(b, r, out), x.dims(), dims, keepdim);
}

}  // namespace torch_tpu::ops
