#include "aten/device_graph.h"

#include <ATen/core/GraphImplInterface.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "aten/allocator.h"
#include "aten/captured_program.h"
#include "aten/dtypes.h"
#include "aten/eager_mode.h"
#include "aten/fused_graph.h"
#include "aten/generator.h"
#include "aten/op_runner.h"
#include "runtime/current_device.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

using runtime::DeviceBuffer;
using runtime::DeviceBufferPtr;

namespace {

// What a capture observes while it runs (under runtime::ValuesLock).
struct CaptureLog {
  int device = 0;
  std::thread::id thread = std::this_thread::get_id();
  bool finishing = false;  // the capture's end is running its graphs
  std::vector<RanGraph> graphs;
  // The values the captured ops read from storages that had them before
  // (by identity), with the storage read and any other storage read holding
  // the same value (a clone shares its source's value).
  struct Read {
    c10::Storage storage;
    std::vector<c10::Storage> sharers;
    DeviceBufferPtr value;
  };
  std::unordered_map<const DeviceBuffer*, Read> reads;
  // Every storage written, with its value before the capture's first write.
  struct Write {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    DeviceBufferPtr before;
  };
  std::unordered_map<const c10::StorageImpl*, Write> writes;
  std::vector<RandomDraw> draws;
  struct Check {
    const DeviceBuffer* flag;
    CheckError error;
    std::string message;
  };
  std::vector<Check> checks;
  std::string refused;  // why a host read was refused, if one was
};

// The active capture (under runtime::ValuesLock). The hooks first ask
// capture_recording(), which is true from just before it is set to just
// before it is cleared.
CaptureLog* g_log = nullptr;

// Whether the calling thread's ops belong to the capture: the capturing
// thread's, and those of backward passes (autograd runs them on its own
// thread; eager_mode.cc records them while a capture is active).
bool captures_this_thread(const CaptureLog& log) {
  return log.thread == std::this_thread::get_id() || torch::autograd::get_current_graph_task_id() >= 0;
}

// Zeros for a storage never written that the capture reads, as a flat
// array of the reading tensor's dtype (bytes when it does not divide the
// storage).
DeviceBufferPtr upload_zeros(const c10::Storage& storage, ElementType dtype) {
  const size_t nbytes = storage.nbytes();
  if (nbytes % element_size(dtype) != 0) dtype = ElementType::kU8;
  const int64_t n = static_cast<int64_t>(nbytes / element_size(dtype));
  const int device = storage.device().index();
  std::vector<char> zeros(nbytes);
  pjrt::Buffer buffer = runtime::Runtime::get().client().buffer_from_host(zeros.data(), dtype, {n}, {}, device);
  return std::make_shared<DeviceBuffer>(std::move(buffer), hlo::TensorType(dtype, {n}), device);
}

// What a replay needs.
struct DeviceGraphPlan {
  // Its values are the sources' (by index); a donation's owner is the
  // source whose storage takes a result.
  CapturedProgram program;
  // A storage the program reads, with the type of its value then.
  struct Source {
    c10::Storage storage;
    std::vector<c10::Storage> sharers;  // must still share its value
    hlo::TensorType type;
  };
  std::vector<Source> sources;
  // A storage the capture wrote takes a result, the value a source held
  // before the replay (a copy), or a value fixed at capture (a fill with a
  // constant, a copy from the host).
  enum class UpdateKind : uint8_t { kResult, kSource, kConstant };
  struct Update {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    UpdateKind kind;
    int32_t index = -1;
    DeviceBufferPtr constant;
  };
  std::vector<Update> updates;
  struct Check {
    int32_t result;
    CheckError error;
    std::string message;
  };
  std::vector<Check> checks;
};

using Program = DeviceGraphPlan;

// The value a source must have for the program: the storage's current one,
// re-laid out when something gave the storage a value of another shape
// (a whole copy shares its source's value, in the source's shape).
DeviceBufferPtr source_value(const Program::Source& source) {
  DeviceBufferPtr value = storage_value(source.storage).value();
  for (const c10::Storage& sharer : source.sharers) {
    TORCH_CHECK(storage_value(sharer).value() == value,
                "tpu graph replay: two tensors the graph reads shared one device value when it was captured (one "
                "was a clone of the other) and now hold different values, which the captured program reads as one; "
                "capture the graph again");
  }
  if (value && value->type() == source.type) return value;
  const size_t nbytes = static_cast<size_t>(source.type.num_elements()) * element_size(source.type.dtype);
  TORCH_CHECK(source.storage.nbytes() >= nbytes,
              "tpu graph replay: the storage of a tensor the graph reads was resized since the capture (",
              source.storage.nbytes(), " bytes, the capture read ", nbytes, ")");
  // The storage read as the type the program takes (one copy program).
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(source.storage),
                                                          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                          c10::scalarTypeToTypeMeta(to_scalar_type(source.type.dtype)));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(source.type.dims);
  return dense_value(t, "tpu graph replay");
}

// Works out a replay from what the capture observed, after its graph ran.
// Raises, naming the problem, when something cannot be replayed.
std::shared_ptr<const Program> analyse(CaptureLog& log) {
  auto plan = std::make_shared<Program>();
  Program& g = *plan;
  TORCH_CHECK(log.graphs.size() <= 1, "the captured ops ran as ", log.graphs.size(),
              " programs; a capture records the ops of one device");

  std::unordered_map<const DeviceBuffer*, int32_t> source_of;
  auto find_source = [&](const DeviceBuffer* buffer) -> int32_t {
    auto known = source_of.find(buffer);
    if (known != source_of.end()) return known->second;
    auto read = log.reads.find(buffer);
    if (read == log.reads.end()) return -1;
    const auto index = static_cast<int32_t>(g.sources.size());
    g.sources.push_back({read->second.storage, read->second.sharers, read->second.value->type()});
    source_of.emplace(buffer, index);
    return index;
  };

  std::unordered_map<const DeviceBuffer*, int32_t> results;
  std::vector<DeviceBufferPtr> alive;  // keeps the results' addresses from reuse while they are compared
  std::vector<std::pair<int64_t, int64_t>> aliases;
  g.program.device = log.device;
  if (!log.graphs.empty()) {
    const RanGraph& ran = log.graphs[0];
    aliases = ran.aliases;
    for (size_t r = 0; r < ran.results.size(); ++r) {
      DeviceBufferPtr result = ran.results[r].lock();
      if (!result) continue;
      results.emplace(result.get(), static_cast<int32_t>(r));
      alive.push_back(std::move(result));
    }
    std::string unused_signature;
    const std::string untraced = trace_program(ran, log.draws, find_source, &g.program, &unused_signature);
    TORCH_CHECK(untraced.empty(), untraced,
                " (no tensor read by the capture held it: a value computed by another thread while capturing?)");
  }

  // Where the storages written went.
  for (auto& [impl, write] : log.writes) {
    c10::intrusive_ptr<c10::StorageImpl> storage = write.storage.lock();
    if (!storage) continue;  // dropped inside the capture
    DeviceBufferPtr now = storage_value(*storage).value();
    if (!now || now == write.before) continue;
    Program::Update u{c10::weak_intrusive_ptr<c10::StorageImpl>(storage), Program::UpdateKind::kConstant};
    auto result = results.find(now.get());
    if (result != results.end()) {
      u.kind = Program::UpdateKind::kResult;
      u.index = result->second;
    } else if (const int32_t source = find_source(now.get()); source >= 0) {
      u.kind = Program::UpdateKind::kSource;
      u.index = source;
    } else {
      TORCH_CHECK(!now->pending(), "a tensor written in the capture holds a value computed outside it");
      u.constant = now;
    }
    g.updates.push_back(std::move(u));
  }

  // An aliased argument is a source's old value: donated at a replay when
  // that source's storage takes a result and nothing else holds the value.
  for (const auto& [arg, result] : aliases) {
    const CapturedProgram::Argument& a = g.program.args.at(arg);
    TORCH_CHECK(a.kind == CapturedProgram::Argument::Kind::kValue,
                "the captured program reuses the memory of a scalar argument");
    const Program::Source& source = g.sources[a.index];
    bool updated = false;
    for (const Program::Update& u : g.updates) {
      updated |= u.kind == Program::UpdateKind::kResult &&
                 u.storage._unsafe_get_target() == source.storage.unsafeGetStorageImpl();
    }
    // A source read through several storages is never donated.
    g.program.donations.push_back({static_cast<int32_t>(arg), updated && source.sharers.empty() ? a.index : -1});
  }

  for (const CaptureLog::Check& c : log.checks) {
    auto it = results.find(c.flag);
    if (it != results.end()) g.checks.push_back({it->second, c.error, c.message});
  }
  return plan;
}

// Puts back what the capture changed that existed before it: storages'
// values and the generators' offsets.
void restore(const CaptureLog& log) {
  for (const auto& [impl, write] : log.writes) {
    if (!write.before) continue;  // made (or first written) inside the capture: keeps what it computed
    c10::intrusive_ptr<c10::StorageImpl> storage = write.storage.lock();
    if (storage) storage_value(*storage).set_value(write.before);
  }
  std::vector<const c10::GeneratorImpl*> done;
  for (const RandomDraw& d : log.draws) {
    auto* impl = d.generator.get<TpuGeneratorImpl>();
    if (std::find(done.begin(), done.end(), impl) != done.end()) continue;
    done.push_back(impl);
    std::lock_guard<std::mutex> lock(impl->mutex_);
    if (impl->current_seed() == d.seed) impl->set_offset(d.offset);
  }
}

// The monotonic ids graph_pool_handle() and Graph.pool() hand out.
c10::MempoolId_t new_pool_id() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {0, next.fetch_add(1, std::memory_order_relaxed)};
}

class TpuGraph final : public at::GraphImplInterface {
 public:
  explicit TpuGraph(const at::GraphImplArgs&) {}
  ~TpuGraph() override {
    if (!log_) return;
    // Destroyed while capturing (perhaps by another thread): what it
    // recorded runs and is put back.
    try {
      end_capture();
    } catch (const std::exception&) {
    }
  }

  void capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode /*mode*/) override {
    TORCH_CHECK(!program_ && !log_,
                "tpu graph: this graph already holds a capture; call reset() before capturing again, or use a new "
                "graph");
    pool_ = pool == c10::MempoolId_t{0, 0} ? new_pool_id() : pool;
    auto log = std::make_unique<CaptureLog>();
    log->device = runtime::current_device();
    CaptureLog* observed = log.get();
    {
      runtime::ValuesLock lock;
      TORCH_CHECK(g_log == nullptr, "tpu graph capture: another capture is active; one runs at a time");
      // A torch.compile graph being captured on another thread holds the
      // observer; the capture cannot start then.
      TORCH_CHECK(set_graph_observer([observed](RanGraph graph) {
                    if (observed->finishing && std::this_thread::get_id() == observed->thread) {
                      observed->graphs.push_back(std::move(graph));
                    }
                  }),
                  "tpu graph capture: a torch.compile graph is being captured on another thread");
      previous_mode_ = set_thread_eager_mode(EagerMode::kFused);
      record_into_own_graphs(true);
      if (!begin_capture_recording()) {
        stop_observing(true);
        TORCH_CHECK(false, "tpu graph capture: another capture is active; one runs at a time");
      }
      g_log = log.get();
    }
    log_ = std::move(log);
  }

  void capture_end() override {
    TORCH_CHECK(log_, "tpu graph: capture_end() without capture_begin()");
    TORCH_CHECK(log_->thread == std::this_thread::get_id(),
                "tpu graph: capture_end() must be called by the thread that began the capture");
    end_capture();
  }

  void end_capture() {
    std::unique_ptr<CaptureLog> log = std::move(log_);
    std::string failure;
    {
      runtime::ValuesLock lock;
      log->finishing = true;
      try {
        finish_capture_recording();
      } catch (const c10::Error& e) {
        failure = std::string("running the captured ops failed: ") + e.what_without_backtrace();
      } catch (const std::exception& e) {
        failure = std::string("running the captured ops failed: ") + e.what();
      }
      g_log = nullptr;
      stop_observing(log->thread == std::this_thread::get_id());
      for (const std::string& refused : {capture_refusal(), log->refused}) {
        if (!refused.empty()) failure = refused;
      }
      if (failure.empty()) {
        try {
          program_ = analyse(*log);
        } catch (const c10::Error& e) {
          failure = e.what_without_backtrace();
        }
      }
      restore(*log);
    }
    TORCH_CHECK(failure.empty(), "tpu graph capture failed: ", failure);
  }

  void instantiate() override {
    TORCH_CHECK(program_, "tpu graph: instantiate() before a capture ended");
  }

  void replay() override {
    TORCH_CHECK(program_, "tpu graph: replay() without a captured graph (capture with `with graph:` or "
                          "capture_begin() / capture_end() first; a capture that failed holds none)");
    TORCH_CHECK(!capturing_thread(), "tpu graph: replay() inside a capture");
    run(*program_);
  }

  void reset() override {
    TORCH_CHECK(!log_, "tpu graph: reset() during its capture");
    program_.reset();
  }

  c10::MempoolId_t pool() const override { return pool_; }

  // The program's text is kept whatever the mode: debug_dump works without it.
  void enable_debug_mode() override {}

  void debug_dump(const std::string& path) override {
    TORCH_CHECK(program_, "tpu graph: debug_dump() before a capture ended");
    std::ofstream out(path);
    TORCH_CHECK(out, "tpu graph: cannot write ", path);
    const CapturedProgram& captured = program_->program;
    out << (captured.has_program ? captured.text() : std::string("// the capture recorded no ops\n"));
  }

 private:
  // `capturing_thread`: the thread that began the capture, whose recording
  // settings go back (thread-local: another thread cannot reach them).
  void stop_observing(bool capturing_thread) {
    set_graph_observer(nullptr);
    if (!capturing_thread) return;
    record_into_own_graphs(false);
    try {
      // Leaving fused mode runs this thread's graphs (none once the
      // capture's ran; one the memory cap refused stays pending).
      set_thread_eager_mode(previous_mode_);
    } catch (const std::exception&) {
      // Its results keep the error; whoever reads them gets it.
    }
  }

  static void run(const Program& g);

  std::unique_ptr<CaptureLog> log_;         // while capturing
  std::shared_ptr<const Program> program_;  // once captured
  std::optional<EagerMode> previous_mode_;
  c10::MempoolId_t pool_{0, 0};
};

void TpuGraph::run(const Program& g) {
  // Reads, donates and replaces storages' values as an op does.
  runtime::ValuesLock lock;
  std::vector<DeviceBufferPtr> values;
  values.reserve(g.sources.size());
  for (const Program::Source& source : g.sources) values.push_back(source_value(source));
  // What sources' storages hand to other storages (copies) is their value
  // before the replay.
  std::vector<DeviceBufferPtr> copied(g.updates.size());
  for (size_t i = 0; i < g.updates.size(); ++i) {
    if (g.updates[i].kind == Program::UpdateKind::kSource) copied[i] = values[g.updates[i].index];
  }

  std::vector<DeviceBufferPtr> results = g.program.launch(
      std::move(values), [&](int32_t source) { storage_value(g.sources[source].storage).set_value(nullptr); });
  count_graph_replayed();

  for (size_t i = 0; i < g.updates.size(); ++i) {
    const Program::Update& u = g.updates[i];
    c10::intrusive_ptr<c10::StorageImpl> storage = u.storage.lock();
    if (!storage) continue;  // nobody can see it any more
    switch (u.kind) {
      case Program::UpdateKind::kResult: storage_value(*storage).set_value(results.at(u.index)); break;
      case Program::UpdateKind::kSource: storage_value(*storage).set_value(copied[i]); break;
      case Program::UpdateKind::kConstant: storage_value(*storage).set_value(u.constant); break;
    }
  }
  for (const Program::Check& c : g.checks) {
    defer_check(tensor_from_value(results.at(c.result), c10::Device(c10::DeviceType::PrivateUse1, g.program.device)),
                c.error, c.message);
  }
}

}  // namespace

// ---- hooks -------------------------------------------------------------------

DeviceBufferPtr detail::note_graph_read(const c10::Storage& storage, DeviceBufferPtr value, ElementType dtype) {
  runtime::ValuesLock lock;
  if (!g_log || !captures_this_thread(*g_log)) return value;
  if (value && value->pending()) return value;  // computed inside the capture
  if (!value) {
    if (storage.nbytes() == 0) return value;
    value = upload_zeros(storage, dtype);
    storage_value(storage).set_value(value);  // as it read before: not a write of the capture
  }
  auto [it, added] = g_log->reads.try_emplace(value.get(), CaptureLog::Read{storage, {}, value});
  if (!added && !it->second.storage.is_alias_of(storage)) {
    bool known = false;
    for (const c10::Storage& sharer : it->second.sharers) known |= sharer.is_alias_of(storage);
    if (!known) it->second.sharers.push_back(storage);
  }
  return value;
}

void detail::note_graph_write(const c10::Storage& storage, const DeviceBufferPtr& value) {
  runtime::ValuesLock lock;
  if (!g_log) return;
  if (g_log->thread != std::this_thread::get_id() && !(value && pending_in_capture(*value))) return;
  const c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  auto it = g_log->writes.find(impl);
  // An entry whose storage died was another storage at the same address.
  if (it != g_log->writes.end() && !it->second.storage.expired()) return;
  g_log->writes.insert_or_assign(impl, CaptureLog::Write{storage.getWeakStorageImpl(), storage_value(storage).value()});
}

void note_graph_draw(const at::Generator& generator, uint64_t seed, uint64_t offset, uint64_t increment) {
  if (!capture_recording()) return;
  runtime::ValuesLock lock;
  if (g_log && captures_this_thread(*g_log)) g_log->draws.push_back({generator, seed, offset, increment});
}

void note_graph_check(const DeviceBuffer* flag, CheckError error, const std::string& message) {
  if (!capture_recording()) return;
  runtime::ValuesLock lock;
  if (g_log) g_log->checks.push_back({flag, error, message});
}

void check_graph_host_read() {
  if (!capture_recording()) return;
  runtime::ValuesLock lock;
  if (!g_log || g_log->thread != std::this_thread::get_id()) return;
  g_log->refused =
      "tpu graph capture: the captured code copies a device value to the host (item(), .cpu(), .tolist(), print, or an "
      "op whose result's size depends on values); a captured graph runs only when replayed, so nothing inside the "
      "capture can read its values. Move this out of the captured region.";
  TORCH_CHECK(false, g_log->refused);
}

bool graph_capturing(int device) {
  if (!capture_recording()) return false;
  runtime::ValuesLock lock;
  return g_log && g_log->device == device && g_log->thread == std::this_thread::get_id();
}

}  // namespace torch_tpu::aten

namespace at {
// torch.accelerator.Graph finds a backend's graphs under its device type's
// upper-case name.
C10_REGISTER_CLASS(GraphImplRegistry, TPU, torch_tpu::aten::TpuGraph);
}  // namespace at
