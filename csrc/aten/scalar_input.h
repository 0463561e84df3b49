// A runtime scalar input of an op: a value that changes from call to call
// (alpha, a learning rate, a random op's seed and offset) travels as a 0-dim
// program input, never as a constant, so a new value does not recompile.
#pragma once

#include <c10/core/Scalar.h>

#include <cstdint>

#include "common/element_type.h"

namespace torch_tpu::aten {

// Where a scalar's value comes from. A replayed graph (graph_capture.h)
// reuses plain values and draws seeds and offsets from the generator anew.
enum class ScalarRole : uint8_t {
  kValue,         // fixed by the op's arguments
  kRandomSeed,    // a generator's seed, drawn by next_seed_offset
  kRandomOffset,  // the offset of that same draw
};

struct ScalarInput {
  ElementType type;
  c10::Scalar value;
  ScalarRole role = ScalarRole::kValue;
};

}  // namespace torch_tpu::aten
