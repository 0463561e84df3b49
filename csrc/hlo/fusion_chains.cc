// How long the runs of cheap elementwise ops ending at a module's results
// are: ParameterFlow::chains.
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

}  // namespace torch_tpu::hlo
