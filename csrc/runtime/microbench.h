// Host-time measurements of the runtime's hot path, driven from C++ so that
// Python's own overhead is not counted (benchmarks/runtime.py prints them).
#pragma once

#include <string>
#include <vector>

#include "cache/compile_cache.h"
#include "pjrt/buffer.h"

namespace torch_tpu::runtime {

// Nanoseconds of host time for each of `iterations` launches of the cached
// program under `key`: the cache lookup plus the asynchronous execute,
// without waiting for the device. Every launch's outputs are released
// after the timed region.
std::vector<double> time_cached_launch(cache::CompileCache& cache,
                                       const std::string& key,
                                       const std::string& program,
                                       const std::vector<pjrt::c::Buffer*>& args,
                                       int device, int iterations);

}  // namespace torch_tpu::runtime
