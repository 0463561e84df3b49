// ATen glue for fractional_max_pool2d / 3d and their backward, with CPU's
// checks and messages. The random samples come from the caller
// (F.fractional_max_pool2d draws them with torch.rand on the input's
// device), so the same samples give CPU's windows. The backward is max
// pooling's: each gradient goes back to its index. Lowering:
// csrc/ops/nn/fractional_pool.cc.
#include <ATen/core/Tensor.h>
#include <ATen/native/FractionalMaxPooling.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "ops/nn/fractional_pool.h"
#include "ops/nn/pooling.h"

namespace torch_tpu::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;
using Values = std::vector<hlo::Value>;

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

// A pooled dim (0 is the first pooled dim) and its name in CPU's messages.
struct DimName {
  int64_t pooled;
  const char* name;
};

void check_pool_args(int64_t n, const Tensor& self, IntArrayRef kernel, IntArrayRef output) {
  const char* op = n == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d";
  const char* ints = n == 2 ? "tuple of Ints" : "tuple of three Ints";
  TORCH_CHECK(static_cast<int64_t>(kernel.size()) == n, op, ": kernel_size must either be a single Int or ", ints);
  TORCH_CHECK(static_cast<int64_t>(output.size()) == n, op, ": output_size must either be a single Int or ", ints);
  const std::string fn = n == 2 ? "fractional_max_pool2d()" : "fractional_max_pool3d_out()";
  for (int64_t i = 0; i < n; ++i) {
    // CPU pools empty or negative windows into -inf values and indices
    // outside the windows; here they are refused.
    TORCH_CHECK(kernel[i] > 0 && output[i] >= 0, fn, ": expected positive kernel sizes and non-negative output "
                "sizes, got kernel_size ", kernel, " and output_size ", output);
  }
  const int64_t ndims = self.dim();
  TORCH_CHECK(ndims == n + 1 || ndims == n + 2, fn, ": Expected ", n + 1, "D or ", n + 2, "D tensor, but got: ",
              self.sizes());
  for (int64_t i = 1; i < ndims; ++i) {
    TORCH_CHECK(self.size(i) > 0, fn, ": Expected input to have non-zero size for non-batch dimensions, but got",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  const int64_t lead = ndims - n;
  // 2-d windows may end at the input's last element; CPU's 3-d check is
  // one stricter (and checks time, width, height in that order).
  const std::vector<DimName> order = n == 2 ? std::vector<DimName>{{0, "height"}, {1, "width"}}
                                            : std::vector<DimName>{{0, "time"}, {2, "width"}, {1, "height"}};
  for (const DimName& d : order) {
    const int64_t in = self.size(lead + d.pooled);
    const int64_t last = output[d.pooled] + kernel[d.pooled] - 1;
    TORCH_CHECK(n == 2 ? last <= in : last < in, fn, ": pool ", d.name, " ", kernel[d.pooled],
                " too large relative to input ", d.name, " ", in);
  }
}

void check_samples(int64_t n, const Tensor& self, const Tensor& samples) {
  if (n == 2) {
    at::native::fractional_max_pool_check_shape<2>(self, samples);
  } else {
    at::native::fractional_max_pool_check_shape<3>(self, samples);
  }
}

void check_float(const Tensor& t, const char* kernel) {
  const c10::ScalarType s = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(s), "\"", kernel, "\" not implemented for '", c10::toString(s), "'");
  to_element_type(s, kernel);
}

std::tuple<Tensor, Tensor> fractional_max_pool(int64_t n, const Tensor& self, IntArrayRef kernel_size,
                                               IntArrayRef output_size, const Tensor& samples) {
  check_pool_args(n, self, kernel_size, output_size);
  check_samples(n, self, samples);
  check_float(self, n == 2 ? "fractional_max_pool2d_out_frame" : "fractional_max_pool3d_out_frame");
  const bool batched = self.dim() == n + 2;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const std::vector<int64_t> kernel = kernel_size.vec(), output = output_size.vec();
  // 2-d pooling reads width's sample from column 0 and height's from 1;
  // 3-d reads time, height, width from columns 0, 1, 2.
  const std::vector<int64_t> columns = n == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1, 2};
  std::string attributes;
  for (int64_t v : kernel) put(attributes, v);
  for (int64_t v : output) put(attributes, v);
  OpCall call{n == 2 ? "aten::fractional_max_pool2d" : "aten::fractional_max_pool3d", std::move(attributes),
              {x, samples}, {}};
  auto r = run_op(call, [&](hlo::Builder& b, const Values& t, const Values&) {
    auto [values, indices] = ops::lower_fractional_max_pool(b, t[0], t[1], kernel, output, columns);
    return Values{values, indices};
  });
  if (!batched) return {r.at(0).squeeze(0), r.at(1).squeeze(0)};
  return {r.at(0), r.at(1)};
}

Tensor fractional_max_pool_backward(int64_t n, const Tensor& grad_output, const Tensor& self,
                                    IntArrayRef output_size, const Tensor& indices) {
  const std::string fn = n == 2 ? "fractional_max_pool2d_backward()" : "fractional_max_pool3d_backward_out()";
  TORCH_CHECK(self.dim() == n + 1 || self.dim() == n + 2, fn, ": expected a ", n + 1, "D or ", n + 2,
              "D input, got ", self.sizes());
  const int64_t lead = self.dim() - n;
  std::vector<int64_t> expected = self.sizes().vec();
  const bool sizes_known = static_cast<int64_t>(output_size.size()) == n;
  if (sizes_known) std::copy(output_size.begin(), output_size.end(), expected.begin() + lead);
  if (n == 3 && sizes_known && grad_output.dim() == self.dim()) {
    // CPU's 3-d messages name the dim.
    const std::vector<DimName> order = {{0, "time"}, {1, "height"}, {2, "width"}};
    for (const DimName& d : order) {
      TORCH_CHECK(output_size[d.pooled] == grad_output.size(lead + d.pooled), fn, ": gradOutput ", d.name,
                  " unexpected");
    }
  }
  TORCH_CHECK(sizes_known && grad_output.sizes() == at::IntArrayRef(expected), fn, ": gradOutput sizes unexpected");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type Long but found ", indices.scalar_type());
  TORCH_CHECK(indices.sizes() == grad_output.sizes(), fn, ": expected indices of gradOutput's size ",
              grad_output.sizes(), ", got ", indices.sizes());
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", grad_output.scalar_type());
  check_float(self, n == 2 ? "fractional_max_pool2d_backward_out_frame" : "fractional_max_pool3d_backward_out_frame");
  const std::vector<int64_t> in = self.sizes().vec();
  std::string attributes;
  for (int64_t s : in) put(attributes, s);
  OpCall call{n == 2 ? "aten::fractional_max_pool2d_backward" : "aten::fractional_max_pool3d_backward",
              std::move(attributes), {grad_output, indices}, {}};
  return run_op(call, [in, n](hlo::Builder& b, const Values& t, const Values&) {
    return Values{ops::lower_max_pool_backward(b, t[0], t[1], in, n)};
  }).at(0);
}

// The out= forms are structured kernels: out must have the result's dtype.
Tensor& write_exact(Tensor& out, const Tensor& value) {
  TORCH_CHECK(out.scalar_type() == value.scalar_type(), "Expected out tensor to have dtype ", value.dtype(),
              ", but got ", out.dtype(), " instead");
  return write_out(out, value);
}

std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& self, IntArrayRef k, IntArrayRef o, const Tensor& s) {
  return fractional_max_pool(2, self, k, o, s);
}
std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& self, IntArrayRef k, IntArrayRef o, const Tensor& s) {
  return fractional_max_pool(3, self, k, o, s);
}
std::tuple<Tensor&, Tensor&> fractional_max_pool_out(int64_t n, const Tensor& self, IntArrayRef k, IntArrayRef o,
                                                     const Tensor& s, Tensor& output, Tensor& indices) {
  auto [values, where] = fractional_max_pool(n, self, k, o, s);
  write_exact(output, values);
  write_exact(indices, where);
  return {output, indices};
}
std::tuple<Tensor&, Tensor&> fractional_max_pool2d_out(const Tensor& self, IntArrayRef k, IntArrayRef o,
                                                       const Tensor& s, Tensor& output, Tensor& indices) {
  return fractional_max_pool_out(2, self, k, o, s, output, indices);
}
std::tuple<Tensor&, Tensor&> fractional_max_pool3d_out(const Tensor& self, IntArrayRef k, IntArrayRef o,
                                                       const Tensor& s, Tensor& output, Tensor& indices) {
  return fractional_max_pool_out(3, self, k, o, s, output, indices);
}
Tensor fractional_max_pool2d_backward(const Tensor& g, const Tensor& self, IntArrayRef, IntArrayRef o,
                                      const Tensor& i) {
  return fractional_max_pool_backward(2, g, self, o, i);
}
Tensor fractional_max_pool3d_backward(const Tensor& g, const Tensor& self, IntArrayRef, IntArrayRef o,
                                      const Tensor& i) {
  return fractional_max_pool_backward(3, g, self, o, i);
}
Tensor& fractional_max_pool2d_backward_out(const Tensor& g, const Tensor& self, IntArrayRef, IntArrayRef o,
                                           const Tensor& i, Tensor& grad_input) {
  return write_exact(grad_input, fractional_max_pool_backward(2, g, self, o, i));
}
Tensor& fractional_max_pool3d_backward_out(const Tensor& g, const Tensor& self, IntArrayRef, IntArrayRef o,
                                           const Tensor& i, Tensor& grad_input) {
  return write_exact(grad_input, fractional_max_pool_backward(3, g, self, o, i));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d", fractional_max_pool2d);
  m.impl("fractional_max_pool2d.output", fractional_max_pool2d_out);
  m.impl("fractional_max_pool2d_backward", fractional_max_pool2d_backward);
  m.impl("fractional_max_pool2d_backward.grad_input", fractional_max_pool2d_backward_out);
  m.impl("fractional_max_pool3d", fractional_max_pool3d);
  m.impl("fractional_max_pool3d.output", fractional_max_pool3d_out);
  m.impl("fractional_max_pool3d_backward", fractional_max_pool3d_backward);
  m.impl("fractional_max_pool3d_backward.grad_input", fractional_max_pool3d_backward_out);
}

}  // namespace torch_tpu::aten
