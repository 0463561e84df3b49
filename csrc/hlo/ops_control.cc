// Control flow: while, case, optimization_barrier.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

void check_region_types(std::string_view op, std::string_view region,
                        const std::vector<TensorType>& returned,
                        const std::vector<TensorType>& expected) {
  if (returned == expected) return;
  std::string message(region);
  message += " must return (";
  text::append_type_list(message, expected);
  message += "), got (";
  text::append_type_list(message, returned);
  message += ')';
  check::fail(op, message);
}

std::vector<TensorType> types_of(const std::vector<Value>& values) {
  std::vector<TensorType> types;
  types.reserve(values.size());
  for (const Value& v : values) types.push_back(v.type());
  return types;
}

}  // namespace

std::vector<Value> Builder::while_loop(const std::vector<Value>& init,
                                       const RegionFn& cond,
                                       const RegionFn& body) {
  constexpr std::string_view op = "stablehlo.while";
  check_open(op);
  for (const Value& v : init) check_operand(op, v);
  const std::vector<TensorType> types = types_of(init);

  const int id = reserve_id();
  std::vector<std::string> regions;
  std::vector<TensorType> returned;
  regions.push_back(build_region(op, types, cond, &returned));
  check_region_types(op, "cond", returned,
                     {TensorType::scalar(ElementType::kPred)});
  regions.push_back(build_region(op, types, body, &returned));
  check_region_types(op, "body", returned, types);
  return append_op(id, op, init, types, {}, regions);
}

std::vector<Value> Builder::case_(const Value& index,
                                  const std::vector<RegionFn>& branches,
                                  const std::vector<TensorType>& result_types) {
  constexpr std::string_view op = "stablehlo.case";
  check_open(op);
  check_operand(op, index);
  if (index.type() != TensorType::scalar(ElementType::kS32)) {
    check::fail(op, "index must be tensor<i32>, got " +
                        index.type().to_string());
  }
  if (branches.empty()) check::fail(op, "needs at least one branch");
  for (const TensorType& t : result_types) check::valid_type(op, t);

  const int id = reserve_id();
  std::vector<std::string> regions;
  std::vector<TensorType> returned;
  for (size_t i = 0; i < branches.size(); ++i) {
    regions.push_back(build_region(op, {}, branches[i], &returned));
    check_region_types(op, "branch " + std::to_string(i), returned,
                       result_types);
  }
  return append_op(id, op, {index}, result_types, {}, regions);
}

std::vector<Value> Builder::optimization_barrier(const std::vector<Value>& xs) {
  constexpr std::string_view op = "stablehlo.optimization_barrier";
  check_open(op);
  for (const Value& v : xs) check_operand(op, v);
  return append_op(reserve_id(), op, xs, types_of(xs), {}, {});
}

}  // namespace torch_tpu::hlo
