// What XLA's fusion may make of the values ending at a module's results:
// how long their runs of cheap elementwise ops are (ParameterFlow::chains)
// and how large a kernel may grow around them (ParameterFlow::kernels).
//
// XLA's fusion copies a cheap op (add, multiply, select, a reshape or a
// slice) into every consumer that needs it rather than computing it once.
// A long run of such ops whose intermediate values are each needed
// elsewhere too (a recurrence whose every step is kept, `x = x * a + b;
// outs.append(x)`, or a recurrent network's cell state saved for backward)
// is then recomputed from its start inside the kernel of every such value:
// compile time and run time grow with the square of the run's length. The
// fused graph (aten/fused_graph.cc) caps the length across ops with
// barriers, from these per-op figures.
//
// Even computed once, a long enough sequence of elementwise ops with one
// consumer each becomes one kernel: a loop adding a fresh random tensor
// to a running value, every step's sampling fused with the next. LLVM's
// instruction scheduler takes time quadratic in such a kernel's size (a
// 100-step loop: 39 s to compile). The fused graph bounds the kernels'
// size across ops from the kernels' figures.
#include <algorithm>
#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::hlo {

namespace {

// Adds `from`'s runs, `step` ops longer, to `into`'s (both by parameter).
void merge_longer(const std::vector<std::pair<int, int>>& from, int step, std::vector<std::pair<int, int>>& into) {
  for (const auto& [parameter, length] : from) {
    auto it = std::lower_bound(into.begin(), into.end(), std::make_pair(parameter, -1));
    if (it != into.end() && it->first == parameter) {
      it->second = std::max(it->second, length + step);
    } else {
      into.insert(it, {parameter, length + step});
    }
  }
}

}  // namespace

std::vector<Builder::ResultChain> Builder::fusion_chains(const std::vector<Value>& results) const {
  // Cheap ops continue a run, one op longer. Anything else starts one:
  // XLA computes a fused-once op (exp, divide, a reduction) once, so what
  // its consumers copy starts after it, and materialized values (a dot, a
  // call) are buffers of their own.
  auto continues = [](Flow flow) { return flow == Flow::kFusible || flow == Flow::kSameBuffer; };
  std::vector<ResultChain> chain(records_.size());
  std::vector<char> state(records_.size(), 0);  // 0 unseen, 1 operands pending, 2 done
  std::vector<int> stack;
  for (const Value& v : results) stack.push_back(v.id_);
  // Depth first, each value after its operands.
  while (!stack.empty()) {
    const int id = stack.back();
    const ValueRecord& record = records_[id];
    const bool extends = record.parameter_index < 0 && continues(record.flow);
    if (state[id] == 0) {
      state[id] = 1;
      if (extends) {
        for (uint32_t i = 0; i < record.num_operands; ++i) {
          const int operand = operand_ids_[record.first_operand + i];
          if (state[operand] == 0) stack.push_back(operand);
        }
      }
      continue;
    }
    stack.pop_back();
    if (state[id] == 2) continue;
    state[id] = 2;
    ResultChain& c = chain[id];
    if (record.parameter_index >= 0) {
      c.parameters.push_back({record.parameter_index, 0});
      continue;
    }
    if (!extends || record.num_operands == 0) {
      c.inside = 0;
      continue;
    }
    for (uint32_t i = 0; i < record.num_operands; ++i) {
      const ResultChain& operand = chain[operand_ids_[record.first_operand + i]];
      if (operand.inside >= 0) c.inside = std::max(c.inside, operand.inside + 1);
      merge_longer(operand.parameters, 1, c.parameters);
    }
  }
  std::vector<ResultChain> out;
  out.reserve(results.size());
  for (const Value& v : results) out.push_back(chain[v.id_]);
  return out;
}

std::vector<Builder::ResultKernel> Builder::fusion_kernels(const std::vector<Value>& results) const {
  // A result's kernel: what it is computed from through ops XLA may fuse,
  // up to the buffers of values computed apart (a dot, a call, a
  // reduction: kernels of their own) and of parameters. Constants and
  // iotas (no operands) cost the kernel nothing; a cheap op that several
  // values share is counted once, though XLA may copy it into each.
  auto computed_apart = [](const ValueRecord& record) {
    return record.flow == Flow::kMaterialized || record.flow == Flow::kCall;
  };
  std::vector<ResultKernel> out;
  out.reserve(results.size());
  std::vector<int> seen(records_.size(), -1);  // the result whose walk saw it
  std::vector<int> pending;
  for (size_t r = 0; r < results.size(); ++r) {
    ResultKernel kernel;
    const ValueRecord& root = records_[results[r].id_];
    kernel.ends = root.parameter_index < 0 && (computed_apart(root) || root.ends_kernel);
    pending.assign(1, results[r].id_);
    while (!pending.empty()) {
      const int id = pending.back();
      pending.pop_back();
      if (seen[id] == static_cast<int>(r)) continue;
      seen[id] = static_cast<int>(r);
      const ValueRecord& record = records_[id];
      if (record.parameter_index >= 0) {
        kernel.parameters.push_back(record.parameter_index);
        continue;
      }
      // (A reduction's own operands fuse into it; a consumer's stop there.)
      const bool read_as_buffer = computed_apart(record) || (record.ends_kernel && &record != &root);
      if (read_as_buffer || record.num_operands == 0) continue;
      ++kernel.ops;
      const auto first = operand_ids_.begin() + record.first_operand;
      pending.insert(pending.end(), first, first + record.num_operands);
    }
    out.push_back(std::move(kernel));
  }
  return out;
}

}  // namespace torch_tpu::hlo
