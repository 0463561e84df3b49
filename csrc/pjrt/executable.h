// A compiled program loaded on a client (PJRT_LoadedExecutable).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/element_type.h"
#include "pjrt/buffer.h"
#include "pjrt/event.h"

namespace torch_tpu::pjrt {

class Client;

struct OutputSpec {
  ElementType type;
  std::vector<int64_t> dims;
};

// What one execution takes on its device, from XLA's buffer assignment.
struct ExecutionMemory {
  int64_t outputs = 0;  // bytes of the results
  int64_t aliased = 0;  // of those, bytes that reuse donated arguments
};

class LoadedExecutable {
 public:
  LoadedExecutable(std::shared_ptr<const Client> client,
                   c::LoadedExecutable* executable);
  ~LoadedExecutable();
  LoadedExecutable(const LoadedExecutable&) = delete;
  LoadedExecutable& operator=(const LoadedExecutable&) = delete;

  const std::string& name() const { return name_; }
  size_t num_outputs() const { return outputs_.size(); }
  const std::vector<OutputSpec>& outputs() const { return outputs_; }
  int64_t generated_code_size() const;
  // Empty when the plugin does not compute one.
  std::string fingerprint() const;
  // Asked of the plugin once; nullopt when it does not say.
  const std::optional<ExecutionMemory>& execution_memory() const;

  // Opaque bytes that Client::deserialize turns back into this program,
  // on the same plugin and XLA version.
  std::string serialize() const;

  struct Result {
    std::vector<Buffer> outputs;
    Event done;  // fires when the execution has finished
  };

  // Launches on one device and returns without waiting. An input that the
  // program aliases to an output is donated (consumed) unless its index is
  // in `non_donatable`.
  Result execute(const std::vector<c::Buffer*>& arguments, int device,
                 const std::vector<int64_t>& non_donatable = {}) const;

 private:
  const c::Api* api() const;

  std::shared_ptr<const Client> client_;
  c::LoadedExecutable* loaded_;
  c::Executable* executable_;  // owned view used for metadata queries
  std::string name_;
  std::vector<OutputSpec> outputs_;
  mutable std::once_flag memory_once_;
  mutable std::optional<ExecutionMemory> memory_;
};

}  // namespace torch_tpu::pjrt
