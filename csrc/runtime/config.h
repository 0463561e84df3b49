// Every environment variable torch-tpu reads is declared here, once, with
// its meaning and default. Nothing else in the project calls getenv();
// docs/configuration.md lists the same table (a test keeps them in step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torch_tpu::config {

struct EnvVar {
  const char* name;
  const char* default_value;  // "" means unset
  const char* meaning;
};

inline constexpr EnvVar kPjrtPlugin{
    "TORCH_TPU_PJRT_PLUGIN", "",
    "Path of the PJRT plugin to load. Wins over discovery (libtpu, then a "
    "CUDA plugin, then the XLA CPU plugin wheel)."};
inline constexpr EnvVar kPlatform{
    "TORCH_TPU_PLATFORM", "",
    "Restrict plugin discovery to one platform: 'tpu', 'cuda' or 'cpu'."};
inline constexpr EnvVar kCacheDir{
    "TORCH_TPU_CACHE_DIR", "",
    "Directory of the persistent compile cache. Default: "
    "$XDG_CACHE_HOME/torch_tpu, else ~/.cache/torch_tpu."};
inline constexpr EnvVar kDiskCache{
    "TORCH_TPU_DISK_CACHE", "1",
    "Set to 0 to disable the disk tier of the compile cache."};
inline constexpr EnvVar kCpuDeviceCount{
    "TORCH_TPU_CPU_DEVICE_COUNT", "",
    "Number of devices the XLA CPU plugin exposes (its default when unset)."};
inline constexpr EnvVar kClientOptions{
    "TORCH_TPU_PJRT_CLIENT_OPTIONS", "",
    "Options the plugin's client is created with, as name=value pairs "
    "separated by commas: true / false are booleans, integers int64, other "
    "numbers floats, anything else a string. The CUDA plugin takes "
    "'preallocate', 'memory_fraction' and 'allocator' (see "
    "docs/plugins.md)."};

inline constexpr EnvVar kCpuFallback{
    "TORCH_TPU_CPU_FALLBACK", "0",
    "Set to 1 to run ops that have no tpu lowering on the CPU (copying their "
    "inputs and outputs) with a warning once per op, instead of raising "
    "NotImplementedError."};

inline constexpr EnvVar kEagerMode{
    "TORCH_TPU_EAGER_MODE", "strict",
    "The eager execution mode at start-up: 'strict' (each op one program, "
    "launched asynchronously), 'fused' (ops deferred into one program per "
    "sync point) or 'debug' (blocking after each op). "
    "torch_tpu.set_eager_mode() switches it at run time."};
inline constexpr EnvVar kFusedMaxOps{
    "TORCH_TPU_FUSED_MAX_OPS", "2000",
    "In fused eager mode, how large a deferred graph may grow before it is "
    "materialized, in op results (most ops have one; a _foreach_ op over n "
    "tensors has n)."};
inline constexpr EnvVar kFusedMaxChain{
    "TORCH_TPU_FUSED_MAX_CHAIN", "32",
    "In fused eager mode and compiled programs, how many cheap elementwise "
    "ops (add, multiply, select, reshape, ...) a run may chain before the "
    "graph computes its value once for the rest of the graph; 0: no limit."};
inline constexpr EnvVar kFusedMaxKernel{
    "TORCH_TPU_FUSED_MAX_KERNEL", "256",
    "In fused eager mode and compiled programs, how many elementwise ops "
    "the graph lets XLA fuse into one kernel before it keeps a value as a "
    "program output, computed in a kernel of its own; 0: no limit."};
inline constexpr EnvVar kFusedShapeChurn{
    "TORCH_TPU_FUSED_SHAPE_CHURN", "2",
    "In fused eager mode, after how many recompiles of a graph in a row "
    "that changed the shapes of the same few of its ops (a sequence growing "
    "by a token each step) those ops run as programs of their own, so the "
    "rest of the graph keeps its shapes and its program; 0: never."};
inline constexpr EnvVar kFusedSplitBackward{
    "TORCH_TPU_FUSED_SPLIT_BACKWARD", "1",
    "In fused eager mode, launch the graph a backward pass starts from (the "
    "forward) when the pass records its first op, so that the device runs "
    "it while the host records the backward; 0 keeps forward and backward "
    "in one program, which holds less device memory."};

inline constexpr EnvVar kDumpDir{
    "TORCH_TPU_DUMP_DIR", "",
    "Directory to write the StableHLO of every program built for compilation "
    "to (one .mlir file each); unset: no dump. "
    "torch_tpu.diagnostics.set_dump_dir() switches it at run time."};
inline constexpr EnvVar kExplainRecompiles{
    "TORCH_TPU_EXPLAIN_RECOMPILES", "0",
    "Set to 1 to warn, at each compile of an op or fused graph compiled "
    "before in another form, which part of its key changed."};

inline constexpr EnvVar kMaxLoadedExecutables{
    "TORCH_TPU_MAX_LOADED_EXECUTABLES", "4096",
    "How many compiled programs the in-memory compile cache keeps loaded. "
    "Past it, the memory tier is emptied once the devices are idle (the disk "
    "tier reloads what is used again): each loaded executable takes several "
    "memory mappings of its own, and a process has about 65,000 at most. The "
    "tier is also emptied when the process's mappings pass half of "
    "vm.max_map_count, whatever this count."};

// All declared variables, in the order above.
const std::vector<const EnvVar*>& all();

// The variable's value, or its default when unset or empty.
std::string get(const EnvVar& var);
// "0", "false", "off", "no" (any case) are false; anything else is true.
bool get_bool(const EnvVar& var);
// nullopt when unset; throws std::invalid_argument naming the variable
// when the value is not an integer.
std::optional<int64_t> get_int(const EnvVar& var);

// Looks a declared variable up by name (for the Python layer); throws
// std::invalid_argument for an undeclared name.
const EnvVar& find(const std::string& name);

}  // namespace torch_tpu::config
