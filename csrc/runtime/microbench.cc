#include "runtime/microbench.h"

#include <chrono>

#include "pjrt/executable.h"

namespace torch_tpu::runtime {

std::vector<double> time_cached_launch(cache::CompileCache& cache,
                                       const std::string& key,
                                       const std::string& program,
                                       const std::vector<pjrt::c::Buffer*>& args,
                                       int device, int iterations) {
  using Clock = std::chrono::steady_clock;
  auto build = [&] { return program; };
  // Warm up: the first call compiles (or loads from disk).
  cache.get_or_compile(key, build)->execute(args, device).done.await();

  std::vector<double> ns(iterations);
  std::vector<pjrt::LoadedExecutable::Result> results(iterations);
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    auto executable = cache.get_or_compile(key, build);
    results[i] = executable->execute(args, device);
    ns[i] = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }
  for (auto& r : results) r.done.await();
  return ns;
}

}  // namespace torch_tpu::runtime
