#include "distributed/process_group_tpu.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "distributed/staged_work.h"

namespace torch_tpu::distributed {

namespace {

using c10d::OpType;
using c10d::ReduceOp;
using c10d::Work;
using TensorList = std::vector<at::Tensor>;

bool on_tpu(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

bool any_on_tpu(const TensorList& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), on_tpu);
}

bool any_on_tpu(const std::vector<TensorList>& lists) {
  return std::any_of(lists.begin(), lists.end(),
                     [](const TensorList& l) { return any_on_tpu(l); });
}

// Staging copies run below autograd, as the memory writes of NCCL or gloo
// do: a collective on a tensor that requires grad (dist.broadcast(param))
// is allowed, and it changes neither the tensor's grad_fn nor its version.
using BelowAutograd = at::AutoDispatchBelowADInplaceOrView;

// The values of `t` in dense host memory (a CPU tensor that is already
// dense is used as it is: results written into it land in place).
at::Tensor host_values(const at::Tensor& t) {
  BelowAutograd guard;
  return t.to(at::kCPU).contiguous();
}

// A dense host copy that never shares memory with `t`, for collectives
// that must leave their input as it was.
at::Tensor host_copy(const at::Tensor& t) {
  BelowAutograd guard;
  return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true)
      .contiguous();
}

// Whether gloo has a type of its own for `t` (the collectives that compute
// on values need one).
bool gloo_has_type(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16:
    case at::kChar: case at::kByte: case at::kBool: case at::kInt: case at::kLong:
      return true;
    default:
      return false;
  }
}

// What gloo moves: values of a dtype it has no type for (8-bit floats,
// int16, the unsigned types wider than 8 bits, complex) as their bytes,
// which moving needs no type for: a view with a trailing dim of the element
// size, so dim 0 (what all_to_all splits) keeps its length and results land
// in `host`.
at::Tensor wire(const at::Tensor& host) {
  if (gloo_has_type(host.scalar_type())) return host;
  return host.unsqueeze(-1).view(at::kByte);
}

TensorList wire(const TensorList& hosts) {
  TensorList out;
  out.reserve(hosts.size());
  for (const auto& t : hosts) out.push_back(wire(t));
  return out;
}

std::vector<TensorList> wire(const std::vector<TensorList>& lists) {
  std::vector<TensorList> out;
  out.reserve(lists.size());
  for (const auto& list : lists) out.push_back(wire(list));
  return out;
}

TensorList host_values(const TensorList& tensors) {
  TensorList hosts;
  hosts.reserve(tensors.size());
  for (const auto& t : tensors) hosts.push_back(host_values(t));
  return hosts;
}

// Uninitialized host memory shaped like `t`, for results.
at::Tensor host_empty(const at::Tensor& t) {
  return at::empty(t.sizes(), t.options().device(at::kCPU));
}

TensorList host_empty(const TensorList& tensors) {
  TensorList hosts;
  hosts.reserve(tensors.size());
  for (const auto& t : tensors) hosts.push_back(host_empty(t));
  return hosts;
}

void copy_back(at::Tensor& target, const at::Tensor& host) {
  BelowAutograd guard;
  if (!target.is_same(host)) target.copy_(host);
}

void copy_back(TensorList& targets, const TensorList& hosts) {
  for (size_t i = 0; i < targets.size(); ++i) copy_back(targets[i], hosts[i]);
}

std::vector<TensorList> host_empty(const std::vector<TensorList>& lists) {
  std::vector<TensorList> hosts;
  hosts.reserve(lists.size());
  for (const auto& list : lists) hosts.push_back(host_empty(list));
  return hosts;
}

// Copies each host list into its targets; returns the targets, flattened
// (the outputs of the Work).
TensorList copy_back(std::vector<TensorList>& targets,
                     const std::vector<TensorList>& hosts) {
  TensorList flat;
  for (size_t i = 0; i < targets.size(); ++i) {
    copy_back(targets[i], hosts[i]);
    flat.insert(flat.end(), targets[i].begin(), targets[i].end());
  }
  return flat;
}

// gloo names itself in its argument errors ("ProcessGroupGloo::allgather:
// invalid tensor size ..."); the caller used the tpu backend.
template <class Call>
auto on_host(Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const c10::Error& e) {
    constexpr std::string_view gloo = "ProcessGroupGloo::";
    const std::string_view what = e.what_without_backtrace();
    if (what.substr(0, gloo.size()) != gloo) throw;
    TORCH_CHECK(false, "tpu backend: ", what.substr(gloo.size()));
  }
}

c10::intrusive_ptr<Work> done(TensorList outputs, OpType type) {
  return c10::make_intrusive<StagedWork>(std::move(outputs), type);
}

void check_same_dtype(std::string_view op, const at::Tensor& a,
                      const at::Tensor& b) {
  TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "tpu backend: ", op,
                   ": input and output must have one dtype, got ",
                   a.scalar_type(), " and ", b.scalar_type());
}

bool same_sizes(const TensorList& tensors) {
  return std::all_of(tensors.begin(), tensors.end(),
                     [&](const at::Tensor& t) { return t.sizes() == tensors[0].sizes(); });
}

void check_numel(std::string_view op, const at::Tensor& t, int64_t expected,
                 std::string_view what) {
  TORCH_CHECK_VALUE(t.numel() == expected, "tpu backend: ", op, ": ", what,
                    " must have ", expected, " elements, got ", t.numel(),
                    " (shape ", t.sizes(), ")");
}

// gloo reduces only 8-, 32- and 64-bit integers. int16, uint16 and uint32
// are reduced as int64 (exact, and sums and products wrap back to their
// width as on CPU); uint64 as the same bits in int64 (sums, products and
// bitwise ops agree modulo 2^64), with its top bit flipped for MIN / MAX
// so that int64's order is uint64's.
at::Tensor gloo_reducible(const at::Tensor& host, bool ordered) {
  switch (host.scalar_type()) {
    case at::kShort:
    case at::kUInt16:
    case at::kUInt32:
      return host.to(at::kLong);
    case at::kUInt64: {
      at::Tensor bits = host.view(at::kLong).clone();
      if (ordered) bits.bitwise_xor_(std::numeric_limits<int64_t>::min());
      return bits;
    }
    default:
      return host;
  }
}

at::Tensor from_gloo_reducible(at::Tensor reduced, const at::Tensor& host, bool ordered) {
  if (host.scalar_type() != at::kUInt64) return reduced.to(host.scalar_type());
  if (ordered) reduced.bitwise_xor_(std::numeric_limits<int64_t>::min());
  return reduced.view(at::kUInt64);
}

}  // namespace

ProcessGroupTPU::ProcessGroupTPU(c10::intrusive_ptr<c10d::Backend> host,
                                 int rank, int size)
    : c10d::Backend(rank, size), host_(std::move(host)) {
  TORCH_CHECK(host_, "tpu backend: needs a host backend");
  TORCH_CHECK(host_->getRank() == rank && host_->getSize() == size,
              "tpu backend: host backend is rank ", host_->getRank(), " of ",
              host_->getSize(), ", expected rank ", rank, " of ", size);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTPU::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                         const std::vector<int>& ranks,
                                                         const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  std::lock_guard<std::mutex> lock(split_mutex_);
  if (!last_split_name_.empty() && last_split_name_ == opts->group_name) return last_split_;
  c10::intrusive_ptr<c10d::Backend> host = host_->split(store, ranks, opts);
  // A rank outside `ranks` gets no backend, as from the host's split.
  last_split_ = host ? c10::make_intrusive<ProcessGroupTPU>(host, host->getRank(), host->getSize()) : nullptr;
  last_split_name_ = opts->group_name;
  return last_split_;
}

void ProcessGroupTPU::setTimeout(std::chrono::milliseconds timeout) {
  host_->setTimeout(timeout);
}

void ProcessGroupTPU::setGroupUid(const std::string& pg_uid) {
  c10d::Backend::setGroupUid(pg_uid);
  host_->setGroupUid(pg_uid);
}

void ProcessGroupTPU::setSequenceNumberForGroup() {
  host_->setSequenceNumberForGroup();
}

uint64_t ProcessGroupTPU::getSequenceNumberForGroup() {
  return host_->getSequenceNumberForGroup();
}

namespace {

const char* reduce_op_name(ReduceOp::RedOpType op) {
  switch (op) {
    case ReduceOp::SUM: return "ReduceOp.SUM";
    case ReduceOp::AVG: return "ReduceOp.AVG";
    case ReduceOp::PRODUCT: return "ReduceOp.PRODUCT";
    case ReduceOp::MIN: return "ReduceOp.MIN";
    case ReduceOp::MAX: return "ReduceOp.MAX";
    case ReduceOp::BAND: return "ReduceOp.BAND";
    case ReduceOp::BOR: return "ReduceOp.BOR";
    case ReduceOp::BXOR: return "ReduceOp.BXOR";
    case ReduceOp::PREMUL_SUM: return "ReduceOp.PREMUL_SUM";
    default: return "this ReduceOp";
  }
}

}  // namespace

void ProcessGroupTPU::reduce_on_host(TensorList& hosts, const ReduceOp& op,
                                     std::chrono::milliseconds timeout,
                                     std::string_view caller) {
  BelowAutograd guard;
  c10d::AllreduceOptions host_opts;
  host_opts.timeout = timeout;
  const bool average = op.op_ == ReduceOp::AVG;
  const bool ordered = op.op_ == ReduceOp::MIN || op.op_ == ReduceOp::MAX;
  // Reduced in a type gloo takes (the tensor itself for most types), and
  // averaged there too: an int16 sum must not wrap before its division.
  TensorList reduced = hosts;
  for (auto& r : reduced) {
    TORCH_CHECK_TYPE(!c10::isFloat8Type(r.scalar_type()), "tpu backend: ", caller, ": ", r.scalar_type(),
                     " tensors cannot be reduced (as with NCCL); reduce them in a wider type");
    // PyTorch's all_reduce refuses these for complex tensors itself;
    // reduce and reduce_scatter reach the backend with them.
    TORCH_CHECK_VALUE(!r.is_complex() || op.op_ == ReduceOp::SUM || average || op.op_ == ReduceOp::PREMUL_SUM,
                      "tpu backend: ", caller, ": ", reduce_op_name(op.op_), " is not defined for complex tensors");
    if (average) {
      TORCH_CHECK_TYPE(r.scalar_type() != at::kBool && r.scalar_type() != at::kUInt64, "tpu backend: ", caller,
                       ": ReduceOp.AVG is not defined for ", r.scalar_type(), " tensors");
    }
    r = gloo_reducible(r, ordered);
  }
  if (average) {
    host_opts.reduceOp = ReduceOp::SUM;
  } else if (op.op_ == ReduceOp::PREMUL_SUM) {
    // The name that PyTorch 2.11 gives it and later ones keep as an alias.
    auto* factor =
        dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK_VALUE(factor, "tpu backend: ", caller,
                      ": ReduceOp.PREMUL_SUM without a factor");
    for (auto& r : reduced) {
      // NCCL's premul sum is defined for floating types only.
      TORCH_CHECK_TYPE(at::isFloatingType(r.scalar_type()) || at::isComplexType(r.scalar_type()),
                       "tpu backend: ", caller, ": ReduceOp.PREMUL_SUM is defined for floating-point tensors, got ",
                       r.scalar_type());
      if (factor->tensor_factor.defined()) {
        r.mul_(factor->tensor_factor.to(at::kCPU));
      } else {
        r.mul_(factor->double_factor);
      }
    }
    host_opts.reduceOp = ReduceOp::SUM;
  } else {
    host_opts.reduceOp = op;
  }
  on_host([&] { return host_->allreduce(reduced, host_opts); })->wait();
  if (average) {
    // Integers are averaged by truncating division, as NCCL's ncclAvg does.
    for (auto& r : reduced) {
      if (at::isIntegralType(r.scalar_type(), /*includeBool=*/false)) {
        r.div_(getSize(), "trunc");
      } else {
        r.div_(getSize());
      }
    }
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!reduced[i].is_same(hosts[i])) hosts[i].copy_(from_gloo_reducible(reduced[i], hosts[i], ordered));
  }
}

c10::intrusive_ptr<Work> ProcessGroupTPU::broadcast(
    TensorList& tensors, const c10d::BroadcastOptions& opts) {
  if (!any_on_tpu(tensors)) return on_host([&] { return host_->broadcast(tensors, opts); });
  const bool root = getRank() == opts.rootRank;
  TensorList hosts = root ? host_values(tensors) : host_empty(tensors);
  TensorList wired = wire(hosts);
  on_host([&] { return host_->broadcast(wired, opts); })->wait();
  if (!root) copy_back(tensors, hosts);
  return done(tensors, OpType::BROADCAST);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allreduce(
    TensorList& tensors, const c10d::AllreduceOptions& opts) {
  const auto op = opts.reduceOp.op_;
  if (!any_on_tpu(tensors) && op != ReduceOp::AVG &&
      op != ReduceOp::PREMUL_SUM) {
    return on_host([&] { return host_->allreduce(tensors, opts); });
  }
  TensorList hosts = host_values(tensors);
  reduce_on_host(hosts, opts.reduceOp, opts.timeout, "all_reduce");
  copy_back(tensors, hosts);
  return done(tensors, OpType::ALLREDUCE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allreduce_sparse(
    TensorList& tensors, const c10d::AllreduceOptions& opts) {
  if (!any_on_tpu(tensors)) return on_host([&] { return host_->allreduce_sparse(tensors, opts); });
  const auto op = opts.reduceOp.op_;
  TORCH_CHECK_VALUE(op == ReduceOp::SUM || op == ReduceOp::AVG, "tpu backend: all_reduce of sparse tensors "
                    "supports ReduceOp.SUM and ReduceOp.AVG (as gloo does SUM), got ", reduce_op_name(op));
  BelowAutograd guard;
  TensorList hosts;
  hosts.reserve(tensors.size());
  for (const auto& t : tensors) {
    TORCH_CHECK_VALUE(t.is_sparse(), "tpu backend: all_reduce: expected sparse COO tensors, got ", t.layout());
    hosts.push_back(t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true));
  }
  c10d::AllreduceOptions host_opts = opts;
  host_opts.reduceOp = ReduceOp::SUM;
  // gloo writes each rank's sum into the host tensors.
  on_host([&] { return host_->allreduce_sparse(hosts, host_opts); })->wait();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (op == ReduceOp::AVG) hosts[i] = hosts[i].div(getSize());
    tensors[i].copy_(hosts[i]);
  }
  return done(tensors, OpType::ALLREDUCE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allreduce_coalesced(
    TensorList& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  // One all-reduce per tensor, each finished before the next (those of CPU
  // tensors go to gloo asynchronously: their Works are waited here).
  for (auto& t : tensors) {
    TensorList one{t};
    allreduce(one, opts)->wait();
  }
  return done(tensors, OpType::ALLREDUCE_COALESCED);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::reduce(
    TensorList& tensors, const c10d::ReduceOptions& opts) {
  const auto op = opts.reduceOp.op_;
  if (!any_on_tpu(tensors) && op != ReduceOp::AVG &&
      op != ReduceOp::PREMUL_SUM) {
    return on_host([&] { return host_->reduce(tensors, opts); });
  }
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < getSize(), "tpu backend: reduce: invalid root rank: ",
              opts.rootRank);
  // Every rank takes part in an all-reduce; only the root keeps the result
  // (the others' inputs stay as they were, which reduce allows).
  TensorList hosts;
  for (const auto& t : tensors) hosts.push_back(host_copy(t));
  reduce_on_host(hosts, opts.reduceOp, opts.timeout, "reduce");
  if (getRank() == opts.rootRank) copy_back(tensors, hosts);
  return done(tensors, OpType::REDUCE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allgather(
    std::vector<TensorList>& outputs, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  if (!any_on_tpu(inputs) && !any_on_tpu(outputs)) {
    return on_host([&] { return host_->allgather(outputs, inputs, opts); });
  }
  TensorList host_inputs = host_values(inputs);
  std::vector<TensorList> host_outputs = host_empty(outputs);
  if (outputs.size() == 1 && inputs.size() == 1 && !same_sizes(outputs[0])) {
    // Ranks contribute different sizes: one broadcast per rank, as NCCL
    // does (gloo's all-gather takes equal sizes only).
    TensorList& slots = host_outputs[0];
    TORCH_CHECK_VALUE(static_cast<int>(slots.size()) == getSize(), "tpu backend: all_gather: expected ",
                      getSize(), " output tensors, got ", slots.size());
    TORCH_CHECK_VALUE(slots[getRank()].sizes() == inputs[0].sizes(), "tpu backend: all_gather: this rank's output ",
                      slots[getRank()].sizes(), " does not match its input ", inputs[0].sizes());
    check_same_dtype("all_gather", inputs[0], outputs[0][getRank()]);
    for (int root = 0; root < getSize(); ++root) {
      if (root == getRank()) slots[root] = host_inputs[0];
      TensorList slot{wire(slots[root])};
      c10d::BroadcastOptions broadcast_opts;
      broadcast_opts.rootRank = root;
      broadcast_opts.timeout = opts.timeout;
      on_host([&] { return host_->broadcast(slot, broadcast_opts); })->wait();
    }
  } else {
    std::vector<TensorList> wired_outputs = wire(host_outputs);
    TensorList wired_inputs = wire(host_inputs);
    on_host([&] { return host_->allgather(wired_outputs, wired_inputs, opts); })->wait();
  }
  return done(copy_back(outputs, host_outputs), OpType::ALLGATHER);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::_allgather_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::AllgatherOptions& opts) {
  constexpr std::string_view op = "all_gather_into_tensor";
  check_same_dtype(op, input, output);
  check_numel(op, output, input.numel() * getSize(),
              "the output (the input's size times the group's)");
  // Gathered as a list of views into one dense host buffer.
  at::Tensor host_output = at::empty(
      {output.numel()}, output.options().device(at::kCPU));
  std::vector<TensorList> host_outputs{
      host_output.view({getSize(), input.numel()}).unbind(0)};
  for (auto& piece : host_outputs[0]) piece = piece.view(input.sizes());
  TensorList host_inputs{host_values(input)};
  std::vector<TensorList> wired_outputs = wire(host_outputs);
  TensorList wired_inputs = wire(host_inputs);
  on_host([&] { return host_->allgather(wired_outputs, wired_inputs, opts); })->wait();
  copy_back(output, host_output.view(output.sizes()));
  return done({output}, OpType::_ALLGATHER_BASE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allgather_coalesced(
    std::vector<TensorList>& output_lists, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(output_lists.size() == inputs.size(),
                    "tpu backend: all_gather_coalesced: ", inputs.size(),
                    " inputs but ", output_lists.size(), " output lists");
  TensorList results;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<TensorList> outputs{output_lists[i]};
    TensorList input{inputs[i]};
    allgather(outputs, input, opts)->wait();
    results.insert(results.end(), output_lists[i].begin(),
                   output_lists[i].end());
  }
  return done(std::move(results), OpType::ALLGATHER_COALESCED);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::allgather_into_tensor_coalesced(
    TensorList& outputs, TensorList& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(),
                    "tpu backend: all_gather_into_tensor_coalesced: ",
                    inputs.size(), " inputs but ", outputs.size(),
                    " outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    _allgather_base(outputs[i], inputs[i], opts);
  }
  return done(outputs, OpType::COALESCED);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::gather(
    std::vector<TensorList>& outputs, TensorList& inputs,
    const c10d::GatherOptions& opts) {
  if (!any_on_tpu(inputs) && !any_on_tpu(outputs)) {
    return on_host([&] { return host_->gather(outputs, inputs, opts); });
  }
  TensorList host_inputs = host_values(inputs);
  std::vector<TensorList> host_outputs = host_empty(outputs);
  std::vector<TensorList> wired_outputs = wire(host_outputs);
  TensorList wired_inputs = wire(host_inputs);
  on_host([&] { return host_->gather(wired_outputs, wired_inputs, opts); })->wait();
  return done(copy_back(outputs, host_outputs), OpType::GATHER);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::scatter(
    TensorList& outputs, std::vector<TensorList>& inputs,
    const c10d::ScatterOptions& opts) {
  if (!any_on_tpu(outputs) && !any_on_tpu(inputs)) {
    return on_host([&] { return host_->scatter(outputs, inputs, opts); });
  }
  std::vector<TensorList> host_inputs;
  for (const auto& list : inputs) host_inputs.push_back(host_values(list));
  TensorList host_outputs = host_empty(outputs);
  TensorList wired_outputs = wire(host_outputs);
  std::vector<TensorList> wired_inputs = wire(host_inputs);
  on_host([&] { return host_->scatter(wired_outputs, wired_inputs, opts); })->wait();
  copy_back(outputs, host_outputs);
  return done(outputs, OpType::SCATTER);
}

// Reduce-scatter is an all-reduce of the whole input on the host, of which
// each rank keeps its own part: every reduce op behaves as in all_reduce,
// at world-size times the traffic of a ring reduce-scatter.
c10::intrusive_ptr<Work> ProcessGroupTPU::reduce_scatter(
    TensorList& outputs, std::vector<TensorList>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  constexpr std::string_view op = "reduce_scatter";
  TORCH_CHECK_VALUE(outputs.size() == 1 && inputs.size() == 1,
                    "tpu backend: ", op,
                    ": takes one output tensor and one input list");
  TORCH_CHECK_VALUE(static_cast<int>(inputs[0].size()) == getSize(),
                    "tpu backend: ", op, ": the input list must have one "
                    "tensor per rank (", getSize(), "), got ",
                    inputs[0].size());
  at::Tensor& output = outputs[0];
  bool even = true;
  for (const auto& piece : inputs[0]) {
    check_same_dtype(op, piece, output);
    even = even && piece.numel() == output.numel();
  }
  if (!even) {
    // Ranks receive pieces of different sizes: one reduction per rank, as
    // NCCL and gloo do it (piece r has rank r's output size on every rank).
    check_numel(op, inputs[0][getRank()], output.numel(), "this rank's own input");
    for (int r = 0; r < getSize(); ++r) {
      TensorList hosts{host_copy(inputs[0][r]).reshape({-1})};
      reduce_on_host(hosts, opts.reduceOp, opts.timeout, op);
      if (r == getRank()) copy_back(output, hosts[0].view(output.sizes()));
    }
    return done(outputs, OpType::REDUCE_SCATTER);
  }
  TensorList flat_inputs;
  for (const auto& piece : inputs[0]) flat_inputs.push_back(host_values(piece).reshape({-1}));
  TensorList hosts{at::cat(flat_inputs)};
  reduce_on_host(hosts, opts.reduceOp, opts.timeout, op);
  copy_back(output, hosts[0]
                        .narrow(0, getRank() * output.numel(), output.numel())
                        .view(output.sizes()));
  return done(outputs, OpType::REDUCE_SCATTER);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::ReduceScatterOptions& opts) {
  constexpr std::string_view op = "reduce_scatter_tensor";
  check_same_dtype(op, input, output);
  check_numel(op, input, output.numel() * getSize(),
              "the input (the output's size times the group's)");
  TensorList hosts{host_copy(input).reshape({-1})};
  reduce_on_host(hosts, opts.reduceOp, opts.timeout, op);
  copy_back(output, hosts[0]
                        .narrow(0, getRank() * output.numel(), output.numel())
                        .view(output.sizes()));
  return done({output}, OpType::_REDUCE_SCATTER_BASE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::reduce_scatter_tensor_coalesced(
    TensorList& outputs, TensorList& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(),
                    "tpu backend: reduce_scatter_tensor_coalesced: ",
                    inputs.size(), " inputs but ", outputs.size(),
                    " outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    _reduce_scatter_base(outputs[i], inputs[i], opts);
  }
  return done(outputs, OpType::COALESCED);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::alltoall_base(
    at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes,
    const c10d::AllToAllOptions& opts) {
  if (!on_tpu(output) && !on_tpu(input)) {
    return on_host([&] {
      return host_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
    });
  }
  check_same_dtype("all_to_all_single", input, output);
  if (input_split_sizes.empty() && output_split_sizes.empty()) {
    TORCH_CHECK_VALUE(input.numel() == output.numel(), "tpu backend: all_to_all_single: without split sizes, "
                      "input and output must have as many elements, got ", input.numel(), " and ", output.numel());
  }
  for (const auto* t : {&input, &output}) {
    const auto& splits = t == &input ? input_split_sizes : output_split_sizes;
    if (splits.empty()) {
      TORCH_CHECK_VALUE(t->dim() > 0 && t->size(0) % getSize() == 0, "tpu backend: all_to_all_single: without ",
                        t == &input ? "input" : "output", " split sizes, the ", t == &input ? "input" : "output",
                        "'s first dimension must divide equally among the ", getSize(), " ranks, got shape ",
                        t->sizes());
    } else {
      TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == getSize(), "tpu backend: all_to_all_single: ",
                        t == &input ? "input" : "output", "_split_sizes must have one size per rank (", getSize(),
                        "), got ", splits.size());
    }
  }
  // What a rank sends itself is the one pairing known here (gloo would
  // stop on a failed internal assertion).
  auto own_part = [&](const at::Tensor& t, const std::vector<int64_t>& splits) -> int64_t {
    if (t.dim() == 0 || t.size(0) == 0) return 0;
    const int64_t rows = splits.empty() ? t.size(0) / getSize() : splits[getRank()];
    return rows * (t.numel() / t.size(0));
  };
  TORCH_CHECK_VALUE(own_part(input, input_split_sizes) == own_part(output, output_split_sizes),
                    "tpu backend: all_to_all_single: this rank's part of the input for itself has ",
                    own_part(input, input_split_sizes), " elements, its part of the output ",
                    own_part(output, output_split_sizes));
  at::Tensor host_input = host_values(input);
  at::Tensor host_output = host_empty(output);
  at::Tensor wired_output = wire(host_output), wired_input = wire(host_input);
  on_host([&] {
    return host_->alltoall_base(wired_output, wired_input, output_split_sizes, input_split_sizes, opts);
  })->wait();
  copy_back(output, host_output);
  return done({output}, OpType::ALLTOALL_BASE);
}

// A list all-to-all is one flat all_to_all_single whose splits are the
// tensors' sizes, for CPU tensors as well (gloo has no list all-to-all).
c10::intrusive_ptr<Work> ProcessGroupTPU::alltoall(
    TensorList& outputs, TensorList& inputs,
    const c10d::AllToAllOptions& opts) {
  constexpr std::string_view op = "all_to_all";
  TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == getSize() &&
                        static_cast<int>(outputs.size()) == getSize(),
                    "tpu backend: ", op, ": needs one input and one output "
                    "tensor per rank (", getSize(), "), got ", inputs.size(),
                    " and ", outputs.size());
  TensorList flat_inputs;
  std::vector<int64_t> input_splits, output_splits;
  for (const auto& t : inputs) {
    check_same_dtype(op, t, inputs[0]);
    flat_inputs.push_back(host_values(t).reshape({-1}));
    input_splits.push_back(t.numel());
  }
  for (const auto& t : outputs) {
    check_same_dtype(op, inputs[0], t);
    output_splits.push_back(t.numel());
  }
  // What a rank sends itself is the one pairing known here (gloo would
  // stop on a failed internal assertion).
  TORCH_CHECK_VALUE(input_splits[getRank()] == output_splits[getRank()], "tpu backend: ", op,
                    ": this rank's input and output tensors for itself must have as many elements, got ",
                    input_splits[getRank()], " and ", output_splits[getRank()]);
  at::Tensor host_input = at::cat(flat_inputs);
  at::Tensor host_output = at::empty(
      {std::accumulate(output_splits.begin(), output_splits.end(),
                       int64_t{0})},
      inputs[0].options().device(at::kCPU));
  at::Tensor wired_output = wire(host_output), wired_input = wire(host_input);
  on_host([&] { return host_->alltoall_base(wired_output, wired_input, output_splits, input_splits, opts); })
      ->wait();
  int64_t offset = 0;
  for (auto& t : outputs) {
    copy_back(t, host_output.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  return done(outputs, OpType::ALLTOALL);
}

// Point-to-point transfers return while the host transfer runs; the host
// tensors live in the lambdas until the Work completes.
c10::intrusive_ptr<Work> ProcessGroupTPU::send(TensorList& tensors,
                                               int dst_rank, int tag) {
  if (!any_on_tpu(tensors)) return on_host([&] { return host_->send(tensors, dst_rank, tag); });
  TensorList hosts = host_values(tensors);
  TensorList wired = wire(hosts);
  auto host_work = on_host([&] { return host_->send(wired, dst_rank, tag); });
  return c10::make_intrusive<PendingWork>(std::move(host_work), tensors,
                                          [hosts] {}, OpType::SEND);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::recv(TensorList& tensors,
                                               int src_rank, int tag) {
  if (!any_on_tpu(tensors)) return on_host([&] { return host_->recv(tensors, src_rank, tag); });
  TensorList hosts = host_empty(tensors);
  TensorList wired = wire(hosts);
  auto host_work = on_host([&] { return host_->recv(wired, src_rank, tag); });
  return c10::make_intrusive<PendingWork>(
      std::move(host_work), tensors,
      [targets = tensors, hosts]() mutable { copy_back(targets, hosts); },
      OpType::RECV);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::recvAnysource(TensorList& tensors,
                                                        int tag) {
  if (!any_on_tpu(tensors)) return on_host([&] { return host_->recvAnysource(tensors, tag); });
  TensorList hosts = host_empty(tensors);
  TensorList wired = wire(hosts);
  auto host_work = on_host([&] { return host_->recvAnysource(wired, tag); });
  return c10::make_intrusive<PendingWork>(
      std::move(host_work), tensors,
      [targets = tensors, hosts]() mutable { copy_back(targets, hosts); },
      OpType::RECVANYSOURCE);
}

c10::intrusive_ptr<Work> ProcessGroupTPU::barrier(
    const c10d::BarrierOptions& opts) {
  return on_host([&] { return host_->barrier(opts); });
}

void ProcessGroupTPU::monitoredBarrier(const c10d::BarrierOptions& opts,
                                       bool wait_all_ranks) {
  on_host([&] { return host_->monitoredBarrier(opts, wait_all_ranks); });
}

}  // namespace torch_tpu::distributed
