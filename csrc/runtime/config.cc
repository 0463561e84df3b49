#include "runtime/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace torch_tpu::config {

const std::vector<const EnvVar*>& all() {
  static const std::vector<const EnvVar*> vars = {
      &kPjrtPlugin, &kPlatform, &kCacheDir, &kDiskCache, &kCpuDeviceCount, &kClientOptions,
      &kCpuFallback,
      &kEagerMode, &kFusedMaxOps, &kFusedMaxChain, &kFusedMaxKernel, &kFusedShapeChurn, &kFusedSplitBackward, &kDumpDir, &kExplainRecompiles, &kMaxLoadedExecutables,
  };
  return vars;
}

std::string get(const EnvVar& var) {
  const char* value = std::getenv(var.name);
  if (value == nullptr || *value == '\0') return var.default_value;
  return value;
}

bool get_bool(const EnvVar& var) {
  std::string value = get(var);
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return !(value == "0" || value == "false" || value == "off" ||
           value == "no" || value.empty());
}

std::optional<int64_t> get_int(const EnvVar& var) {
  std::string value = get(var);
  if (value.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t parsed = std::stoll(value, &used);
    if (used == value.size()) return parsed;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(std::string(var.name) + "='" + value +
                              "' is not an integer");
}

const EnvVar& find(const std::string& name) {
  for (const EnvVar* var : all()) {
    if (name == var->name) return *var;
  }
  throw std::invalid_argument("'" + name +
                              "' is not a torch_tpu configuration variable");
}

}  // namespace torch_tpu::config
