// Shape churn in fused eager: ops whose shapes change at every step of a
// loop while the rest of their graph stays the same.
//
// A fused graph's program is keyed by every op's shapes, so one op reading
// a sequence that grows by a token each step (the ids a generation loop
// appends to, its attention mask, a growing KV cache) makes the whole
// step's graph a new program at every step: a model's worth of compiling
// per token. When a graph recompiles with the same few of its ops changed,
// compile after compile, those ops' positions are marked (a position: the
// names of the ops recorded into the graph before an op, and its own), and
// an op recorded at a marked position runs as a program of its own,
// compiled once per shape. The rest of the graph then reads its result as
// an input whose shape does not change, and finds its program in the cache.
#pragma once

#include <cstdint>
#include <vector>

namespace torch_tpu::aten::shape_churn {

// Whether TORCH_TPU_FUSED_SHAPE_CHURN lets ops run alone (read once; a
// negative setting raises, naming it, at the first op recorded).
bool enabled();

// The structure of a graph with no op yet; after(structure, op) is that of
// the graph once `op` is recorded, and names that op's position.
inline constexpr uint64_t kEmpty = 0x9e3779b97f4a7c15ull;
uint64_t after(uint64_t structure, const char* op);

// A graph of `structure` (after its last op) was compiled; `op_keys` are
// hashes of its ops' keys and `positions` their positions. Compared with
// the last compile of a graph of the same structure, an op whose key
// changed while at most a quarter of the graph's did, in
// TORCH_TPU_FUSED_SHAPE_CHURN compiles in a row, gets its position marked.
// Under runtime::ValuesLock.
void note_compile(uint64_t structure, const std::vector<uint64_t>& op_keys, const std::vector<uint64_t>& positions);

// Whether any position is marked: one relaxed load, for the ops' fast path.
bool any_marked();

// Whether an op recorded at `position` runs as a program of its own.
// Under runtime::ValuesLock.
bool marked(uint64_t position);

}  // namespace torch_tpu::aten::shape_churn
