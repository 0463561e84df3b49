// Diagnostics of the compile path: dumping the StableHLO of every program
// that is built for compilation, and explaining recompiles (which part of a
// program's key differs from the last program of the same op or graph).
// Both cost nothing while off.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace torch_tpu::aten {

// The directory programs are dumped to; empty: off. Starts from
// TORCH_TPU_DUMP_DIR.
std::string dump_dir();
void set_dump_dir(const std::string& dir);

// Writes `text` to <dump_dir>/<serial>-<name>.mlir when dumping is on.
void dump_program(const std::string& name, const std::string& text);

bool explain_recompiles();
void set_explain_recompiles(bool on);

// A program of `family` (an op name, or "fused graph") missed the memory
// cache and its text is being built; `parts` describe what its key is made
// of. When explaining is on, they are kept until finish_compile_note.
void note_compile(const std::string& family, const std::function<std::vector<std::string>()>& parts);

// The cache lookup that built the noted text ended. When it `compiled`
// (rather than loaded the program from disk), compares the parts with the
// last program of the same family, records the explanation and warns with
// it. Either way they become the family's last.
void finish_compile_note(bool compiled);

// The explanations recorded so far, oldest first (at most the last 256).
std::vector<std::string> recompile_explanations();
void clear_recompile_explanations();

}  // namespace torch_tpu::aten
