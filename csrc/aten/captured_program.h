// The program a capture watched, as its replays launch it.
//
// Both captures (graph_capture.h for torch.compile's graphs, device_graph.h
// for torch.accelerator.Graph) watch one fused graph run and launch its
// program again later with new arguments: a device buffer is replaced by
// the new value of whatever held it (each capture traces buffers its own
// way: a graph's inputs, or tensor storages), a runtime scalar stays as it
// was, and a random op's seed and offset are drawn again from the
// generator they came from. An argument the program writes its result
// into (an in-place update) is donated when nothing else holds it.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <functional>
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

struct CapturedProgram {
  struct Argument {
    enum class Kind : uint8_t { kValue, kScalar, kSeed, kOffset };
    Kind kind;
    int32_t index = -1;               // kValue: the traced value; kSeed, kOffset: the draw
    runtime::DeviceBufferPtr scalar;  // kScalar: its cached buffer
  };
  struct Draw {
    at::Generator generator;
    uint64_t increment;
  };
  // An argument the program may write a result into: donated at a replay
  // when `owner` (the capture's index of what holds the value; -1: never)
  // takes a new value and nothing else holds the value.
  struct Donation {
    int32_t arg, owner;
  };

  int device = 0;
  bool has_program = false;
  std::string key, name;
  std::function<std::string()> text;
  size_t n_results = 0;
  std::vector<Argument> args;
  std::vector<Draw> draws;
  std::vector<Donation> donations;

  // Launches the program on `values` (the traced values, by index), drawing
  // new seeds; `release(owner)` drops an owner's old value once its memory
  // went to a result. Returns the results (none without a program).
  std::vector<runtime::DeviceBufferPtr> launch(std::vector<runtime::DeviceBufferPtr> values,
                                               const std::function<void(int32_t)>& release) const;
};

// Fills `program` from `ran`: its key, name, text, results, and arguments,
// a buffer as the index `value_index` gives it (-1: not traced, which
// fails), a scalar fixed, a seed and offset as the one draw in `draws` that
// took them (the draws the program uses are kept, in order). Donations are
// the caller's. Returns why the program cannot be traced (empty when it
// can). Appends each scalar's exact value to `signature`.
std::string trace_program(const RanGraph& ran, const std::vector<RandomDraw>& draws,
                          const std::function<int32_t(const runtime::DeviceBuffer*)>& value_index,
                          CapturedProgram* program, std::string* signature);

}  // namespace torch_tpu::aten
