// Standalone tests for csrc/cache against the XLA CPU PJRT plugin.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "cache/compile_cache.h"
#include "cache/disk_cache.h"
#include "cache/fingerprint.h"
#include "cache/warnings.h"
#include "pjrt/error.h"

using namespace torch_tpu;
using namespace torch_tpu::cache;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

static std::vector<std::string> g_warnings;
static std::mutex g_warn_mutex;
static void capture_warnings() {
  set_warning_handler([](const std::string& m) {
    std::lock_guard<std::mutex> l(g_warn_mutex);
    g_warnings.push_back(m);
  });
}
static size_t take_warnings() {
  std::lock_guard<std::mutex> l(g_warn_mutex);
  size_t n = g_warnings.size();
  for (auto& w : g_warnings) std::cerr << "  [warning] " << w << "\n";
  g_warnings.clear();
  return n;
}

static std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
static void write_file(const std::string& p, const std::string& d) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << d;
}
static std::string tempdir() {
  char t[] = "/tmp/ttpu_cache_XXXXXX";
  CHECK(mkdtemp(t));
  return t;
}

static void test_fingerprint() {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  const Fingerprint whole = fingerprint(data);
  for (size_t split : {0, 1, 7, 15, 16, 17, 500, 999, 1000}) {
    Hasher h;
    h.update(std::string_view(data).substr(0, split));
    h.update(std::string_view(data).substr(split));
    CHECK(h.finish() == whole);
  }
  CHECK(whole.to_hex().size() == 32);
  std::set<std::string> seen;
  seen.insert(fingerprint("").to_hex());
  for (int n = 1; n <= 40; ++n) seen.insert(fingerprint(std::string(n, '\0')).to_hex());
  for (int i = 0; i < 20000; ++i) seen.insert(fingerprint("op" + std::to_string(i)).to_hex());
  CHECK(seen.size() == 41 + 20000);
  // Single bit flips change roughly half the bits.
  std::string a(64, 'x');
  const Fingerprint fa = fingerprint(a);
  for (int bit = 0; bit < 64 * 8; ++bit) {
    std::string b = a;
    b[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    const Fingerprint fb = fingerprint(b);
    int diff = __builtin_popcountll(fa.hi ^ fb.hi) + __builtin_popcountll(fa.lo ^ fb.lo);
    CHECK(diff > 32 && diff < 96);
  }
  std::printf("fingerprint ok: %s\n", whole.to_hex().c_str());
}

static void test_disk_cache() {
  const std::string root = tempdir() + "/a/b";
  DiskCache disk(root, "CPU Plugin/x", "identity-1");
  CHECK(disk.directory().find(root + "/cpu_plugin_x-") == 0);
  const Fingerprint fp = fingerprint("prog");
  CHECK(!disk.load(fp, "prog"));
  CHECK(take_warnings() == 0);
  CHECK(disk.store(fp, "prog", std::string("exe\0bytes", 9)));
  auto got = disk.load(fp, "prog");
  CHECK(got && *got == std::string("exe\0bytes", 9));
  struct stat st;
  CHECK(stat(disk.entry_path(fp).c_str(), &st) == 0 && (st.st_mode & 0777) == 0600);
  CHECK(stat(disk.directory().c_str(), &st) == 0 && (st.st_mode & 0777) == 0700);
  CHECK(stat(root.c_str(), &st) == 0 && (st.st_mode & 0777) == 0700);
  // Different program under the same fingerprint: rejected and removed.
  bool rejected = false;
  CHECK(!disk.load(fp, "other", &rejected) && rejected);
  CHECK(take_warnings() == 1);
  CHECK(access(disk.entry_path(fp).c_str(), F_OK) != 0);
  // Foreign identity (same directory, forged by copying).
  DiskCache other(root, "CPU Plugin/x", "identity-2");
  CHECK(other.directory() != disk.directory());
  CHECK(other.store(fp, "prog", "zzz"));
  write_file(disk.entry_path(fp), read_file(other.entry_path(fp)));
  chmod(disk.entry_path(fp).c_str(), 0600);
  CHECK(!disk.load(fp, "prog", &rejected) && rejected);
  CHECK(take_warnings() == 1);
  // Truncations and bit flips at every position.
  CHECK(disk.store(fp, "prog", "0123456789"));
  const std::string good = read_file(disk.entry_path(fp));
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(disk.entry_path(fp), good.substr(0, n));
    CHECK(!disk.load(fp, "prog", &rejected) && rejected);
    std::string bad = good;
    bad[n] ^= 0x10;
    write_file(disk.entry_path(fp), bad);
    CHECK(!disk.load(fp, "prog", &rejected) && rejected);
  }
  write_file(disk.entry_path(fp), good + "x");
  CHECK(!disk.load(fp, "prog", &rejected) && rejected);
  CHECK(take_warnings() == 2 * good.size() + 1);
  // World-writable entry is refused and not removed.
  write_file(disk.entry_path(fp), good);
  chmod(disk.entry_path(fp).c_str(), 0666);
  CHECK(!disk.load(fp, "prog", &rejected) && rejected);
  CHECK(take_warnings() == 1);
  chmod(disk.entry_path(fp).c_str(), 0600);
  CHECK(disk.load(fp, "prog"));
  // Symlink refused.
  const Fingerprint fp2 = fingerprint("prog2");
  CHECK(symlink(disk.entry_path(fp).c_str(), disk.entry_path(fp2).c_str()) == 0);
  CHECK(!disk.load(fp2, "prog", &rejected) && rejected);
  CHECK(take_warnings() == 1);
  // Read-only directory: store fails with one warning, never throws.
  if (geteuid() != 0) {
    chmod(disk.directory().c_str(), 0500);
    CHECK(!disk.store(fingerprint("p3"), "p3", "e"));
    CHECK(!disk.store(fingerprint("p4"), "p4", "e"));
    CHECK(take_warnings() == 1);
    chmod(disk.directory().c_str(), 0700);
  } else {
    std::printf("  (running as root: read-only directory test skipped)\n");
  }
  // Unwritable root (a file in the way).
  const std::string file_root = tempdir() + "/file";
  write_file(file_root, "x");
  DiskCache blocked(file_root, "cpu", "id");
  CHECK(!blocked.store(fp, "prog", "e"));
  CHECK(take_warnings() == 1);
  // No temporaries left behind.
  std::string ls = disk.directory();
  CHECK(system(("test -z \"$(ls -A " + ls + " | grep tmp)\"").c_str()) == 0);
  std::printf("disk cache ok\n");
}

static std::string add_program(int n) {
  return "module @m {\n  func.func public @main(%arg0: tensor<" + std::to_string(n) +
         "xf32>) -> tensor<" + std::to_string(n) +
         "xf32> {\n    %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<" + std::to_string(n) +
         "xf32>, tensor<" + std::to_string(n) + "xf32>) -> tensor<" + std::to_string(n) +
         "xf32>\n    \"func.return\"(%0) : (tensor<" + std::to_string(n) + "xf32>) -> ()\n  }\n}\n";
}

static void run_add(const std::shared_ptr<pjrt::Client>& client,
                    const std::shared_ptr<pjrt::LoadedExecutable>& exe) {
  float in[3] = {1, 2, 3}, out[3] = {};
  auto buf = client->buffer_from_host(in, ElementType::kF32, {3}, {}, 0);
  auto result = exe->execute({buf.get()}, 0);
  result.outputs[0].to_host(out, sizeof out);
  CHECK(out[0] == 2 && out[1] == 4 && out[2] == 6);
}

static void test_compile_cache(const std::string& plugin_path) {
  auto plugin = pjrt::Plugin::load(plugin_path);
  auto client = pjrt::Client::create(plugin);
  std::printf("identity:\n%s\n", plugin_identity(*client).c_str());
  const std::string root = tempdir();
  {
    CompileCache cache(client, root);
    CHECK(cache.disk_dir() == root);
    int builds = 0;
    auto build = [&] { ++builds; return add_program(3); };
    auto e1 = cache.get_or_compile("add:f32[3]", build);
    auto e2 = cache.get_or_compile("add:f32[3]", build);
    CHECK(e1 == e2 && builds == 1);
    run_add(client, e1);
    auto e3 = cache.get_or_compile("add-alias", build);  // same program, new key
    CHECK(e3 == e1 && builds == 2);
    auto s = cache.stats();
    CHECK(s.requests == 3 && s.memory_hits == 2 && s.compiles == 1 && s.disk_hits == 0);
    CHECK(s.disk_writes == 1 && s.disk_errors == 0 && s.compile_seconds > 0);
    CHECK(cache.memory_entries() == 2 && cache.memory_executables() == 1);
    // Concurrent misses on one key: one build, one compile.
    std::atomic<int> concurrent_builds{0};
    std::vector<std::thread> threads;
    std::vector<std::shared_ptr<pjrt::LoadedExecutable>> results(16);
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        results[t] = cache.get_or_compile("add:f32[5]", [&] {
          ++concurrent_builds;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return add_program(5);
        });
      });
    }
    for (auto& t : threads) t.join();
    CHECK(concurrent_builds == 1);
    for (auto& r : results) CHECK(r == results[0]);
    s = cache.stats();
    CHECK(s.compiles == 2 && s.requests == 19 && s.memory_hits == 17);
    // Failure: every waiter gets the PjrtError, the key is not poisoned.
    std::atomic<int> errors{0}, fail_builds{0};
    threads.clear();
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        try {
          cache.get_or_compile("bad", [&] {
            ++fail_builds;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            return std::string("this is not mlir");
          });
        } catch (const pjrt::PjrtError& e) {
          ++errors;
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(errors == 8 && fail_builds == 1);
    try {
      cache.get_or_compile("bad", [] { return std::string("still not mlir"); });
      CHECK(false);
    } catch (const pjrt::PjrtError& e) {
      std::printf("compile error propagated: %.80s...\n", e.what());
    }
    auto good = cache.get_or_compile("bad", [] { return add_program(3); });
    CHECK(good == e1);
    // build_program throwing: same story.
    try {
      cache.get_or_compile("throws", []() -> std::string { throw std::logic_error("nope"); });
      CHECK(false);
    } catch (const std::logic_error&) {
    }
    CHECK(cache.get_or_compile("throws", [] { return add_program(3); }) == e1);
    // Different options: different program.
    pjrt::CompileOptions opts;
    opts.env_option_overrides["xla_cpu_enable_fast_math"] = false;
    auto e4 = cache.get_or_compile("add:f32[3]:nofastmath", [] { return add_program(3); }, opts);
    CHECK(e4 != e1);
    run_add(client, e4);
    {
      const std::string key = "aten::add.Tensor|f32[128,256]|f32[128,256]|alpha=1";
      auto never = []() -> std::string { std::abort(); };
      cache.get_or_compile(key, [] { return add_program(3); });
      const int n = 1000000;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) cache.get_or_compile(key, never);
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
      std::printf("hot path hit: %.1f ns\n", ns);
    }
    cache.clear_memory();
    CHECK(cache.memory_entries() == 0 && cache.memory_executables() == 0);
    CHECK(take_warnings() == 0);
  }
  {
    // A new cache (as in a new process) loads from disk.
    CompileCache cache(client, root);
    auto e = cache.get_or_compile("add:f32[3]", [] { return add_program(3); });
    run_add(client, e);
    auto s = cache.stats();
    CHECK(s.disk_hits == 1 && s.compiles == 0 && s.disk_load_seconds > 0);
    std::printf("disk load %.4fs\n", s.disk_load_seconds);
    // Now an entry with a valid envelope but bytes the plugin rejects.
    const std::string text = add_program(7);
    const std::string opts = pjrt::CompileOptions{}.serialize();
    std::string record;
    for (int i = 0; i < 8; ++i) record.push_back(static_cast<char>(uint64_t(opts.size()) >> (8 * i)));
    record += opts + text;
    const Fingerprint fp = fingerprint(record);
    CHECK(fp == Hasher().update_u64(opts.size()).update(opts).update(text).finish());
    CHECK(cache.disk()->store(fp, record, "garbage executable"));
    auto e7 = cache.get_or_compile("add:f32[7]", [&] { return text; });
    s = cache.stats();
    CHECK(s.disk_errors == 1 && s.compiles == 1 && s.disk_writes == 1);
    CHECK(take_warnings() == 1);
    CompileCache again(client, root);
    again.get_or_compile("add:f32[7]", [&] { return text; });
    CHECK(again.stats().disk_hits == 1);
  }
  {
    // No disk tier.
    CompileCache cache(client, std::nullopt);
    CHECK(!cache.disk_dir());
    cache.get_or_compile("k", [] { return add_program(3); });
    CHECK(cache.stats().compiles == 1);
  }
  std::printf("compile cache ok\n");
}

int main(int argc, char** argv) {
  capture_warnings();
  test_fingerprint();
  test_disk_cache();
  if (argc > 1) test_compile_cache(argv[1]);
  set_warning_handler(nullptr);
  warn("default handler check");
  std::printf("ALL OK\n");
}
