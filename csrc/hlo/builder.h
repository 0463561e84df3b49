// Builds one StableHLO module as MLIR text for PJRT_Client_Compile ("mlir").
//
// The module and its @main function use MLIR's custom syntax; every op inside
// uses the generic op form ("stablehlo.add"(%a, %b) : (...) -> ...), which
// old and new plugins parse alike. Each method validates its inputs and
// throws HloError naming the op and the problem, so a bad lowering fails here
// with a clear message instead of as a compiler error (or a crash) later.
//
// Usage:
//   Builder b("jit_add");
//   Value x = b.parameter({ElementType::kF32, {2, 3}});
//   Value y = b.parameter({ElementType::kF32, {2, 3}});
//   std::string text = b.build({b.add(x, y)});
//
// Ops with regions take RegionFn callbacks that emit the region's ops through
// the same Builder and return the values the region yields.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hlo/module_import.h"
#include "hlo/op_options.h"
#include "hlo/types.h"
#include "hlo/value.h"

namespace torch_tpu::hlo {

// Emits the ops of one region's single block. block_args are the block's
// arguments; the returned values become its "stablehlo.return" operands.
using RegionFn = std::function<std::vector<Value>(
    Builder&, const std::vector<Value>& block_args)>;

// A region for the generic emit(): its block argument types and body.
struct Region {
  std::vector<TensorType> arg_types;
  RegionFn body;
};

class Builder {
 public:
  explicit Builder(std::string module_name = "main");
  // Values point back at their Builder by serial number; copying a builder
  // would let two modules share them.
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // ---- Module ------------------------------------------------------------
  void set_num_replicas(int64_t n);
  void set_num_partitions(int64_t n);
  // The next argument of @main (%arg0, %arg1, ...).
  Value parameter(const TensorType& type);
  const std::vector<TensorType>& parameter_types() const {
    return parameter_types_;
  }
  // Lets the compiler reuse parameter `parameter`'s buffer for result
  // `result` of @main (tf.aliasing_output): the caller donates that input
  // when it launches the program. Checked against the result types at
  // build().
  void alias_parameter(int64_t parameter, int64_t result);
  // @main returns `results`; returns the whole module text. A builder builds
  // once: every later call throws.
  std::string build(const std::vector<Value>& results);

  // ---- Generic escape hatch ------------------------------------------------
  // Any op by name with explicit result types. `attributes` is the text of
  // the attribute dictionary without braces (may be empty). Region bodies
  // end in "stablehlo.return".
  std::vector<Value> emit(std::string_view op_name,
                          const std::vector<Value>& operands,
                          const std::vector<TensorType>& result_types,
                          std::string_view attributes = {},
                          const std::vector<Region>& regions = {});
  // Calls an imported module's entry function (a custom kernel) with
  // operands of its parameter types; the module's functions are added to
  // this module once, however often they are called.
  std::vector<Value> call_function(const ImportedFunction& function,
                                   const std::vector<Value>& operands);

  // ---- Modules that a fused graph calls ------------------------------------
  // Fused eager lowers each op once into a module of its own and calls it
  // from every graph that records the op; XLA inlines the calls, so the
  // caller's values reach the op's parameters inside the same fusions.
  // Whether a parameter is a buffer of its own matters to one decision:
  // dynamic_update_slice takes its guarded form when the update may read
  // the operand's buffer (see there).
  enum class CallerValues : uint8_t {
    kOwnBuffers,  // a program of its own: every parameter is its own buffer
    kUnknown,     // decide as for own buffers and record what was assumed
    kMayShare,    // an update that reads any parameter may read the operand
  };
  void set_caller_values(CallerValues values) { caller_values_ = values; }
  // Under kUnknown: each dynamic_update_slice whose form depends on the
  // caller, as the parameters its operand may be the buffer of and the
  // parameters its update reads. The form is safe unless the caller's
  // value of one of the latter reads the buffer of one of the former.
  struct CallerDependency {
    std::vector<int> operand_parameters;
    std::vector<int> update_parameters;
  };
  const std::vector<CallerDependency>& caller_dependencies() const { return caller_dependencies_; }
  // How a module's results depend on its parameters, for the caller's own
  // decisions: which parameters they read within XLA's fusions, and which
  // parameters' buffers they may reuse (in-place chains).
  //
  // `chains` has one entry per result: the longest run of cheap elementwise
  // ops (ops XLA's fusion copies into every consumer instead of computing
  // them once) that ends at the result, counted from each parameter it
  // starts at and from values computed inside (fusion_chains.cc). A caller
  // adds its own runs to these to see how deep a chain grows across calls.
  struct ResultChain {
    int inside = -1;                              // from a value computed here (-1: none)
    std::vector<std::pair<int, int>> parameters;  // (parameter, length), by parameter
  };
  // `kernels` has one entry per result: the kernel XLA may fuse around
  // it, as the ops of this module inside it and the parameters whose own
  // kernels it may take in (fusion_chains.cc). A caller adds the sizes
  // of what it binds to those parameters to see how large one kernel
  // grows across calls.
  struct ResultKernel {
    int ops = 0;
    std::vector<int> parameters;
    bool ends = false;            // consumers read the result's buffer: none fuse the kernel
  };
  struct ParameterFlow {
    std::vector<int> reads;
    std::vector<int> same_buffer;
    std::vector<ResultChain> chains;
    std::vector<ResultKernel> kernels;
  };
  ParameterFlow parameter_flow(const std::vector<Value>& results) const;
  // call_function with the callee's ParameterFlow (its results' union),
  // which a later may_read_buffer follows through the call.
  std::vector<Value> call_function(const ImportedFunction& function, const std::vector<Value>& operands,
                                   const ParameterFlow& flow);
  // Whether computing `update` may read x's buffer inside one of XLA's
  // fusions (what dynamic_update_slice asks; see there).
  bool may_read_buffer(const Value& update, const Value& x) const;
  // Elementwise op by name ("stablehlo.sine", "chlo.erf", ...). The result
  // has x's type, except: is_finite / chlo.is_inf / chlo.is_pos_inf /
  // chlo.is_neg_inf give i1; real / imag / abs of complex give the real type.
  Value unary(std::string_view op_name, const Value& x);
  // Elementwise op by name on two operands of the same type (no implicit
  // broadcasting: use broadcast_in_dim first). The result has a's type.
  Value binary(std::string_view op_name, const Value& a, const Value& b);

  // ---- Elementwise binary (operands of equal type) -----------------------
  Value add(const Value& a, const Value& b);
  Value subtract(const Value& a, const Value& b);
  Value multiply(const Value& a, const Value& b);
  Value divide(const Value& a, const Value& b);
  Value remainder(const Value& a, const Value& b);
  Value maximum(const Value& a, const Value& b);
  Value minimum(const Value& a, const Value& b);
  // maximum / minimum as the combining step of a reduction (reduce,
  // reduce_window): the same values, NaN propagating from either operand,
  // written for floats as select(a > b or a != a, a, b). XLA's CPU compiler
  // emits a reduce of stablehlo.maximum as one serial chain of scalar
  // llvm.maximum calls per output (a row max of f32[65536, 32]: 5.1 ms) and
  // vectorizes this form (0.26 ms). The sign of a zero tie may differ.
  Value maximum_in_reduction(const Value& a, const Value& b);
  Value minimum_in_reduction(const Value& a, const Value& b);
  Value power(const Value& a, const Value& b);
  Value atan2(const Value& a, const Value& b);
  // Logical on i1, bitwise on integers. (Trailing _ : `and` is a C++ token.)
  Value and_(const Value& a, const Value& b);
  Value or_(const Value& a, const Value& b);
  Value xor_(const Value& a, const Value& b);
  Value shift_left(const Value& a, const Value& b);
  Value shift_right_arithmetic(const Value& a, const Value& b);
  Value shift_right_logical(const Value& a, const Value& b);
  // Two real tensors (f32 or f64) to one complex tensor.
  Value complex(const Value& real, const Value& imag);

  // ---- Elementwise unary ---------------------------------------------------
  Value abs(const Value& x);
  Value negate(const Value& x);
  Value exponential(const Value& x);
  Value exponential_minus_one(const Value& x);
  Value log(const Value& x);
  Value log_plus_one(const Value& x);
  Value sqrt(const Value& x);
  Value rsqrt(const Value& x);
  Value cbrt(const Value& x);
  Value tanh(const Value& x);
  Value logistic(const Value& x);
  Value sine(const Value& x);
  Value cosine(const Value& x);
  Value tan(const Value& x);
  Value floor(const Value& x);
  Value ceil(const Value& x);
  Value round_nearest_afz(const Value& x);
  Value round_nearest_even(const Value& x);
  Value sign(const Value& x);
  Value not_(const Value& x);
  Value is_finite(const Value& x);
  Value popcnt(const Value& x);
  Value count_leading_zeros(const Value& x);
  Value real(const Value& x);
  Value imag(const Value& x);

  // ---- Comparison, selection, conversion -----------------------------------
  // compare_type follows the dtype: FLOAT, SIGNED, or UNSIGNED (also for i1).
  Value compare(const Value& a, const Value& b, ComparisonDirection direction);
  // direction: "EQ", "NE", "LT", "LE", "GT", "GE".
  Value compare(const Value& a, const Value& b, std::string_view direction);
  // pred is tensor<i1>, either 0-dim or of on_true's shape.
  Value select(const Value& pred, const Value& on_true, const Value& on_false);
  // min and max are each either 0-dim or of x's shape.
  Value clamp(const Value& min, const Value& x, const Value& max);
  Value convert(const Value& x, ElementType to);
  // Reinterprets bits. Equal bit widths keep the shape; to a narrower type
  // adds a trailing dim of the width ratio; to a wider one drops it.
  Value bitcast_convert(const Value& x, const TensorType& to);
  // Rounds to a float format with the given exponent/mantissa bits, keeping
  // the storage type (used to emulate low precision).
  Value reduce_precision(const Value& x, int32_t exponent_bits,
                         int32_t mantissa_bits);

  // ---- Constants -----------------------------------------------------------
  // Every element equal to v. Floats are printed as exact bit patterns (inf
  // and nan included); integer types need an integral v in range; i1 is
  // v != 0; complex types get (v, 0).
  Value constant_splat(double v, const TensorType& t);
  // Integer (or i1, or float: converted exactly) splat; v must fit t's dtype.
  Value constant_splat_int(int64_t v, const TensorType& t);
  // For ui64 values above INT64_MAX.
  Value constant_splat_uint(uint64_t v, const TensorType& t);
  Value constant_splat_complex(double real, double imag, const TensorType& t);
  // Dense little-endian host bytes, element_size(t.dtype) per element (one
  // byte 0/1 per i1); nbytes must match t exactly.
  Value constant_bytes(const void* data, size_t nbytes, const TensorType& t);
  // Counts 0, 1, 2, ... along dimension `dim` of t.
  Value iota(const TensorType& t, int64_t dim);

  // ---- Shape ops -----------------------------------------------------------
  // broadcast_dims[i] is the output dimension that x's dimension i maps to;
  // x's dim must be 1 or equal to that output dim.
  Value broadcast_in_dim(const Value& x, std::vector<int64_t> out_dims,
                         std::vector<int64_t> broadcast_dims);
  Value reshape(const Value& x, std::vector<int64_t> dims);
  Value transpose(const Value& x, std::vector<int64_t> permutation);
  Value slice(const Value& x, std::vector<int64_t> starts,
              std::vector<int64_t> limits, std::vector<int64_t> strides);
  // starts: one 0-dim integer tensor per dimension, all of one type.
  Value dynamic_slice(const Value& x, const std::vector<Value>& starts,
                      std::vector<int64_t> sizes);
  Value dynamic_update_slice(const Value& x, const Value& update,
                             const std::vector<Value>& starts);
  Value concatenate(const std::vector<Value>& xs, int64_t dim);
  // Edge padding may be negative (crops); interior padding may not.
  Value pad(const Value& x, const Value& pad_value, std::vector<int64_t> lows,
            std::vector<int64_t> highs, std::vector<int64_t> interiors);

  // ---- Indexing ------------------------------------------------------------
  Value gather(const Value& operand, const Value& indices,
               const GatherDims& dims, std::vector<int64_t> slice_sizes,
               bool indices_are_sorted = false);
  // update's block arguments: the N current operand elements, then the N
  // update elements (0-dim tensors); it returns N 0-dim tensors.
  std::vector<Value> scatter(const std::vector<Value>& operands,
                             const Value& indices,
                             const std::vector<Value>& updates,
                             const ScatterDims& dims, const RegionFn& update,
                             bool indices_are_sorted = false,
                             bool unique_indices = false);

  // ---- Reductions and sorting -----------------------------------------------
  // body's block arguments: N accumulators, then N elements (0-dim tensors).
  std::vector<Value> reduce(const std::vector<Value>& inputs,
                            const std::vector<Value>& inits,
                            std::vector<int64_t> dims, const RegionFn& body);
  // Empty strides / dilations mean all 1; empty padding means no padding.
  std::vector<Value> reduce_window(
      const std::vector<Value>& inputs, const std::vector<Value>& inits,
      std::vector<int64_t> window_dims, std::vector<int64_t> strides,
      std::vector<int64_t> base_dilations,
      std::vector<int64_t> window_dilations,
      std::vector<std::pair<int64_t, int64_t>> padding, const RegionFn& body);
  // comparator's block arguments: lhs0, rhs0, lhs1, rhs1, ... (0-dim); it
  // returns one tensor<i1> ("lhs sorts before rhs").
  std::vector<Value> sort(const std::vector<Value>& inputs, int64_t dim,
                          bool is_stable, const RegionFn& comparator);
  // Largest k along the last dimension: (values, i32 indices). chlo.top_k.
  std::pair<Value, Value> top_k(const Value& x, int64_t k);

  // ---- Control flow --------------------------------------------------------
  // cond and body both get the loop-carried values; cond returns one
  // tensor<i1>, body returns the next loop-carried values.
  std::vector<Value> while_loop(const std::vector<Value>& init,
                                const RegionFn& cond, const RegionFn& body);
  // index is tensor<i32>; out-of-range indices run the last branch.
  // Branches take no arguments and return values of result_types.
  std::vector<Value> case_(const Value& index,
                           const std::vector<RegionFn>& branches,
                           const std::vector<TensorType>& result_types);
  // Keeps XLA from moving computation across this point.
  std::vector<Value> optimization_barrier(const std::vector<Value>& xs);

  // ---- Linear algebra ------------------------------------------------------
  Value dot_general(const Value& lhs, const Value& rhs, const DotDims& dims,
                    Precision precision = Precision::kDefault,
                    std::optional<ElementType> result_dtype = std::nullopt);
  Value convolution(const Value& lhs, const Value& rhs,
                    const ConvOptions& options);
  // Batched over leading dims; reads only the `lower` triangle of a.
  Value cholesky(const Value& a, bool lower);
  // Solves op(a) x = b (left_side) or x op(a) = b for x.
  Value triangular_solve(const Value& a, const Value& b, bool left_side,
                         bool lower, bool unit_diagonal, Transpose transpose_a);
  // Over the trailing fft_length.size() dimensions.
  Value fft(const Value& x, FftType type, std::vector<int64_t> fft_length);

  // ---- Random --------------------------------------------------------------
  // state is tensor<2xui64> (THREE_FRY, PHILOX, DEFAULT) or tensor<3xui64>
  // (PHILOX, DEFAULT). Returns (new state, random bits of type `out`).
  std::pair<Value, Value> rng_bit_generator(const Value& state,
                                            const TensorType& out,
                                            RngAlgorithm algorithm);

  // ---- Collectives ---------------------------------------------------------
  // Replica groups: disjoint, non-negative ids, all groups of one size. Only
  // all_reduce accepts no groups at all ("all processes"); the others need
  // the group size for their result shape. A channel id makes the op
  // cross-partition; use_global_device_ids requires one. body: (acc,
  // element) -> acc over 0-dim tensors.
  Value all_reduce(const Value& x, const ReplicaGroups& replica_groups,
                   const RegionFn& body,
                   std::optional<int64_t> channel_id = std::nullopt,
                   bool use_global_device_ids = false);
  Value all_gather(const Value& x, int64_t all_gather_dim,
                   const ReplicaGroups& replica_groups,
                   std::optional<int64_t> channel_id = std::nullopt,
                   bool use_global_device_ids = false);
  Value reduce_scatter(const Value& x, int64_t scatter_dim,
                       const ReplicaGroups& replica_groups,
                       const RegionFn& body,
                       std::optional<int64_t> channel_id = std::nullopt,
                       bool use_global_device_ids = false);
  Value all_to_all(const Value& x, int64_t split_dim, int64_t concat_dim,
                   int64_t split_count, const ReplicaGroups& replica_groups,
                   std::optional<int64_t> channel_id = std::nullopt);
  Value collective_permute(
      const Value& x,
      const std::vector<std::pair<int64_t, int64_t>>& source_target_pairs,
      std::optional<int64_t> channel_id = std::nullopt);

 private:
  // Per SSA id: where it was defined and how it prints.
  // How an op's result relates to its operands' buffers, for
  // update_reads_operand.
  enum class Flow : uint8_t {
    kFusible,      // XLA may compute it inside a consumer's loop fusion
    kFusedOnce,    // the same, but never copied into a second consumer
                   // (transcendental ops, divide, reductions, gathers)
    kMaterialized, // computed apart (dot, convolution, control flow, calls)
    kSameBuffer,   // may reuse operand 0's buffer (reshape, bitcast, DUS, scatter)
    kCall,         // a call with a ParameterFlow (call_flows_)
  };
  struct ValueRecord {
    int scope = 0;           // region instance that defines it (0 = @main)
    int num_results = 0;     // ops with several results print %id#i
    int parameter_index = -1;  // >= 0: a @main argument, printed %argN
    Flow flow = Flow::kFusible;
    bool ends_kernel = false;  // consumers read its buffer (ends_kernel(op name))
    // The defining op's operand ids: operand_ids_[first_operand, + num_operands).
    uint32_t first_operand = 0;
    uint32_t num_operands = 0;
  };
  // A block being filled; regions nest, so these form a stack.
  struct OpenBlock {
    std::string text;
    int scope = 0;
    int indent = 0;
  };

  // The core every op goes through: checks operands, appends one op line to
  // the current block, returns its results. `id` comes from reserve_id().
  std::vector<Value> append_op(int id, std::string_view op_name,
                               const std::vector<Value>& operands,
                               const std::vector<TensorType>& result_types,
                               std::string_view attributes,
                               const std::vector<std::string>& regions);
  // Single-result, no-region shorthand.
  Value append_op1(std::string_view op_name, const std::vector<Value>& operands,
                   const TensorType& result_type,
                   std::string_view attributes = {});
  // Allocates the SSA id of an op before its regions are built, so ids read
  // in textual order.
  int reserve_id();
  // Builds one region as text ("{ ^bb0(...): ... }"); its returned values'
  // types go to *returned for the caller to check.
  std::string build_region(std::string_view op_name,
                           const std::vector<TensorType>& arg_types,
                           const RegionFn& body,
                           std::vector<TensorType>* returned);
  // Regions whose block takes 0-dim tensors of dtypes, twice (reduce style:
  // all accumulators then all elements) and must return the same N dtypes.
  std::string build_reducer_region(std::string_view op_name,
                                   const std::vector<ElementType>& dtypes,
                                   const RegionFn& body);

  static Flow flow_of(std::string_view op_name);
  // Whether XLA computes the op in a kernel of its own with at most its
  // operands fused in, which its consumers read: ParameterFlow::kernels.
  static bool ends_kernel(std::string_view op_name);
  // Whether `update` may read `x`'s buffer inside the loop fusion XLA
  // makes of a dynamic_update_slice of x (see dynamic_update_slice).
  // Under kUnknown it records a CallerDependency where the answer depends
  // on the caller.
  bool update_reads_operand(const Value& x, const Value& update);
  // update_reads_operand's walks: the values whose buffer x may be, and
  // whether the update's computation reaches one of them; the parameters
  // the update's walk reached go to *parameters when given.
  std::unordered_set<int> buffer_of(int id) const;
  // ParameterFlow::chains of `results` (fusion_chains.cc).
  std::vector<ResultChain> fusion_chains(const std::vector<Value>& results) const;
  // ParameterFlow::kernels of `results` (fusion_chains.cc).
  std::vector<ResultKernel> fusion_kernels(const std::vector<Value>& results) const;
  bool reaches(int id, const std::unordered_set<int>& targets, std::vector<int>* parameters) const;

  void check_open(std::string_view op_name) const;
  void check_operand(std::string_view op_name, const Value& v) const;
  bool in_scope(int scope) const;
  void append_value_name(std::string& out, const Value& v) const;

  std::string module_name_;
  int64_t num_replicas_ = 1;
  int64_t num_partitions_ = 1;
  uint32_t serial_;
  bool built_ = false;
  int next_scope_ = 1;
  std::vector<TensorType> parameter_types_;
  std::vector<int64_t> parameter_aliases_;  // per parameter: result index, or -1
  std::vector<ValueRecord> records_;
  // Every op's operand ids, one array for the module (no allocation per op:
  // fused eager records into a builder op by op).
  std::vector<int> operand_ids_;  // indexed by SSA id
  // Imported functions (entry symbol -> text), printed after @main, and
  // every name they define.
  std::unordered_map<std::string, std::string> imported_;
  std::unordered_set<std::string> defined_symbols_;
  std::string functions_text_;
  std::vector<OpenBlock> blocks_;     // blocks_[0] is @main's body
  CallerValues caller_values_ = CallerValues::kOwnBuffers;
  std::vector<CallerDependency> caller_dependencies_;
  std::unordered_map<int, ParameterFlow> call_flows_;  // by the call's SSA id
};

}  // namespace torch_tpu::hlo
