#include "aten/shape_churn.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "runtime/config.h"

namespace torch_tpu::aten::shape_churn {

namespace {

int64_t compiles_in_a_row() {
  static const int64_t n = [] {
    const int64_t v = config::get_int(config::kFusedShapeChurn).value_or(2);
    TORCH_CHECK_VALUE(v >= 0, config::kFusedShapeChurn.name, " must be 0 or positive, got ", v);
    return v;
  }();
  return n;
}

// A graph of a handful of ops gains nothing from losing one.
constexpr size_t kMinOps = 8;

// The last compile of a graph structure: its ops' key hashes, and for each
// op how many compiles in a row changed it.
struct History {
  std::vector<uint64_t> op_keys;
  std::vector<uint8_t> changed_in_a_row;
};

// Both tables are bounded: a process that compiles graphs of many
// structures (a test suite, a sweep over models) starts them over, which
// costs at most a few recompiles more before an op is marked again.
constexpr size_t kMaxHistories = 512;
constexpr size_t kMaxMarked = 4096;

std::unordered_map<uint64_t, History>& histories() {
  static auto* table = new std::unordered_map<uint64_t, History>();
  return *table;
}

std::unordered_set<uint64_t>& marked_positions() {
  static auto* positions = new std::unordered_set<uint64_t>();
  return *positions;
}

std::atomic<size_t> marked_count{0};

void mark(uint64_t position) {
  auto& positions = marked_positions();
  if (positions.size() >= kMaxMarked) positions.clear();
  positions.insert(position);
  marked_count.store(positions.size(), std::memory_order_relaxed);
}

}  // namespace

bool enabled() { return compiles_in_a_row() > 0; }

uint64_t after(uint64_t structure, const char* op) {
  const uint64_t h = std::hash<std::string_view>{}(op);
  return structure ^ (h + 0x9e3779b97f4a7c15ull + (structure << 6) + (structure >> 2));
}

void note_compile(uint64_t structure, const std::vector<uint64_t>& op_keys, const std::vector<uint64_t>& positions) {
  const int64_t limit = compiles_in_a_row();
  if (limit == 0 || op_keys.size() < kMinOps) return;
  auto& all = histories();
  auto it = all.find(structure);
  if (it == all.end() || it->second.op_keys.size() != op_keys.size()) {
    if (all.size() >= kMaxHistories) all.clear();
    all[structure] = History{op_keys, std::vector<uint8_t>(op_keys.size(), 0)};
    return;
  }
  History& last = it->second;
  size_t changed = 0;
  for (size_t i = 0; i < op_keys.size(); ++i) changed += last.op_keys[i] != op_keys[i];
  if (changed == 0) return;  // recompiled for another reason (other outputs)
  // Where most of the graph changed (a model fed batches of a new length)
  // every op would run alone, each compiled per shape: no cheaper than
  // compiling the graph, and slower to run.
  const bool few = changed * 4 <= op_keys.size();
  for (size_t i = 0; i < op_keys.size(); ++i) {
    uint8_t& run = last.changed_in_a_row[i];
    if (!few || last.op_keys[i] == op_keys[i]) {
      run = 0;
      continue;
    }
    if (run < 255) ++run;
    if (run >= limit) mark(positions[i]);
  }
  last.op_keys = op_keys;
}

bool any_marked() { return marked_count.load(std::memory_order_relaxed) != 0; }

bool marked(uint64_t position) { return any_marked() && marked_positions().count(position) > 0; }

}  // namespace torch_tpu::aten::shape_churn
