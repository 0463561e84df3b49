#include "aten/op_fragments.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace torch_tpu::aten {

namespace {

// Past this much text (a workload whose shapes keep changing) the table
// starts over; graphs keep the fragments they recorded.
constexpr size_t kMaxTextBytes = size_t{64} << 20;

struct FragmentTable {
  std::unordered_map<std::string, std::shared_ptr<const OpFragment>> by_key;
  size_t text_bytes = 0;
  // Every symbol prefix handed out, kept when the table starts over: an
  // open graph may still call a fragment of the old table.
  std::unordered_set<std::string> prefixes;
};

FragmentTable& table() {
  static auto* t = new FragmentTable();
  return *t;
}

// "aten_mm_1f3a...": the op's name and a hash of its key, so a graph's text
// reads the same in every process; a clash gets a suffix.
std::string symbol_prefix(const char* op, const std::string& op_key) {
  std::string prefix;
  for (const char* c = op; *c; ++c) {
    const bool word = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
    if (word) {
      prefix.push_back(*c);
    } else if (prefix.empty() || prefix.back() != '_') {
      prefix.push_back('_');
    }
  }
  if (prefix.empty() || (prefix[0] >= '0' && prefix[0] <= '9')) prefix.insert(prefix.begin(), '_');
  char hash[24];
  std::snprintf(hash, sizeof hash, "_%016zx", std::hash<std::string>()(op_key));
  prefix += hash;
  std::string unique = prefix + '_';
  for (int n = 1; !table().prefixes.insert(unique).second; ++n) unique = prefix + '_' + std::to_string(n) + '_';
  return unique;
}

OpFragment::Form lower(const char* op, const std::string& prefix, hlo::Builder::CallerValues caller_values,
                       EmitOpAlone emit, std::vector<hlo::Builder::CallerDependency>* dependencies) {
  hlo::Builder b(op);
  b.set_caller_values(caller_values);
  std::vector<hlo::Value> results = emit(b);
  OpFragment::Form form;
  try {
    form.flow = b.parameter_flow(results);
    if (dependencies) *dependencies = b.caller_dependencies();
    form.function = hlo::import_module(b.build(results), prefix);
  } catch (const hlo::HloError& e) {
    TORCH_CHECK(false, op, ": cannot lower this call for tpu: ", e.what());
  }
  return form;
}

}  // namespace

const OpFragment::Form& OpFragment::form_for(const hlo::Builder& b, const std::vector<hlo::Value>& arguments) const {
  for (const auto& dependency : dependencies) {
    for (int u : dependency.update_parameters) {
      for (int x : dependency.operand_parameters) {
        if (b.may_read_buffer(arguments[u], arguments[x])) return *guarded;
      }
    }
  }
  return plain;
}

std::shared_ptr<const OpFragment> op_fragment(const char* op, const std::string& op_key, EmitOpAlone emit,
                                              bool* lowered) {
  FragmentTable& t = table();
  *lowered = false;
  auto it = t.by_key.find(op_key);
  if (it != t.by_key.end()) return it->second;
  auto fragment = std::make_shared<OpFragment>();
  const std::string prefix = symbol_prefix(op, op_key);
  try {
    fragment->plain = lower(op, prefix, hlo::Builder::CallerValues::kUnknown, emit, &fragment->dependencies);
    if (!fragment->dependencies.empty()) {
      fragment->guarded = std::make_unique<OpFragment::Form>(
          lower(op, prefix + "guarded_", hlo::Builder::CallerValues::kMayShare, emit, nullptr));
    }
  } catch (...) {
    t.prefixes.erase(prefix);  // nothing uses it
    throw;
  }
  const size_t bytes = fragment->plain.function.text.size() + (fragment->guarded ? fragment->guarded->function.text.size() : 0);
  if (t.text_bytes + bytes > kMaxTextBytes) {
    t.by_key.clear();
    t.text_bytes = 0;
  }
  t.text_bytes += bytes;
  t.by_key.emplace(op_key, fragment);
  *lowered = true;
  return fragment;
}

}  // namespace torch_tpu::aten
