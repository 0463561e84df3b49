// xla.CompileOptionsProto, hand-encoded: the few fields this project sets.
// Plugins abort on empty options, so every compile sends at least the
// replica and partition counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace torch_tpu::pjrt {

struct CompileOptions {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  bool use_spmd_partitioning = false;
  // A portable program runs on whichever single device execute() names;
  // per-op programs are portable so one cache entry serves every device.
  bool portable = true;
  // device_assignment[replica][partition] = device id; empty: the plugin's
  // default assignment.
  std::vector<std::vector<int64_t>> device_assignment;
  // XLA option overrides (e.g. "xla_cpu_enable_fast_math" -> false).
  std::map<std::string, std::variant<std::string, bool, int64_t, double>>
      env_option_overrides;

  // The serialized CompileOptionsProto.
  std::string serialize() const;
};

}  // namespace torch_tpu::pjrt
