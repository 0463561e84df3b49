// Builds a set of StableHLO modules covering every Builder method, prints
// them, and checks a few exact spellings and error messages.
//
//   g++ -std=c++17 -I csrc tests/cpp/hlo_print_test.cc csrc/hlo/*.cc
//   ./a.out            # print all modules, run the checks
//   ./a.out DIR        # also write DIR/<name>.mlir, one file per module
//
// Exits non-zero if any check fails. No test framework on purpose: this
// builds without PyTorch or any library beyond the standard one.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "hlo/builder.h"
#include "hlo/module_import.h"

using namespace torch_tpu;
using namespace torch_tpu::hlo;

namespace {

int failures = 0;
int passes = 0;

void expect(bool ok, const std::string& what) {
  if (ok) {
    ++passes;
  } else {
    ++failures;
    std::cerr << "FAIL: " << what << "\n";
  }
}

void expect_contains(const std::string& text, const std::string& needle) {
  expect(text.find(needle) != std::string::npos,
         "expected to find: " + needle);
}

// Runs fn, which must throw HloError whose message contains `needle`.
void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
  } catch (const HloError& e) {
    expect(std::string(e.what()).find(needle) != std::string::npos,
           "error message '" + std::string(e.what()) + "' lacks '" + needle +
               "'");
    return;
  } catch (const std::exception& e) {
    expect(false, "wrong exception type for '" + needle + "': " + e.what());
    return;
  }
  expect(false, "no error thrown, expected: " + needle);
}

TensorType f32(std::vector<int64_t> dims) {
  return TensorType(ElementType::kF32, std::move(dims));
}
TensorType s32(std::vector<int64_t> dims) {
  return TensorType(ElementType::kS32, std::move(dims));
}

RegionFn add_body() {
  return [](Builder& b, const std::vector<Value>& args) {
    return std::vector<Value>{b.add(args[0], args[1])};
  };
}

RegionFn max_body() {
  return [](Builder& b, const std::vector<Value>& args) {
    return std::vector<Value>{b.maximum(args[0], args[1])};
  };
}

struct Module {
  std::string name;
  std::string text;
};

std::vector<Module> build_modules() {
  std::vector<Module> modules;

  {  // The brief's example.
    Builder b("jit_add");
    Value x = b.parameter(f32({2, 3}));
    Value y = b.parameter(f32({2, 3}));
    modules.push_back({"add", b.build({b.add(x, y)})});
  }

  {  // reduce with a region; multi-result sort; top_k.
    Builder b("reduce_sort");
    Value x = b.parameter(f32({2, 3}));
    Value zero = b.constant_splat(0.0, f32({}));
    Value sum = b.reduce({x}, {zero}, {1}, add_body())[0];
    Value idx = b.iota(s32({2, 3}), 1);
    std::vector<Value> sorted = b.sort(
        {x, idx}, 1, true, [](Builder& r, const std::vector<Value>& a) {
          return std::vector<Value>{r.compare(a[0], a[1], "LT")};
        });
    auto [values, indices] = b.top_k(x, 2);
    // Variadic reduce: argmax as (max value, its index).
    Value neg_inf = b.constant_splat(-INFINITY, f32({}));
    Value zero_i = b.constant_splat_int(0, s32({}));
    std::vector<Value> argmax = b.reduce(
        {x, idx}, {neg_inf, zero_i}, {1},
        [](Builder& r, const std::vector<Value>& a) {
          Value take_new = r.compare(a[2], a[0], ComparisonDirection::kGt);
          return std::vector<Value>{r.select(take_new, a[2], a[0]),
                                    r.select(take_new, a[3], a[1])};
        });
    modules.push_back(
        {"reduce_sort", b.build({sum, sorted[0], sorted[1], values, indices,
                                 argmax[0], argmax[1]})});
  }

  {  // Elementwise ops of every family.
    Builder b("elementwise");
    Value x = b.parameter(f32({4}));
    Value y = b.parameter(f32({4}));
    Value i = b.parameter(s32({4}));
    Value u = b.parameter(TensorType(ElementType::kU8, {4}));
    Value p = b.parameter(TensorType(ElementType::kPred, {4}));
    std::vector<Value> out;
    for (auto fn : {&Builder::add, &Builder::subtract, &Builder::multiply,
                    &Builder::divide, &Builder::remainder, &Builder::maximum,
                    &Builder::minimum, &Builder::power, &Builder::atan2}) {
      out.push_back((b.*fn)(x, y));
    }
    for (auto fn : {&Builder::and_, &Builder::or_, &Builder::xor_,
                    &Builder::shift_left, &Builder::shift_right_arithmetic,
                    &Builder::shift_right_logical}) {
      out.push_back((b.*fn)(i, i));
    }
    out.push_back(b.and_(p, p));
    out.push_back(b.not_(p));
    out.push_back(b.not_(u));
    for (auto fn :
         {&Builder::abs, &Builder::negate, &Builder::exponential,
          &Builder::exponential_minus_one, &Builder::log,
          &Builder::log_plus_one, &Builder::sqrt, &Builder::rsqrt,
          &Builder::cbrt, &Builder::tanh, &Builder::logistic, &Builder::sine,
          &Builder::cosine, &Builder::tan, &Builder::floor, &Builder::ceil,
          &Builder::round_nearest_afz, &Builder::round_nearest_even,
          &Builder::sign}) {
      out.push_back((b.*fn)(x));
    }
    out.push_back(b.is_finite(x));
    out.push_back(b.popcnt(i));
    out.push_back(b.count_leading_zeros(i));
    Value c = b.complex(x, y);
    out.push_back(b.real(c));
    out.push_back(b.imag(c));
    out.push_back(b.abs(c));
    out.push_back(b.compare(u, u, "LT"));
    out.push_back(b.compare(p, p, "EQ"));
    out.push_back(b.compare(i, i, ComparisonDirection::kGe));
    out.push_back(b.compare(c, c, "NE"));
    Value lt = b.compare(x, y, "LT");
    out.push_back(b.select(lt, x, y));
    Value scalar_pred = b.constant_splat_int(1, TensorType(ElementType::kPred, {}));
    out.push_back(b.select(scalar_pred, x, y));
    out.push_back(b.clamp(b.constant_splat(-1.0, f32({})), x,
                          b.constant_splat(1.0, f32({}))));
    out.push_back(b.clamp(x, y, x));
    out.push_back(b.convert(x, ElementType::kBF16));
    out.push_back(b.convert(i, ElementType::kF64));
    out.push_back(b.bitcast_convert(x, s32({4})));
    out.push_back(b.bitcast_convert(x, TensorType(ElementType::kU8, {4, 4})));
    Value pairs = b.reshape(x, {2, 2});
    out.push_back(b.bitcast_convert(pairs, TensorType(ElementType::kF64, {2})));
    out.push_back(b.reduce_precision(x, 8, 7));
    out.push_back(b.unary("chlo.erf", x));
    out.push_back(b.unary("chlo.erf_inv", x));
    out.push_back(b.unary("chlo.lgamma", x));
    out.push_back(b.unary("chlo.digamma", x));
    out.push_back(b.unary("chlo.is_inf", x));
    out.push_back(b.binary("chlo.next_after", x, y));
    std::vector<Value> barrier = b.optimization_barrier({x, i});
    out.push_back(barrier[0]);
    out.push_back(barrier[1]);
    modules.push_back({"elementwise", b.build(out)});
  }

  {  // Constants: exact float bit patterns, ints, bools, complex, raw bytes.
    Builder b("constants");
    std::vector<Value> out;
    out.push_back(b.constant_splat(1.0, f32({})));
    out.push_back(b.constant_splat(INFINITY, f32({2})));
    out.push_back(b.constant_splat(-NAN, f32({})));
    out.push_back(b.constant_splat(1.0, TensorType(ElementType::kBF16, {})));
    out.push_back(b.constant_splat(1.0, TensorType(ElementType::kF16, {3})));
    out.push_back(b.constant_splat(65520.0, TensorType(ElementType::kF16, {})));
    out.push_back(b.constant_splat(1e-7, TensorType(ElementType::kF16, {})));
    out.push_back(b.constant_splat(0.1, TensorType(ElementType::kF64, {})));
    out.push_back(b.constant_splat_int(-5, TensorType(ElementType::kS64, {})));
    out.push_back(b.constant_splat_int(255, TensorType(ElementType::kU8, {})));
    out.push_back(b.constant_splat_uint(std::numeric_limits<uint64_t>::max(),
                                        TensorType(ElementType::kU64, {})));
    out.push_back(b.constant_splat(3.0, s32({2})));
    out.push_back(b.constant_splat_int(1, TensorType(ElementType::kPred, {})));
    out.push_back(b.constant_splat_int(7, f32({})));
    out.push_back(b.constant_splat_complex(1.0, 2.0,
                                           TensorType(ElementType::kC64, {2})));
    out.push_back(b.constant_splat_complex(
        1.0, -2.0, TensorType(ElementType::kC128, {})));
    float two[] = {1.0f, 2.0f};
    out.push_back(b.constant_bytes(two, sizeof(two), f32({2})));
    uint8_t bools[] = {1, 0, 0, 1, 1, 0};
    out.push_back(b.constant_bytes(bools, sizeof(bools),
                                   TensorType(ElementType::kPred, {2, 3})));
    uint8_t one_bool[] = {1};
    out.push_back(b.constant_bytes(one_bool, 1,
                                   TensorType(ElementType::kPred, {})));
    out.push_back(b.constant_bytes(nullptr, 0, f32({0, 3})));
    out.push_back(b.constant_splat(2.0, f32({0})));
    int64_t longs[] = {1, -1, 3};
    out.push_back(
        b.constant_bytes(longs, sizeof(longs), TensorType(ElementType::kS64, {3})));
    float cplx[] = {1.0f, 2.0f, 3.0f, 4.0f};
    out.push_back(b.constant_bytes(cplx, sizeof(cplx),
                                   TensorType(ElementType::kC64, {2})));
    modules.push_back({"constants", b.build(out)});
  }

  {  // Shape ops.
    Builder b("shape");
    Value x = b.parameter(f32({2, 3}));
    Value row = b.parameter(f32({3}));
    Value start = b.parameter(s32({}));
    std::vector<Value> out;
    out.push_back(b.broadcast_in_dim(row, {2, 3}, {1}));
    out.push_back(b.broadcast_in_dim(b.reshape(row, {1, 3}), {4, 2, 3}, {0, 2}));
    out.push_back(b.reshape(x, {3, 2}));
    out.push_back(b.reshape(x, {6}));
    out.push_back(b.transpose(x, {1, 0}));
    out.push_back(b.slice(x, {0, 1}, {2, 3}, {1, 2}));
    out.push_back(b.dynamic_slice(x, {start, start}, {1, 2}));
    out.push_back(
        b.dynamic_update_slice(x, b.reshape(row, {1, 3}), {start, start}));
    out.push_back(b.concatenate({x, x, b.reshape(row, {1, 3})}, 0));
    Value zero = b.constant_splat(0.0, f32({}));
    out.push_back(b.pad(x, zero, {1, -1}, {0, 2}, {1, 0}));
    out.push_back(b.iota(TensorType(ElementType::kS64, {0, 3}), 1));
    out.push_back(b.reshape(b.constant_splat(1.0, f32({})), {1, 1}));
    modules.push_back({"shape", b.build(out)});
  }

  {  // Indexing: embedding-style gather, index_add-style scatter, batching.
    Builder b("indexing");
    Value table = b.parameter(f32({5, 3}));
    Value ids = b.parameter(s32({4, 1}));
    Value updates = b.parameter(f32({4, 3}));
    GatherDims g;
    g.offset_dims = {1};
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    Value rows = b.gather(table, ids, g, {1, 3});
    ScatterDims s;
    s.update_window_dims = {1};
    s.inserted_window_dims = {0};
    s.scatter_dims_to_operand_dims = {0};
    s.index_vector_dim = 1;
    Value added = b.scatter({table}, ids, {updates}, s, add_body())[0];
    // Batched gather: operand [2, 5], per-batch indices [2, 4] (implicit
    // index vector), picking scalars.
    Value batched = b.parameter(f32({2, 5}));
    Value batch_ids = b.parameter(s32({2, 4}));
    GatherDims bg;
    bg.operand_batching_dims = {0};
    bg.start_indices_batching_dims = {0};
    bg.collapsed_slice_dims = {1};
    bg.start_index_map = {1};
    bg.index_vector_dim = 2;
    Value picked = b.gather(batched, batch_ids, bg, {1, 1}, true);
    // Scalar gather: no offset dims at all.
    GatherDims sg;
    sg.collapsed_slice_dims = {0, 1};
    sg.start_index_map = {0, 1};
    sg.index_vector_dim = 1;
    Value pairs = b.parameter(s32({3, 2}));
    Value scalars = b.gather(table, pairs, sg, {1, 1});
    modules.push_back({"indexing", b.build({rows, added, picked, scalars})});
  }

  {  // Linear algebra.
    Builder b("linalg");
    Value a = b.parameter(f32({2, 3, 4}));
    Value m = b.parameter(f32({2, 4, 5}));
    DotDims bmm;
    bmm.lhs_batch_dims = {0};
    bmm.rhs_batch_dims = {0};
    bmm.lhs_contracting_dims = {2};
    bmm.rhs_contracting_dims = {1};
    Value prod = b.dot_general(a, m, bmm, Precision::kHighest);
    Value v = b.parameter(f32({3}));
    Value outer = b.dot_general(v, v, DotDims{});
    Value img = b.parameter(f32({1, 4, 8, 8}));
    Value kernel = b.parameter(f32({6, 2, 3, 3}));
    ConvOptions conv;
    conv.dims = ConvDims::channels_first(2);
    conv.window_strides = {2, 1};
    conv.padding = {{1, 1}, {1, 1}};
    conv.rhs_dilation = {1, 2};
    conv.feature_group_count = 2;
    Value y = b.convolution(img, kernel, conv);
    Value nhwc = b.parameter(f32({1, 8, 8, 4}));
    Value hwio = b.parameter(f32({3, 3, 4, 2}));
    ConvOptions conv2;
    conv2.dims.input_batch_dim = 0;
    conv2.dims.input_spatial_dims = {1, 2};
    conv2.dims.input_feature_dim = 3;
    conv2.dims.kernel_spatial_dims = {0, 1};
    conv2.dims.kernel_input_feature_dim = 2;
    conv2.dims.kernel_output_feature_dim = 3;
    conv2.dims.output_batch_dim = 0;
    conv2.dims.output_feature_dim = 1;
    conv2.dims.output_spatial_dims = {2, 3};
    conv2.lhs_dilation = {2, 2};
    Value y2 = b.convolution(nhwc, hwio, conv2);
    Value sq = b.parameter(f32({2, 3, 3}));
    Value chol = b.cholesky(sq, true);
    Value rhs = b.parameter(f32({2, 3, 5}));
    Value solved = b.triangular_solve(chol, rhs, true, true, false,
                                      Transpose::kTranspose);
    Value signal = b.parameter(f32({4, 8}));
    Value spectrum = b.fft(signal, FftType::kRfft, {8});
    Value back = b.fft(spectrum, FftType::kIrfft, {8});
    Value full = b.fft(b.complex(signal, signal), FftType::kFft, {4, 8});
    modules.push_back({"linalg", b.build({prod, outer, y, y2, chol, solved,
                                          spectrum, back, full})});
  }

  {  // reduce_window (max pool) and control flow.
    Builder b("windows_control");
    Value x = b.parameter(f32({1, 1, 4, 4}));
    Value neg_inf = b.constant_splat(-INFINITY, f32({}));
    Value pooled = b.reduce_window({x}, {neg_inf}, {1, 1, 3, 3}, {1, 1, 2, 2},
                                   {}, {}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}},
                                   max_body())[0];
    Value n = b.parameter(s32({}));
    Value zero = b.constant_splat_int(0, s32({}));
    std::vector<Value> loop = b.while_loop(
        {zero, x},
        [&](Builder& r, const std::vector<Value>& a) {
          return std::vector<Value>{r.compare(a[0], n, "LT")};  // captures n
        },
        [](Builder& r, const std::vector<Value>& a) {
          Value one = r.constant_splat_int(1, s32({}));
          return std::vector<Value>{r.add(a[0], one), r.add(a[1], a[1])};
        });
    std::vector<Value> branch = b.case_(
        n,
        {[&](Builder&, const std::vector<Value>&) {
           return std::vector<Value>{x};
         },
         [&](Builder& r, const std::vector<Value>&) {
           return std::vector<Value>{r.negate(x)};
         }},
        {x.type()});
    modules.push_back(
        {"windows_control", b.build({pooled, loop[0], loop[1], branch[0]})});
  }

  {  // Random bits.
    Builder b("random");
    Value state = b.parameter(TensorType(ElementType::kU64, {2}));
    auto [s1, bits] = b.rng_bit_generator(
        state, TensorType(ElementType::kU32, {2, 3}), RngAlgorithm::kThreeFry);
    auto [s2, bits2] = b.rng_bit_generator(
        s1, TensorType(ElementType::kU64, {5}), RngAlgorithm::kPhilox);
    auto [s3, bits3] = b.rng_bit_generator(
        s2, TensorType(ElementType::kU8, {7}), RngAlgorithm::kDefault);
    modules.push_back({"random", b.build({s3, bits, bits2, bits3})});
  }

  {  // Collectives over 2 replicas.
    Builder b("collectives");
    b.set_num_replicas(2);
    Value x = b.parameter(f32({4, 6}));
    ReplicaGroups groups = {{0, 1}};
    Value sum = b.all_reduce(x, groups, add_body());
    Value gathered = b.all_gather(x, 0, groups);
    Value scattered = b.reduce_scatter(x, 1, groups, add_body());
    Value swapped = b.all_to_all(x, 0, 1, 2, groups);
    Value permuted = b.collective_permute(x, {{0, 1}, {1, 0}});
    modules.push_back({"collectives", b.build({sum, gathered, scattered,
                                               swapped, permuted})});
  }

  {  // Edge cases: 0-dim and zero-size tensors, empty lists, nested regions.
    Builder b("edges");
    b.set_num_replicas(2);
    Value s = b.parameter(f32({}));
    Value empty = b.parameter(f32({0, 3}));
    Value x = b.parameter(f32({2, 3}));
    std::vector<Value> out;
    out.push_back(b.add(s, s));
    out.push_back(b.broadcast_in_dim(s, {2, 2}, {}));
    out.push_back(b.reduce({x}, {s}, {0, 1}, add_body())[0]);
    out.push_back(b.reduce({x}, {s}, {}, add_body())[0]);
    out.push_back(b.reduce({empty}, {s}, {0}, add_body())[0]);
    out.push_back(b.reduce_window({s}, {s}, {}, {}, {}, {}, {}, max_body())[0]);
    out.push_back(b.concatenate({empty, x}, 0));
    out.push_back(b.pad(x, s, {-1, -1}, {0, -2}, {0, 0}));
    out.push_back(b.convert(b.compare(x, x, "EQ"), ElementType::kF32));
    out.push_back(b.convert(x, ElementType::kPred));
    out.push_back(b.iota(f32({4}), 0));
    out.push_back(b.constant_splat(-0.0, TensorType(ElementType::kF16, {})));
    out.push_back(b.constant_splat(NAN, TensorType(ElementType::kBF16, {})));
    out.push_back(b.constant_splat(-INFINITY, TensorType(ElementType::kF64, {})));
    out.push_back(b.constant_splat(1.8e19, TensorType(ElementType::kU64, {})));
    out.push_back(b.constant_splat_int(-128, TensorType(ElementType::kS8, {})));
    Value i64_start = b.constant_splat_int(1, TensorType(ElementType::kS64, {}));
    out.push_back(b.dynamic_slice(x, {i64_start, i64_start}, {1, 1}));
    // Implicit index vector (index_vector_dim == rank of indices).
    GatherDims g;
    g.offset_dims = {1};
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    Value ids = b.iota(s32({2}), 0);
    out.push_back(b.gather(x, ids, g, {1, 3}));
    // Two-operand scatter with batching dims: operand [2, 5] x 2, per-batch
    // indices [2, 4], updates [2, 4].
    Value ops = b.constant_splat(0.0, f32({2, 5}));
    Value batch_ids = b.constant_splat_int(1, s32({2, 4}));
    Value ups = b.constant_splat(1.0, f32({2, 4}));
    ScatterDims sd;
    sd.inserted_window_dims = {1};
    sd.input_batching_dims = {0};
    sd.scatter_indices_batching_dims = {0};
    sd.scatter_dims_to_operand_dims = {1};
    sd.index_vector_dim = 2;
    std::vector<Value> sc = b.scatter(
        {ops, ops}, batch_ids, {ups, ups}, sd,
        [](Builder& r, const std::vector<Value>& a) {
          return std::vector<Value>{r.add(a[0], a[2]), r.maximum(a[1], a[3])};
        },
        false, true);
    out.push_back(sc[0]);
    out.push_back(sc[1]);
    // Nested regions: a sort inside a case branch inside a while body.
    Value n = b.constant_splat_int(3, s32({}));
    std::vector<Value> loop = b.while_loop(
        {n, x},
        [](Builder& r, const std::vector<Value>& a) {
          return std::vector<Value>{
              r.compare(a[0], r.constant_splat_int(0, s32({})), "GT")};
        },
        [](Builder& r, const std::vector<Value>& a) {
          Value branch_index = r.constant_splat_int(0, s32({}));
          Value sorted = r.case_(branch_index,
                                 {[&](Builder& c, const std::vector<Value>&) {
                                   return c.sort({a[1]}, 1, false,
                                                 [](Builder& cc,
                                                    const std::vector<Value>& p) {
                                                   return std::vector<Value>{
                                                       cc.compare(p[0], p[1], "GT")};
                                                 });
                                 }},
                                 {a[1].type()})[0];
          Value one = r.constant_splat_int(1, s32({}));
          return std::vector<Value>{r.subtract(a[0], one), sorted};
        });
    out.push_back(loop[1]);
    b.case_(b.constant_splat_int(0, s32({})),
            {[](Builder&, const std::vector<Value>&) {
              return std::vector<Value>{};
            }},
            {});
    b.while_loop({},
                 [](Builder& r, const std::vector<Value>&) {
                   return std::vector<Value>{r.constant_splat_int(
                       0, TensorType(ElementType::kPred, {}))};
                 },
                 [](Builder&, const std::vector<Value>&) {
                   return std::vector<Value>{};
                 });
    out.push_back(b.dot_general(x, x, [] {
      DotDims d;
      d.lhs_contracting_dims = {0, 1};
      d.rhs_contracting_dims = {0, 1};
      return d;
    }()));
    out.push_back(b.top_k(x, 0).first);
    out.push_back(b.all_reduce(x, {}, add_body()));
    out.push_back(b.all_reduce(x, {{0, 1}}, add_body(), 1, true));
    out.push_back(b.all_gather(x, 1, {{0, 1}}, 2, true));
    out.push_back(b.all_to_all(x, 1, 1, 1, {{0}, {1}}, 3));
    out.push_back(b.collective_permute(x, {}));
    out.push_back(b.collective_permute(x, {{0, 1}}, 4));
    modules.push_back({"edges", b.build(out)});
  }

  {  // No parameters, no results.
    Builder b("empty module name!");
    modules.push_back({"nothing", b.build({})});
  }

  {  // Generic emit with a region, and an op with no results.
    Builder b("generic");
    Value x = b.parameter(f32({3}));
    std::vector<Value> r = b.emit(
        "stablehlo.reduce", {x, b.constant_splat(0.0, f32({}))}, {f32({})},
        "dimensions = array<i64: 0>",
        {Region{{f32({}), f32({})}, add_body()}});
    modules.push_back({"generic", b.build({r[0]})});
  }

  return modules;
}

// Exact spellings the brief (and StableHLO's parser) require.
void check_spellings(const std::vector<Module>& modules) {
  auto text_of = [&](const std::string& name) -> const std::string& {
    for (const Module& m : modules) {
      if (m.name == name) return m.text;
    }
    static const std::string empty;
    return empty;
  };
  const std::string& add = text_of("add");
  expect(add ==
             "module @jit_add attributes {mhlo.num_partitions = 1 : i32, "
             "mhlo.num_replicas = 1 : i32} {\n"
             "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: "
             "tensor<2x3xf32>) -> (tensor<2x3xf32>) {\n"
             "    %2 = \"stablehlo.add\"(%arg0, %arg1) : (tensor<2x3xf32>, "
             "tensor<2x3xf32>) -> tensor<2x3xf32>\n"
             "    \"func.return\"(%2) : (tensor<2x3xf32>) -> ()\n"
             "  }\n"
             "}\n",
         "add module text");
  const std::string& c = text_of("constants");
  expect_contains(c, "dense<0x3F800000> : tensor<f32>");
  expect_contains(c, "dense<0x7F800000> : tensor<2xf32>");
  expect_contains(c, "dense<0xFFC00000> : tensor<f32>");
  expect_contains(c, "dense<0x3F80> : tensor<bf16>");
  expect_contains(c, "dense<0x3C00> : tensor<3xf16>");
  expect_contains(c, "dense<0x7C00> : tensor<f16>");  // 65520 rounds to inf
  expect_contains(c, "dense<0x0002> : tensor<f16>");  // subnormal 1e-7
  expect_contains(c, "dense<0x3FB999999999999A> : tensor<f64>");
  expect_contains(c, "dense<-5> : tensor<i64>");
  expect_contains(c, "dense<255> : tensor<ui8>");
  expect_contains(c, "dense<18446744073709551615> : tensor<ui64>");
  expect_contains(c, "dense<3> : tensor<2xi32>");
  expect_contains(c, "dense<true> : tensor<i1>");
  expect_contains(c, "dense<0x40E00000> : tensor<f32>");
  expect_contains(c, "dense<\"0x0000803F00000040\"> : tensor<2xcomplex<f32>>");
  expect_contains(c, "dense<\"0x0000803F00000040\"> : tensor<2xf32>");
  expect_contains(c, "dense<[[true, false, false], [true, true, false]]> : "
                     "tensor<2x3xi1>");
  expect_contains(c, "dense<> : tensor<0x3xf32>");
  const std::string& r = text_of("reduce_sort");
  expect_contains(r, "%7:2 = \"stablehlo.sort\"");
  expect_contains(r, "^bb0(%8: tensor<f32>, %9: tensor<f32>, %10: tensor<i32>, "
                     "%11: tensor<i32>):");
  expect_contains(r, "{dimension = 1 : i64, is_stable = true}");
  expect_contains(r, "\"func.return\"(%2, %7#0, %7#1");
  const std::string& l = text_of("linalg");
  expect_contains(l, "#stablehlo.dot<lhs_batching_dimensions = [0], "
                     "rhs_batching_dimensions = [0], "
                     "lhs_contracting_dimensions = [2], "
                     "rhs_contracting_dimensions = [1]>, precision_config = "
                     "[#stablehlo<precision HIGHEST>, #stablehlo<precision "
                     "HIGHEST>]");
  expect_contains(l, "dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, "
                     "0, 1]->[b, f, 0, 1]>");
  expect_contains(l, "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, f, 0, 1]>");
  expect_contains(l, "-> tensor<1x6x4x6xf32>");   // strided, dilated, grouped
  expect_contains(l, "-> tensor<1x2x13x13xf32>");  // lhs-dilated NHWC
  expect_contains(l, "padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>");
  const std::string& g = text_of("indexing");
  expect_contains(g, "#stablehlo.gather<offset_dims = [1], "
                     "collapsed_slice_dims = [0], start_index_map = [0], "
                     "index_vector_dim = 1>, indices_are_sorted = false, "
                     "slice_sizes = array<i64: 1, 3>");
  expect_contains(g, "operand_batching_dims = [0], "
                     "start_indices_batching_dims = [0]");
  expect_contains(g, "-> tensor<2x4xf32>");
  expect_contains(g, "{indices_are_sorted = false, scatter_dimension_numbers "
                     "= #stablehlo.scatter<update_window_dims = [1], "
                     "inserted_window_dims = [0], "
                     "scatter_dims_to_operand_dims = [0], index_vector_dim = "
                     "1>, unique_indices = false}");
  const std::string& col = text_of("collectives");
  expect_contains(col, "mhlo.num_replicas = 2 : i32");
  expect_contains(col, "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>");
  expect_contains(col, "source_target_pairs = dense<[[0, 1], [1, 0]]> : "
                       "tensor<2x2xi64>");
  expect_contains(text_of("windows_control"), "-> tensor<1x1x2x2xf32>");
  expect_contains(text_of("shape"),
                  "{edge_padding_high = "
                  "array<i64: 0, 2>, edge_padding_low = array<i64: 1, -1>, "
                  "interior_padding = array<i64: 1, 0>} : (tensor<2x3xf32>, "
                  "tensor<f32>) -> tensor<4x4xf32>");
}

// A module lowered alone for a fused graph (Builder::CallerValues): where a
// partial write's form depends on the caller, and how the caller decides.
void check_caller_values() {
  // x[start:start+3] = u + 1, with x and u parameters.
  auto write = [](Builder::CallerValues values, std::vector<Builder::CallerDependency>* deps,
                  Builder::ParameterFlow* flow) {
    Builder b("write");
    b.set_caller_values(values);
    Value x = b.parameter(f32({6}));
    Value u = b.parameter(f32({3}));
    Value start = b.parameter(s32({}));
    Value out = b.dynamic_update_slice(x, b.add(u, b.constant_splat(1.0, f32({3}))), {start});
    if (deps) *deps = b.caller_dependencies();
    if (flow) *flow = b.parameter_flow({out});
    return b.build({out});
  };
  std::vector<Builder::CallerDependency> deps;
  Builder::ParameterFlow flow;
  const std::string own = write(Builder::CallerValues::kOwnBuffers, &deps, nullptr);
  expect(own.find("stablehlo.select") == std::string::npos && deps.empty(), "own buffers: plain write, no dependency");
  const std::string plain = write(Builder::CallerValues::kUnknown, &deps, &flow);
  expect(plain.find("stablehlo.select") == std::string::npos, "unknown caller: plain write");
  expect(deps.size() == 1 && deps[0].operand_parameters == std::vector<int>{0} &&
             deps[0].update_parameters == std::vector<int>{1},
         "unknown caller: the write depends on parameters 0 (operand) and 1 (update)");
  expect(flow.reads == std::vector<int>({0, 1, 2}) && flow.same_buffer == std::vector<int>{0},
         "the write reads parameters 0, 1, 2 and may reuse 0's buffer");
  const std::string guarded = write(Builder::CallerValues::kMayShare, &deps, nullptr);
  expect_contains(guarded, "stablehlo.select");

  // A caller computing the update from the operand's buffer needs the
  // guarded form; one computing it from a dot's result does not.
  ImportedFunction callee = import_module(plain, "write_");
  Builder c("caller");
  Value buffer = c.parameter(f32({6}));
  Value start = c.parameter(s32({}));
  Value w = c.parameter(f32({3, 3}));
  Value from_buffer = c.multiply(c.slice(buffer, {0}, {3}, {1}), c.constant_splat(2.0, f32({3})));
  DotDims dims;
  dims.lhs_contracting_dims = {1};
  dims.rhs_contracting_dims = {0};
  Value from_dot = c.dot_general(w, c.reshape(c.slice(buffer, {0}, {3}, {1}), {3}), dims);
  expect(c.may_read_buffer(from_buffer, buffer), "an update sliced from the buffer reads it");
  expect(!c.may_read_buffer(from_dot, buffer), "a dot's result reads no buffer of its own operands");
  // Through a call: the call's result may reuse `buffer` (its parameter 0),
  // and reads its parameter 1.
  Value written = c.call_function(callee, {buffer, from_dot, start}, flow)[0];
  expect(c.may_read_buffer(c.negate(written), buffer), "a call's result reads the parameters its flow names");
  Value other = c.parameter(f32({6}));
  expect(c.may_read_buffer(c.slice(other, {0}, {3}, {1}), written) == false,
         "another parameter reads no buffer of the call's result");
  expect(c.may_read_buffer(c.slice(buffer, {0}, {3}, {1}), written),
         "the call's result may be its operand's buffer (in place)");
}

// ParameterFlow::chains: the runs of cheap ops reaching each result.
void check_fusion_chains() {
  Builder b("chains");
  Value x = b.parameter(f32({4}));
  Value y = b.parameter(f32({4}));
  Value w = b.parameter(f32({4, 4}));
  // x: three cheap ops; y: one, then the add.
  Value cheap = b.add(b.multiply(b.negate(x), b.constant_splat(2.0, f32({4}))), b.negate(y));
  // exp is computed once: the run after it starts there.
  Value after_exp = b.add(b.exponential(cheap), y);
  DotDims dims;
  dims.lhs_contracting_dims = {1};
  dims.rhs_contracting_dims = {0};
  Value after_dot = b.negate(b.dot_general(w, x, dims));
  Builder::ParameterFlow flow = b.parameter_flow({cheap, after_exp, after_dot, x});
  expect(flow.chains.size() == 4, "a chain per result");
  using Runs = std::vector<std::pair<int, int>>;
  expect(flow.chains[0].parameters == Runs({{0, 3}, {1, 2}}) && flow.chains[0].inside == 2,
         "cheap ops: x 3 long, y 2, the constant's 2");
  expect(flow.chains[1].parameters == Runs({{1, 1}}) && flow.chains[1].inside == 1,
         "after exp: only y's run and exp's own");
  expect(flow.chains[2].parameters.empty() && flow.chains[2].inside == 1, "after a dot: the dot's run only");
  expect(flow.chains[3].parameters == Runs({{0, 0}}) && flow.chains[3].inside == -1,
         "a parameter returned as it is: a run of 0");
}

void check_errors() {
  Builder b("errors");
  Value x = b.parameter(f32({2, 3}));
  Value y = b.parameter(f32({3}));
  Value i = b.parameter(s32({2, 3}));
  expect_error([&] { b.add(x, y); },
               "stablehlo.add: operand shapes differ: tensor<2x3xf32> vs "
               "tensor<3xf32>");
  expect_error([&] { b.add(x, i); }, "operand element types differ");
  expect_error([&] { b.sqrt(i); }, "stablehlo.sqrt: operand element type i32");
  expect_error([&] { b.reshape(x, {4}); }, "element counts differ");
  expect_error([&] { b.transpose(x, {0, 0}); }, "repeats dimension 0");
  expect_error([&] { b.slice(x, {0, 0}, {3, 3}, {1, 1}); }, "out of bounds");
  expect_error([&] { b.broadcast_in_dim(y, {3, 2}, {1}); }, "cannot broadcast");
  expect_error([&] { b.compare(x, x, "LTE"); }, "unknown comparison direction");
  expect_error([&] { b.constant_splat_int(256, TensorType(ElementType::kU8, {})); },
               "does not fit");
  expect_error([&] { b.constant_splat(0.5, s32({})); }, "non-integral");
  expect_error([&] { b.constant_bytes("ab", 2, f32({1})); }, "2 bytes given");
  expect_error([&] { b.parameter(f32({-1})); }, "negative dimension");
  expect_error([&] { b.concatenate({x, y}, 0); }, "differ outside dimension");
  expect_error([&] { b.reduce({x}, {x}, {0}, add_body()); },
               "init value 0 must be tensor<f32>");
  expect_error(
      [&] {
        b.reduce({x}, {b.constant_splat(0.0, f32({}))}, {0},
                 [](Builder& r, const std::vector<Value>& a) {
                   return std::vector<Value>{r.compare(a[0], a[1], "LT")};
                 });
      },
      "body must return (tensor<f32>), got (tensor<i1>)");
  expect_error([&] { b.unary("stablehlo.\"bad", x); }, "invalid op name");
  expect_error([&] { b.add(Value(), x); }, "empty Value");
  {
    Builder other;
    Value foreign = other.parameter(f32({2, 3}));
    expect_error([&] { b.add(x, foreign); }, "another Builder");
  }
  // A value made inside a region cannot escape it.
  Value leaked;
  b.reduce({x}, {b.constant_splat(0.0, f32({}))}, {0},
           [&](Builder& r, const std::vector<Value>& a) {
             leaked = r.add(a[0], a[1]);
             return std::vector<Value>{leaked};
           });
  expect_error([&] { b.negate(leaked); }, "outside the region");
  // A throwing region body leaves the builder usable.
  expect_error(
      [&] {
        b.reduce({x}, {b.constant_splat(0.0, f32({}))}, {0},
                 [](Builder& r, const std::vector<Value>& a) {
                   r.add(a[0], r.constant_splat_int(1, s32({})));
                   return std::vector<Value>{};
                 });
      },
      "operand element types differ");
  expect_error([&] { b.all_gather(x, 0, {{0, 1}, {2}}); }, "of one size");
  expect_error([&] { b.reduce_scatter(x, 1, {{0, 1}}, add_body()); },
               "does not divide");
  expect_error(
      [&] {
        DotDims d;
        d.lhs_contracting_dims = {0};
        d.rhs_contracting_dims = {1};
        b.dot_general(x, x, d);
      },
      "contracting dimension sizes differ");
  std::string text = b.build({b.negate(x)});
  expect_contains(text, "\"stablehlo.negate\"(%arg0)");
  expect_error([&] { b.negate(x); }, "already built");
  expect_error([&] { b.build({}); }, "already built");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Module> modules;
  try {
    modules = build_modules();
  } catch (const std::exception& e) {
    std::cerr << "FAIL: building modules threw: " << e.what() << "\n";
    return 1;
  }
  for (const Module& m : modules) {
    std::cout << "// ---- " << m.name << "\n" << m.text;
    if (argc > 1) {
      std::ofstream(std::string(argv[1]) + "/" + m.name + ".mlir") << m.text;
    }
  }
  check_spellings(modules);
  check_errors();
  check_caller_values();
  check_fusion_chains();
  std::cout << passes << " passed, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
