// Importing a whole StableHLO module as a function another module can call.
//
// A custom kernel arrives as a module of its own: built with the Builder,
// exported by JAX (`jax.jit(f).lower(...).as_text()`, Pallas kernels
// included), or written by hand. To run it inside an op's program, or inside
// a fused graph among other ops, its functions are moved into the calling
// module under new names: every function of the module becomes private and
// gets `symbol_prefix` in front of its name, so two kernels (or the same one
// twice) never clash, and the entry function (@main) is then called with
// func.call (Builder::call_function). XLA inlines such calls.
//
// The text is not fully parsed: the importer finds the module's functions,
// renames their symbols outside string literals, and parses the entry
// function's signature for its parameter and result types. Anything it does
// not understand (dynamic shapes, tokens, top-level ops other than
// func.func, attribute aliases) is refused with an HloError naming the
// problem; the compiler checks the rest when the calling program compiles.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hlo/types.h"

namespace torch_tpu::hlo {

struct ImportedFunction {
  std::string symbol;  // the entry function's name in the calling module
  std::string text;    // every function of the module, renamed and private
  std::vector<std::string> defined_symbols;  // the names `text` defines
  std::vector<TensorType> parameter_types;
  std::vector<TensorType> result_types;
};

// `symbol_prefix` must be a valid symbol start ([A-Za-z_][A-Za-z0-9_]*);
// `entry` names the function to call (JAX and the Builder both use "main").
ImportedFunction import_module(std::string_view module_text,
                               std::string_view symbol_prefix,
                               std::string_view entry = "main");

// `@name`, or `@"name"` when the name is not a bare identifier.
std::string symbol_ref(std::string_view name);

// Parses one MLIR tensor type with a static shape ("tensor<2x3xf32>",
// "tensor<complex<f32>>"); throws HloError naming `context` otherwise.
TensorType parse_tensor_type(std::string_view text, std::string_view context);

}  // namespace torch_tpu::hlo
