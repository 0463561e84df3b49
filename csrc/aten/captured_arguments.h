// Where the arguments of a program that a capture watched came from.
//
// Both captures (graph_capture.h for torch.compile's graphs, device_graph.h
// for torch.accelerator.Graph) watch one fused graph run and must launch
// its program again later with new arguments: a device buffer is replaced
// by the new value of whatever held it (each capture traces buffers its own
// way), a runtime scalar stays as it was, and a random op's seed and
// offset are drawn again from the generator they came from.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aten/fused_graph.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

// A random op drew (seed, offset) from `generator`, advancing it by
// `increment`.
struct RandomDraw {
  at::Generator generator;
  uint64_t seed, offset, increment;
};

struct CapturedArgument {
  enum class Kind : uint8_t { kBuffer, kScalar, kSeed, kOffset };
  Kind kind;
  // kBuffer: the buffer the program read (identity only); kScalar: the
  // scalar's cached buffer.
  const runtime::DeviceBuffer* buffer = nullptr;
  runtime::DeviceBufferPtr scalar;
  int32_t draw = -1;  // kSeed, kOffset: the index in `draws`
};

// The program's arguments in order, drawn from `ran`'s parameters; the
// seed and offset of a random op are matched with the one draw in `draws`
// that took them. Returns why the arguments cannot be traced (empty when
// they can). Appends each scalar's exact value to `signature`.
std::string trace_arguments(const RanGraph& ran, const std::vector<RandomDraw>& draws,
                            std::vector<CapturedArgument>* arguments, std::string* signature);

// The device buffer a replay passes for a random op's seed or offset (a
// u64 scalar, cached).
runtime::DeviceBufferPtr seed_buffer(int device, uint64_t value);

}  // namespace torch_tpu::aten
