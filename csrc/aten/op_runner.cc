#include "aten/op_runner.h"

#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <optional>

#include "aten/allocator.h"
#include "aten/device_scope.h"
#include "aten/diagnostics.h"
#include "aten/dtypes.h"
#include "aten/eager_mode.h"
#include "aten/fused_graph.h"
#include "aten/launch.h"
#include "aten/memory_limit.h"
#include "aten/scalar_cache.h"
#include "aten/trace_profiler.h"
#include "cache/compile_cache.h"
#include "ops/broadcast.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"
#include "runtime/config.h"
#include "runtime/device_queue.h"
#include "runtime/device_time.h"
#include "runtime/runtime.h"
#include "runtime/storage_value.h"

namespace torch_tpu::aten {

namespace {

using runtime::DeviceBuffer;
using runtime::DeviceBufferPtr;

struct Prepared {
  std::string key;
  std::vector<Operand> operands;
  // The runtime offsets of the operands with dynamic_offset, in operand
  // order: the program's first arguments.
  std::vector<ScalarInput> offsets;
  c10::Device device = c10::Device(c10::DeviceType::PrivateUse1, 0);
};

// The distinct buffers of a call so far, kept sorted in one flat array:
// ops have a few operands, _foreach_ ops hundreds, and neither should
// allocate a node per operand.
class SeenBuffers {
 public:
  // The index given with the buffer's first insertion, or nullopt (and
  // `index` kept) when it is new.
  std::optional<size_t> insert(const DeviceBuffer* buffer, size_t index) {
    auto it = std::lower_bound(seen_.begin(), seen_.end(), buffer,
                               [](const auto& entry, const DeviceBuffer* b) { return std::less<>()(entry.first, b); });
    if (it != seen_.end() && it->first == buffer) return it->second;
    seen_.insert(it, {buffer, index});
    return std::nullopt;
  }

 private:
  c10::SmallVector<std::pair<const DeviceBuffer*, size_t>, 16> seen_;
};

// A program binds each distinct buffer once: which operands share one is
// part of the program (x + x reads one parameter, x + y two).
void append_shared_buffers(std::string& key, const std::vector<Operand>& operands) {
  SeenBuffers seen;
  for (size_t i = 0; i < operands.size(); ++i) {
    const DeviceBuffer* buffer = operands[i].buffer.get();
    if (!buffer) continue;
    if (auto first = seen.insert(buffer, i)) {
      key.push_back('S');
      key.append(std::to_string(i)).push_back(',');
      key.append(std::to_string(*first));
    }
  }
}

Prepared prepare(const OpCall& call) {
  Prepared p;
  p.device = common_device(call.tensors, call.name);
  p.key.reserve(64 + call.attributes.size() + 48 * call.tensors.size());
  p.key.append(call.name);
  p.key.push_back('\0');
  p.key.append(call.attributes);
  p.key.push_back('\0');
  p.operands.reserve(call.tensors.size());
  for (const at::Tensor& t : call.tensors) {
    p.operands.push_back(make_operand(t, call.name));
    append_key(p.key, p.operands.back());
    if (p.operands.back().dynamic_offset) {
      p.offsets.push_back({ElementType::kS64, c10::Scalar(p.operands.back().offset)});
    }
  }
  for (const ScalarInput& s : call.scalars) p.key.push_back(static_cast<char>(s.type));
  append_shared_buffers(p.key, p.operands);
  return p;
}

// Visits the program's arguments in the order emit_op binds them (runtime
// view offsets, operands, then scalars, then the storages of partial
// writes), each distinct buffer once: `visit(&buffer)`, or `visit(nullptr)`
// for a scalar (runtime_scalars' order).
template <typename Visit>
void visit_program_arguments(const Prepared& p, size_t n_targets, size_t n_scalars, Visit&& visit) {
  const size_t n_inputs = p.operands.size() - n_targets;
  for (size_t k = 0; k < p.offsets.size(); ++k) visit(nullptr);
  SeenBuffers seen;
  auto add = [&](const DeviceBufferPtr& buffer) {
    const DeviceBuffer* raw = buffer.get();
    if (!raw || seen.insert(raw, 0)) return;
    visit(&buffer);
  };
  for (size_t i = 0; i < n_inputs; ++i) add(p.operands[i].buffer);
  for (size_t k = 0; k < n_scalars; ++k) visit(nullptr);
  for (size_t i = n_inputs; i < p.operands.size(); ++i) {
    if (!p.operands[i].whole_storage) add(p.operands[i].buffer);
  }
}

// The k-th runtime scalar of the program (visit_program_arguments' nulls):
// the view offsets first, then the call's scalars.
const ScalarInput& runtime_scalar(const OpCall& call, const Prepared& p, size_t k) {
  return k < p.offsets.size() ? p.offsets[k] : call.scalars[k - p.offsets.size()];
}

// The program's arguments (visit_program_arguments), null standing for a
// scalar.
std::vector<const DeviceBuffer*> program_arguments(const Prepared& p, size_t n_targets, size_t n_scalars) {
  std::vector<const DeviceBuffer*> args;
  args.reserve(p.offsets.size() + p.operands.size() + n_scalars);
  visit_program_arguments(p, n_targets, n_scalars,
                          [&](const DeviceBufferPtr* buffer) { args.push_back(buffer ? buffer->get() : nullptr); });
  return args;
}

std::string hlo_error(const OpCall& call, const std::exception& e) {
  if (dynamic_cast<const ops::BroadcastError*>(&e)) return e.what();  // already names the op
  return std::string(call.name) + ": cannot lower this call for tpu: " + e.what();
}

// The op as a program of its own, the same in every mode (strict eager
// runs it, fused eager calls it from its graphs): binds one parameter per
// argument, in program_arguments' order (runtime view offsets, operands,
// then scalars, then the storages that partial writes update), runs the
// lowering and writes the last `n_targets` operands' values.
// Returns the program results: the destinations' new storage values first,
// then any further values of the lowering.
std::vector<hlo::Value> emit_op(hlo::Builder& b, const OpCall& call, const Prepared& p, size_t n_targets,
                                const LoweringBody& body) {
  std::vector<std::pair<const DeviceBuffer*, hlo::Value>> bound;
  BindBuffer bind = [&](hlo::Builder& b, const DeviceBufferPtr& buffer) {
    for (const auto& [known, value] : bound) {
      if (known == buffer.get()) return value;
    }
    bound.emplace_back(buffer.get(), b.parameter(buffer->type()));
    return bound.back().second;
  };
  auto bind_scalar = [](hlo::Builder& b, const ScalarInput& s) { return b.parameter(hlo::TensorType::scalar(s.type)); };
  try {
    const size_t n_inputs = p.operands.size() - n_targets;
    std::vector<std::optional<hlo::Value>> offsets(p.operands.size());
    for (size_t i = 0, k = 0; i < p.operands.size(); ++i) {
      if (p.operands[i].dynamic_offset) offsets[i] = bind_scalar(b, p.offsets[k++]);
    }
    auto offset_of = [&](size_t i) { return offsets[i] ? &*offsets[i] : nullptr; };
    std::vector<hlo::Value> tensors;
    tensors.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) tensors.push_back(read_operand(b, p.operands[i], bind, offset_of(i)));
    std::vector<hlo::Value> scalars;
    scalars.reserve(call.scalars.size());
    for (const ScalarInput& s : call.scalars) scalars.push_back(bind_scalar(b, s));
    const Operand* targets = p.operands.data() + n_inputs;
    std::vector<hlo::Value> storages(n_targets);
    std::vector<bool> has_storage(n_targets);
    for (size_t i = 0; i < n_targets; ++i) has_storage[i] = declare_storage(b, targets[i], &storages[i], bind);
    std::vector<hlo::Value> outs = body(b, tensors, scalars);
    // Before XLA sees it: compiling a result larger than the device can
    // take hours (a transposed convolution with stride 2**40).
    for (const hlo::Value& out : outs) {
      double bytes = static_cast<double>(element_size(out.dtype()));
      for (int64_t d : out.dims()) bytes *= static_cast<double>(d);
      check_fits_device(p.device.index(), bytes, std::string("the result of ") + call.name);
    }
    TORCH_INTERNAL_ASSERT(outs.size() >= n_targets, call.name,
                          ": an in-place lowering returns a value per destination");
    for (size_t i = 0; i < n_targets; ++i) {
      hlo::Value value = outs[i];
      value = ops::convert_to(b, value, targets[i].dtype);
      if (value.dims() != targets[i].sizes) {
        TORCH_CHECK(false, call.name, ": result shape ", hlo::dims_to_string(value.dims()),
                    " does not match the destination's ", hlo::dims_to_string(targets[i].sizes));
      }
      outs[i] = write_operand(b, targets[i], has_storage[i] ? &storages[i] : nullptr, value,
                              offset_of(n_inputs + i));
    }
    return outs;
  } catch (const hlo::HloError& e) {
    TORCH_CHECK(false, hlo_error(call, e));
  }
}

// What an op's key is made of, in words (diagnostics.h): the operands and
// scalars first, which a recompile usually comes from and which read as
// types, then the op's attributes (each op's own encoding, its bytes shown
// escaped).
std::vector<std::string> describe_op(const OpCall& call, const Prepared& p) {
  std::vector<std::string> parts;
  std::string attributes;
  for (char c : call.attributes) {
    if (std::isprint(static_cast<unsigned char>(c))) {
      attributes.push_back(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      attributes += hex;
    }
  }
  for (size_t i = 0; i < p.operands.size(); ++i) {
    const Operand& o = p.operands[i];
    std::string text = "operand " + std::to_string(i) + ": " + hlo::TensorType(o.dtype, o.sizes).to_string();
    if (o.direct) {
      text += " dense";
    } else if (!o.buffer) {
      text += " of an unwritten storage";
    } else {
      text += " view (strides " + hlo::dims_to_string(o.strides) + ", offset " +
              (o.dynamic_offset ? std::string("at run time") : std::to_string(o.offset)) + ") of " +
              o.buffer->type().to_string();
    }
    parts.push_back(std::move(text));
  }
  for (size_t i = 0; i < call.scalars.size(); ++i) {
    parts.push_back("scalar " + std::to_string(i) + ": " + hlo::TensorType::scalar(call.scalars[i].type).to_string());
  }
  parts.push_back(std::string(call.name) + " attributes '" + attributes + "'");
  return parts;
}

// Strict eager donation: an in-place op whose program reads the
// destination's buffer (as an operand, or as the storage a partial write
// updates: one argument either way) gets that argument aliased to the
// destination's new value, so PJRT can give the result the input's memory
// (x.mul_(2), x[1:].sub_(1) need no second buffer). Decided from the call
// alone, so the key says it.
struct Donation {
  size_t arg;     // the program argument holding the destination's buffer
  size_t target;  // the destination (its result has the same index)
};

// `args`: program_arguments of the call.
std::vector<Donation> in_place_donations(const Prepared& p, size_t n_targets,
                                         const std::vector<const DeviceBuffer*>& args) {
  std::vector<Donation> donations;
  if (n_targets == 0) return donations;
  const size_t n_inputs = p.operands.size() - n_targets;
  for (size_t t = 0; t < n_targets; ++t) {
    const Operand& target = p.operands[n_inputs + t];
    const DeviceBuffer* buffer = target.buffer.get();
    if (!buffer) continue;
    // Another destination of the same call writes the same buffer.
    bool shared = false;
    for (size_t u = 0; u < n_targets; ++u) shared |= u != t && p.operands[n_inputs + u].buffer.get() == buffer;
    if (shared) continue;
    // The new value must have the buffer's type: for a partial write (it
    // is the storage) unless it turns bool into bytes, for a whole one when
    // the tensor is the buffer's own shape and dtype (not a reinterpreting
    // view).
    const ElementType stored = buffer->type().dtype;
    if (target.whole_storage ? !(stored == target.dtype && buffer->type().dims == target.sizes)
                             : partial_write_dtype(stored, target.dtype) != stored) {
      continue;
    }
    const auto arg = std::find(args.begin(), args.end(), buffer);
    if (arg == args.end()) continue;  // the program does not read it
    donations.push_back({static_cast<size_t>(arg - args.begin()), t});
  }
  return donations;
}

// Runs the op's program now (strict and debug eager) and returns its
// results. `donations` (in_place_donations) are aliased in the program;
// a donated buffer that is free to go is released through
// `release_donated` before the results are counted, so the memory
// statistics see it reused.
// `arguments`: program_arguments of the call, when the caller has them.
std::vector<DeviceBufferPtr> run_now(const OpCall& call, Prepared& p, size_t n_targets, const LoweringBody& body,
                                     const std::vector<const DeviceBuffer*>* arguments = nullptr,
                                     const std::vector<Donation>& donations = {},
                                     c10::function_ref<void(size_t target)> release_donated = nullptr) {
  auto build = [&] {
    hlo::Builder b(call.name);
    std::vector<hlo::Value> results = emit_op(b, call, p, n_targets, body);
    for (const Donation& d : donations) {
      b.alias_parameter(static_cast<int64_t>(d.arg), static_cast<int64_t>(d.target));
    }
    std::string text = b.build(results);
    note_compile(call.name, [&] { return describe_op(call, p); });
    dump_program(call.name, text);
    return text;
  };
  const size_t n_inputs = p.operands.size() - n_targets;
  std::vector<pjrt::c::Buffer*> args;
  std::vector<DeviceBufferPtr> scalars;
  scalars.reserve(p.offsets.size() + call.scalars.size());
  const std::vector<const DeviceBuffer*> computed =
      arguments ? std::vector<const DeviceBuffer*>() : program_arguments(p, n_targets, call.scalars.size());
  for (const DeviceBuffer* buffer : arguments ? *arguments : computed) {
    if (buffer) {
      args.push_back(buffer->get());
    } else {
      const size_t k = scalars.size();
      const ScalarInput& s = runtime_scalar(call, p, k);
      scalars.push_back(cached_scalar_buffer(p.device.index(), s));
      args.push_back(scalars.back()->get());
    }
  }
  // A buffer is free to donate when only the destination's storage and
  // this call's operands hold it.
  std::vector<int64_t> keep;
  std::vector<bool> donated(donations.size());
  for (size_t k = 0; k < donations.size(); ++k) {
    const DeviceBufferPtr& buffer = p.operands[n_inputs + donations[k].target].buffer;
    long holders = 1;
    for (const Operand& o : p.operands) holders += o.buffer == buffer;
    donated[k] = buffer.use_count() == holders;
    if (!donated[k]) keep.push_back(static_cast<int64_t>(donations[k].arg));
  }
  std::vector<hlo::TensorType> types;
  std::vector<pjrt::Buffer> results =
      launch_program_keeping(p.key, call.name, build, args, p.device.index(), keep, &types);
  for (size_t k = 0; k < donations.size(); ++k) {
    if (!donated[k]) continue;
    const size_t target = donations[k].target;
    for (Operand& o : p.operands) {
      if (&o != &p.operands[n_inputs + target] && o.buffer == p.operands[n_inputs + target].buffer) o.buffer.reset();
    }
    p.operands[n_inputs + target].buffer.reset();
    release_donated(target);
  }
  return device_buffers(std::move(results), std::move(types), p.device.index());
}

// Records the op into the device's deferred graph (fused eager) and returns
// its results as pending buffers.
std::vector<DeviceBufferPtr> defer(const OpCall& call, const Prepared& p, size_t n_targets,
                                   const LoweringBody& body) {
  const int device = p.device.index();
  std::vector<OpArgument> arguments;
  arguments.reserve(p.offsets.size() + p.operands.size() + call.scalars.size());
  size_t scalars = 0;
  visit_program_arguments(p, n_targets, call.scalars.size(), [&](const DeviceBufferPtr* buffer) {
    OpArgument argument;
    if (buffer) {
      argument.buffer = buffer;
    } else {
      const size_t k = scalars++;
      argument.scalar = &runtime_scalar(call, p, k);
    }
    arguments.push_back(argument);
  });
  auto emit = [&](hlo::Builder& b) { return emit_op(b, call, p, n_targets, body); };
  auto describe = [&] {
    std::string text = call.name;
    for (const std::string& part : describe_op(call, p)) text += (text == call.name ? ": " : "; ") + part;
    return text;
  };
  return record_op(device, call.name, p.key, p.operands, arguments, emit, describe);
}

std::vector<DeviceBufferPtr> run_or_defer(const OpCall& call, Prepared& p, size_t n_targets,
                                          const LoweringBody& body) {
  if (eager_mode() == EagerMode::kFused && !run_alone_for_shape_churn(p.device.index(), call.name, p.operands)) {
    return defer(call, p, n_targets, body);
  }
  return run_now(call, p, n_targets, body);
}

}  // namespace

std::vector<pjrt::Buffer> launch_program(const std::string& key, const char* op,
                                         c10::function_ref<std::string()> build,
                                         const std::vector<pjrt::c::Buffer*>& args, int device,
                                         std::vector<hlo::TensorType>* types) {
  return launch_program_keeping(key, op, build, args, device, {}, types);
}

namespace {

// XLA's CPU runtime maps each loaded executable's code into memory regions
// of its own (4 - 8 for one op, 50 - 200 for a fused graph of dozens of
// ops); Linux allows a process vm.max_map_count mappings (about 65,000),
// and LLVM's allocation past that fails ("Cannot allocate memory") and
// then crashes the process. A long run that compiles many distinct programs
// (a test suite, shape-varying inference) reaches that, so the memory tier
// is emptied past the configured count of executables, or when the
// process's mappings pass half the limit (counted every 8 new entries),
// but only when every device is idle (an executable must outlive its
// executions; the caller's launch holds its own reference). The disk tier
// reloads what is used again.
size_t count_lines(const char* path) {
  std::FILE* file = std::fopen(path, "r");
  if (!file) return 0;
  char chunk[1 << 16];
  size_t lines = 0, n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) lines += std::count(chunk, chunk + n, '\n');
  std::fclose(file);
  return lines;
}

size_t max_map_count() {
  static const size_t limit = [] {
    std::FILE* file = std::fopen("/proc/sys/vm/max_map_count", "r");
    long long value = 0;
    if (file) {
      if (std::fscanf(file, "%lld", &value) != 1) value = 0;
      std::fclose(file);
    }
    return static_cast<size_t>(value > 0 ? value : 65530);
  }();
  return limit;
}

void keep_loaded_executables_bounded() {
  static const size_t limit = static_cast<size_t>(
      std::max<int64_t>(config::get_int(config::kMaxLoadedExecutables).value_or(4096), 1));
  static std::mutex mutex;
  static size_t entries_at_last_count = 0;
  static bool too_many_mappings = false;
  runtime::Runtime& rt = runtime::Runtime::get();
  const size_t entries = rt.compile_cache().memory_entries();
  std::lock_guard<std::mutex> lock(mutex);
  if (entries < entries_at_last_count) entries_at_last_count = 0;  // emptied since
  if (!too_many_mappings && entries >= entries_at_last_count + 8) {
    entries_at_last_count = entries;
    too_many_mappings = count_lines("/proc/self/maps") > max_map_count() / 2;
  }
  if (entries < limit && !too_many_mappings) return;
  const int devices = static_cast<int>(rt.client().devices().size());
  for (int d = 0; d < devices; ++d) {
    if (!runtime::is_idle(d)) return;
  }
  rt.compile_cache().clear_memory();
  too_many_mappings = false;
  entries_at_last_count = 0;
}

}  // namespace

void raise_device_error(const std::string& what, const std::exception& error, int device, bool count) {
  const auto* pjrt_error = dynamic_cast<const pjrt::PjrtError*>(&error);
  if (pjrt_error && pjrt_error->is_out_of_memory()) {
    if (count) runtime::memory_stats(device).num_ooms.fetch_add(1, std::memory_order_relaxed);
    // "tpu out of memory." first, as CUDA's message begins: libraries that
    // shrink a batch on running out of memory (accelerate) match that text.
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                "tpu out of memory. " + what + ": " + error.what());
  }
  TORCH_CHECK(false, what, " failed: ", error.what());
}

std::vector<pjrt::Buffer> launch_program_keeping(const std::string& key, const char* op,
                                                 c10::function_ref<std::string()> build,
                                                 const std::vector<pjrt::c::Buffer*>& args, int device,
                                                 const std::vector<int64_t>& non_donatable,
                                                 std::vector<hlo::TensorType>* types) {
  // A forked child shares no live PJRT threads with its parent: launching
  // would hang instead of failing.
  TORCH_CHECK(!in_bad_fork(), op, ": cannot use the tpu device in a forked subprocess; use the 'spawn' "
              "start method");
  keep_loaded_executables_bounded();
  std::shared_ptr<pjrt::LoadedExecutable> executable;
  const uint64_t compiles_before = cache::CompileCache::compiles_on_this_thread();
  try {
    executable = runtime::Runtime::get().compile_cache().get_or_compile(key, build);
  } catch (const pjrt::PjrtError& e) {
    finish_compile_note(false);
    TORCH_CHECK(false, op, ": compiling the tpu program failed: ", e.what());
  } catch (...) {
    finish_compile_note(false);
    throw;
  }
  // Explains a recompile only when the lookup compiled (a program loaded
  // from the disk tier is no compile).
  finish_compile_note(cache::CompileCache::compiles_on_this_thread() != compiles_before);
  pjrt::LoadedExecutable::Result result;
  const int64_t launch_ns = runtime::device_time_enabled() ? runtime::steady_now_ns() : -1;
  check_launch_within_limit(device, *executable, non_donatable.empty(), op);
  try {
    result = executable->execute(args, device, non_donatable);
  } catch (const pjrt::PjrtError& e) {
    raise_device_error(std::string(op) + ": launching the tpu program", e, device);
  }
  runtime::track_completion(device, std::move(result.done), launch_ns, {op, trace_correlation_id()});
  if (eager_mode() == EagerMode::kDebug) {
    // Debug eager: the host waits for every program, so a failure names
    // the op that caused it.
    try {
      runtime::synchronize(device);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, op, ": the tpu program failed: ", e.what());
    }
  }
  if (types) {
    for (const auto& spec : executable->outputs()) types->emplace_back(spec.type, spec.dims);
  }
  return std::move(result.outputs);
}

std::vector<DeviceBufferPtr> run_program(const std::string& key, const char* op,
                                         c10::function_ref<std::string()> build,
                                         const std::vector<pjrt::c::Buffer*>& args, int device) {
  std::vector<hlo::TensorType> types;
  std::vector<pjrt::Buffer> results = launch_program(key, op, build, args, device, &types);
  return device_buffers(std::move(results), std::move(types), device);
}

std::vector<DeviceBufferPtr> device_buffers(std::vector<pjrt::Buffer> results, std::vector<hlo::TensorType> types,
                                            int device) {
  TORCH_INTERNAL_ASSERT(results.size() == types.size());
  std::vector<DeviceBufferPtr> buffers;
  buffers.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    buffers.push_back(std::make_shared<DeviceBuffer>(std::move(results[i]), std::move(types[i]), device));
  }
  return buffers;
}

c10::Device common_device(const std::vector<TensorArg>& tensors, const char* op) {
  std::optional<c10::Device> device;
  for (const at::Tensor& t : tensors) {
    if (!device) {
      device = t.device();
    } else if (t.device() != *device) {
      TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ",
                  *device, " and ", t.device(), "! (when checking arguments for ", op, ")");
    }
  }
  TORCH_CHECK(device, op, ": expected tpu tensors, got none");
  // The dispatcher chose this kernel for a tpu argument that is not among
  // `tensors` (an index, a weight): the rest sit on another device.
  TORCH_CHECK(device->type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, tpu and ", *device,
              "! (when checking arguments for ", op, ")");
  return *device;
}

// The tensor's value as a dense buffer of its own shape and dtype.
DeviceBufferPtr dense_value(const at::Tensor& t, const char* op) {
  Operand o = make_operand(t, op);
  if (o.direct) return o.buffer;
  OpCall call{op, "dense", {t}, {}};
  auto identity = [](hlo::Builder&, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{x[0]};
  };
  at::Tensor dense = run_op(call, identity).at(0);
  return make_operand(dense, op).buffer;
}

at::Tensor tensor_from_value(DeviceBufferPtr value, c10::Device device) {
  const auto& type = value->type();
  CurrentDeviceScope scope(value->device());
  at::Tensor t = at::detail::empty_generic(type.dims, tpu_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           to_scalar_type(type.dtype), std::nullopt);
  TORCH_INTERNAL_ASSERT(t.device().index() == device.index() || device.index() < 0);
  set_storage_value(t.storage(), std::move(value));
  return t;
}

std::vector<at::Tensor> run_op(const OpCall& call, const LoweringBody& body) {
  runtime::ValuesLock lock;
  Prepared p = prepare(call);
  std::vector<at::Tensor> out;
  for (auto& value : run_or_defer(call, p, 0, body)) {
    out.push_back(tensor_from_value(std::move(value), p.device));
  }
  return out;
}

namespace {

// Storage::is_alias_of beyond the same StorageImpl only matches storages
// sharing a CPU refcounted deleter, which tpu storages never have: the
// StorageImpls tell. Sorted, so that a _foreach_ op's hundreds of
// destinations cost no quadratic pass.
bool share_a_storage(c10::ArrayRef<at::Tensor> dsts) {
  if (dsts.size() < 2) return false;  // every single-result in-place op
  c10::SmallVector<const c10::StorageImpl*, 16> storages;
  storages.reserve(dsts.size());
  for (const at::Tensor& dst : dsts) storages.push_back(dst.storage().unsafeGetStorageImpl());
  std::sort(storages.begin(), storages.end(), std::less<>());
  return std::adjacent_find(storages.begin(), storages.end()) != storages.end();
}

}  // namespace

std::vector<at::Tensor> run_op_into(const OpCall& call, const LoweringBody& body,
                                    c10::ArrayRef<at::Tensor> dsts) {
  // From reading the destinations' values to putting the results in place.
  runtime::ValuesLock lock;
  for (const at::Tensor& dst : dsts) at::assert_no_internal_overlap(dst);
  const size_t n = dsts.size();
  if (share_a_storage(dsts)) {
    // One program cannot write one storage twice: compute, then write each
    // destination in order, as a loop over the destinations would.
    std::vector<at::Tensor> outs = run_op(call, body);
    TORCH_INTERNAL_ASSERT(outs.size() >= n, call.name, ": fewer results than destinations");
    for (size_t i = 0; i < n; ++i) {
      TORCH_CHECK(outs[i].sizes() == dsts[i].sizes(), call.name, ": result shape ", outs[i].sizes(),
                  " does not match the destination's ", dsts[i].sizes());
      const_cast<at::Tensor&>(dsts[i]).copy_(outs[i]);
    }
    return std::vector<at::Tensor>(outs.begin() + n, outs.end());
  }
  OpCall with_dsts{call.name, call.attributes, {}, call.scalars};
  // The last n operands: the destinations' storages (borrowed: the caller
  // holds them for the whole call).
  with_dsts.tensors.reserve(call.tensors.size() + n);
  with_dsts.tensors.insert(with_dsts.tensors.end(), call.tensors.begin(), call.tensors.end());
  for (const at::Tensor& dst : dsts) with_dsts.tensors.push_back(TensorArg::borrowed(dst));
  Prepared p = prepare(with_dsts);
  p.key.push_back('W');
  p.key.append(std::to_string(n));
  std::vector<DeviceBufferPtr> outputs;
  if (eager_mode() == EagerMode::kFused && !run_alone_for_shape_churn(p.device.index(), call.name, p.operands)) {
    outputs = defer(with_dsts, p, n, body);
  } else {
    const std::vector<const DeviceBuffer*> arguments = program_arguments(p, n, with_dsts.scalars.size());
    const std::vector<Donation> donations = in_place_donations(p, n, arguments);
    for (const Donation& d : donations) {
      p.key.push_back('A');
      p.key.append(std::to_string(d.arg));
    }
    // A donated buffer leaves its storage before the results are counted.
    auto release = [&](size_t target) { storage_value(dsts[target].storage()).set_value(nullptr); };
    outputs = run_now(with_dsts, p, n, body, &arguments, donations, release);
  }
  std::vector<at::Tensor> extras;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < n) {
      if (outputs[i]->pending() && p.operands[p.operands.size() - n + i].buffer) {
        note_overwrite(p.operands[p.operands.size() - n + i].buffer, outputs[i]);
      }
      set_storage_value(dsts[i].storage(), std::move(outputs[i]));
    } else {
      extras.push_back(tensor_from_value(std::move(outputs[i]), p.device));
    }
  }
  return extras;
}

void run_op_into(const OpCall& call, const LoweringBody& body, const at::Tensor& dst) {
  auto extras = run_op_into(call, body, c10::ArrayRef<at::Tensor>(dst));
  TORCH_INTERNAL_ASSERT(extras.empty(), call.name, ": an in-place lowering returned extra values");
}

}  // namespace torch_tpu::aten
