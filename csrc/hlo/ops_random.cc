// Counter-based random bits: rng_bit_generator.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

std::pair<Value, Value> Builder::rng_bit_generator(const Value& state,
                                                   const TensorType& out,
                                                   RngAlgorithm algorithm) {
  constexpr std::string_view op = "stablehlo.rng_bit_generator";
  check_operand(op, state);
  check::valid_type(op, out);
  // XLA produces raw bits as unsigned integers whatever type is declared;
  // callers convert or bitcast them (e.g. to uniform floats) themselves.
  check::dtype_in(op, "result", out.dtype, check::kUnsignedInt);
  const char* name = "DEFAULT";
  switch (algorithm) {
    case RngAlgorithm::kDefault: name = "DEFAULT"; break;
    case RngAlgorithm::kThreeFry: name = "THREE_FRY"; break;
    case RngAlgorithm::kPhilox: name = "PHILOX"; break;
  }
  // THREE_FRY keeps a 128-bit state; PHILOX (and DEFAULT, which is PHILOX or
  // backend-chosen) takes 128 or 192 bits.
  const bool size_ok =
      state.dtype() == ElementType::kU64 && state.rank() == 1 &&
      (state.dims()[0] == 2 ||
       (state.dims()[0] == 3 && algorithm != RngAlgorithm::kThreeFry));
  if (!size_ok) {
    check::fail(op, std::string("state for ") + name + " must be " +
                        (algorithm == RngAlgorithm::kThreeFry
                             ? "tensor<2xui64>"
                             : "tensor<2xui64> or tensor<3xui64>") +
                        ", got " + state.type().to_string());
  }
  text::AttrList attrs;
  attrs.raw("rng_algorithm", std::string("#stablehlo<rng_algorithm ") + name + ">");
  std::vector<Value> results =
      append_op(reserve_id(), op, {state}, {state.type(), out}, attrs.str(), {});
  return {results[0], results[1]};
}

}  // namespace torch_tpu::hlo
