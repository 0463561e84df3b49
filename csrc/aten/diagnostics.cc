#include "aten/diagnostics.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "runtime/config.h"

namespace torch_tpu::aten {

namespace {

struct State {
  std::mutex mutex;
  std::string dump_dir = config::get(config::kDumpDir);
  int64_t dumped = 0;
  std::unordered_map<std::string, std::vector<std::string>> last_parts;
  std::deque<std::string> explanations;
};

State& state() {
  static auto* s = new State();
  return *s;
}

std::atomic<bool> dumping{!config::get(config::kDumpDir).empty()};
std::atomic<bool> explaining{config::get_bool(config::kExplainRecompiles)};

std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '_');
  return out;
}

std::string explain(const std::string& family, const std::vector<std::string>& before,
                    const std::vector<std::string>& now) {
  std::string text = family + " compiled again: ";
  const size_t n = std::min(before.size(), now.size());
  for (size_t i = 0; i < n; ++i) {
    if (before[i] != now[i]) return text + "was '" + before[i] + "', now '" + now[i] + "'";
  }
  if (before.size() != now.size()) {
    return text + std::to_string(before.size()) + " parts before, " + std::to_string(now.size()) +
           " now; first new part: '" + (now.size() > n ? now[n] : before[n]) + "'";
  }
  return text + "same parts; the wiring between them or the results still referenced differ";
}

}  // namespace

std::string dump_dir() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().dump_dir;
}

void set_dump_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().dump_dir = dir;
  dumping = !dir.empty();
}

void dump_program(const std::string& name, const std::string& text) {
  if (!dumping.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(state().mutex);
  const std::string& dir = state().dump_dir;
  if (dir.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  char serial[16];
  std::snprintf(serial, sizeof serial, "%05lld", static_cast<long long>(state().dumped++));
  const auto path = std::filesystem::path(dir) / (std::string(serial) + "-" + file_safe(name) + ".mlir");
  std::ofstream out(path);
  out << text;
  if (!out) TORCH_WARN("torch_tpu: could not dump a program to ", path.string());
}

bool explain_recompiles() { return explaining.load(std::memory_order_relaxed); }
void set_explain_recompiles(bool on) { explaining = on; }

namespace {

struct NotedCompile {
  std::string family;
  std::vector<std::string> parts;
};

// The program this thread is looking up, between note_compile and
// finish_compile_note.
std::optional<NotedCompile>& noted_compile() {
  thread_local std::optional<NotedCompile> noted;
  return noted;
}

}  // namespace

void note_compile(const std::string& family, const std::function<std::vector<std::string>()>& parts) {
  noted_compile().reset();
  if (explain_recompiles()) noted_compile() = NotedCompile{family, parts()};
}

void finish_compile_note(bool compiled) {
  std::optional<NotedCompile> noted = std::move(noted_compile());
  noted_compile().reset();
  if (!noted) return;
  std::string explanation;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    auto it = state().last_parts.find(noted->family);
    if (compiled && it != state().last_parts.end()) {
      explanation = explain(noted->family, it->second, noted->parts);
      state().explanations.push_back(explanation);
      if (state().explanations.size() > 256) state().explanations.pop_front();
    }
    state().last_parts[noted->family] = std::move(noted->parts);
  }
  if (!explanation.empty()) TORCH_WARN("torch_tpu: ", explanation);
}

std::vector<std::string> recompile_explanations() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return {state().explanations.begin(), state().explanations.end()};
}

void clear_recompile_explanations() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().explanations.clear();
  state().last_parts.clear();
}

}  // namespace torch_tpu::aten
