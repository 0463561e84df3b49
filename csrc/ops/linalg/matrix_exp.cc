#include "ops/linalg/matrix_exp.h"

#include <array>
#include <cmath>
#include <vector>

#include "ops/linalg/matrix_util.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

// The polynomial's coefficients (the paper's, as PyTorch uses them): B_i =
// sum_j kB[i][j] P_j over the powers P = (I, A, A^2, A^3, A^6); then
// A9 = B_0 B_4 + B_3 and T18 = B_1 + (B_2 + A9) A9.
constexpr std::array<std::array<double, 5>, 5> kB = {{
    {0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.},
    {0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04},
    {-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05},
    {-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05},
    {0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05},
}};

// The largest 1-norm for which degree 18 is accurate to the type's
// rounding (PyTorch's thresholds).
double theta18(ElementType t) { return real_part_type(t) == ElementType::kF64 ? 1.090863719290036 : 3.010066362817634; }

Value taylor18(hlo::Builder& b, const Value& a) {
  Value eye = matrix::identity(b, a.dtype(), a.dims());
  Value a2 = matrix::matmul(b, a, a);
  Value a3 = matrix::matmul(b, a2, a);
  Value a6 = matrix::matmul(b, a3, a3);
  const std::array<Value, 5> powers = {eye, a, a2, a3, a6};
  std::array<Value, 5> terms;
  for (int i = 0; i < 5; ++i) {
    Value sum = b.constant_splat(0, a.type());
    for (int j = 0; j < 5; ++j) {
      if (kB[i][j] != 0) sum = b.add(sum, b.multiply(b.constant_splat(kB[i][j], a.type()), powers[j]));
    }
    terms[i] = sum;
  }
  Value a9 = b.add(matrix::matmul(b, terms[0], terms[4]), terms[3]);
  return b.add(terms[1], matrix::matmul(b, b.add(terms[2], a9), a9));
}

}  // namespace

Value lower_matrix_exp(hlo::Builder& b, const Value& a) {
  const int64_t n = a.dims().back();
  if (TensorType(a.dtype(), a.dims()).num_elements() == 0) return a;
  if (n == 1) return b.exponential(a);
  // 16-bit floats compute in f32 and are rounded once.
  if (a.dtype() == ElementType::kF16 || a.dtype() == ElementType::kBF16) {
    return b.convert(lower_matrix_exp(b, b.convert(a, ElementType::kF32)), a.dtype());
  }
  Value x = matrix::flatten_batch(b, a);
  const int64_t batch = x.dims()[0];
  // s = max(0, ceil(log2(|A|_1 / theta))) per matrix (0 where the norm is
  // not finite: the result is NaN / inf anyway).
  Value norm = matrix::reduce(b, matrix::reduce(b, b.abs(x), 1, &hlo::Builder::add, 0), 1, &hlo::Builder::maximum_in_reduction, 0);
  const TensorType real(norm.dtype(), {batch});
  Value s = b.ceil(b.divide(b.log(b.divide(norm, b.constant_splat(theta18(a.dtype()), real))),
                            b.constant_splat(std::log(2.0), real)));
  s = b.select(b.is_finite(s), b.maximum(s, b.constant_splat(0, real)), b.constant_splat(0, real));
  Value scale = b.power(b.constant_splat(2, real), s);
  Value scaled = b.divide(x, matrix::from_real(b, b.broadcast_in_dim(scale, x.dims(), {0}), x.dtype()));
  Value squarings = b.convert(s, ElementType::kS32);
  Value most = b.reduce({squarings}, {b.constant_splat_int(0, TensorType::scalar(ElementType::kS32))}, {0},
                        [](hlo::Builder& r, const Values& v) { return Values{r.maximum(v[0], v[1])}; })[0];
  Values out = b.while_loop(
      {b.constant_splat_int(0, TensorType::scalar(ElementType::kS32)), taylor18(b, scaled)},
      [&most](hlo::Builder& c, const Values& v) { return Values{c.compare(v[0], most, "LT")}; },
      [&squarings](hlo::Builder& c, const Values& v) {
        const std::vector<int64_t>& dims = v[1].dims();
        Value more = c.compare(c.broadcast_in_dim(v[0], {dims[0]}, {}), squarings, "LT");
        Value squared = c.select(c.broadcast_in_dim(more, dims, {0}), matrix::matmul(c, v[1], v[1]), v[1]);
        return Values{c.add(v[0], c.constant_splat_int(1, TensorType::scalar(ElementType::kS32))), squared};
      });
  return b.reshape(out[1], a.dims());
}

}  // namespace torch_tpu::ops
