// Builder core: SSA bookkeeping, scopes, regions, the op printer and the
// module printer. The op families live in ops_*.cc and constants.cc.
#include "hlo/builder.h"

#include <algorithm>
#include <atomic>

#include "hlo/attr_text.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

std::atomic<uint32_t> next_builder_serial{1};

bool is_symbol_char(char c, bool first) {
  bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (first) return letter;
  return letter || (c >= '0' && c <= '9') || c == '$' || c == '.';
}

// The module name is only a label; make it a bare MLIR symbol rather than
// quoting and escaping it.
std::string sanitize_symbol(std::string name) {
  if (name.empty()) return "main";
  for (char& c : name) {
    if (!is_symbol_char(c, false)) c = '_';
  }
  if (!is_symbol_char(name[0], true)) name.insert(name.begin(), '_');
  return name;
}

}  // namespace

Builder::Builder(std::string module_name)
    : module_name_(sanitize_symbol(std::move(module_name))),
      serial_(next_builder_serial.fetch_add(1, std::memory_order_relaxed)) {
  blocks_.push_back(OpenBlock{std::string(), /*scope=*/0, /*indent=*/4});
}

void Builder::set_num_replicas(int64_t n) {
  if (n < 1 || n > INT32_MAX) {
    throw HloError("num_replicas must be in [1, 2^31), got " +
                   std::to_string(n));
  }
  num_replicas_ = n;
}

void Builder::set_num_partitions(int64_t n) {
  if (n < 1 || n > INT32_MAX) {
    throw HloError("num_partitions must be in [1, 2^31), got " +
                   std::to_string(n));
  }
  num_partitions_ = n;
}

Value Builder::parameter(const TensorType& type) {
  check_open("parameter");
  check::valid_type("parameter", type);
  int id = static_cast<int>(records_.size());
  ValueRecord record;
  record.scope = 0;  // @main's arguments are visible everywhere
  record.num_results = 1;
  record.parameter_index = static_cast<int>(parameter_types_.size());
  records_.push_back(record);
  parameter_types_.push_back(type);
  parameter_aliases_.push_back(-1);
  return Value(serial_, id, -1, type);
}

void Builder::alias_parameter(int64_t parameter, int64_t result) {
  check_open("alias_parameter");
  if (parameter < 0 || parameter >= static_cast<int64_t>(parameter_types_.size())) {
    check::fail("alias_parameter", "no parameter " + std::to_string(parameter));
  }
  if (result < 0) check::fail("alias_parameter", "negative result index");
  parameter_aliases_[parameter] = result;
}

// ---- Scopes and operands ---------------------------------------------------

void Builder::check_open(std::string_view op_name) const {
  if (built_) check::fail(op_name, "the module was already built");
}

bool Builder::in_scope(int scope) const {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (it->scope == scope) return true;
  }
  return false;
}

void Builder::check_operand(std::string_view op_name, const Value& v) const {
  if (!v.valid()) check::fail(op_name, "operand is an empty Value");
  if (v.builder_serial_ != serial_ ||
      static_cast<size_t>(v.id_) >= records_.size()) {
    check::fail(op_name, "operand comes from another Builder");
  }
  const ValueRecord& record = records_[v.id_];
  bool index_ok = record.num_results == 1
                      ? v.result_index_ == -1
                      : v.result_index_ >= 0 &&
                            v.result_index_ < record.num_results;
  if (!index_ok) check::fail(op_name, "operand comes from another Builder");
  if (!in_scope(record.scope)) {
    std::string name;
    append_value_name(name, v);
    check::fail(op_name, "operand " + name +
                             " is used outside the region that defines it");
  }
}

void Builder::append_value_name(std::string& out, const Value& v) const {
  const ValueRecord& record = records_[v.id_];
  if (record.parameter_index >= 0) {
    out += "%arg";
    text::append_int(out, record.parameter_index);
  } else {
    out += '%';
    text::append_int(out, v.id_);
  }
  if (v.result_index_ >= 0) {
    out += '#';
    text::append_int(out, v.result_index_);
  }
}

// ---- Ops -------------------------------------------------------------------

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

Builder::Flow Builder::flow_of(std::string_view op_name) {
  static constexpr std::string_view kSameBuffer[] = {
      "stablehlo.reshape", "stablehlo.bitcast_convert", "stablehlo.dynamic_update_slice", "stablehlo.scatter"};
  static constexpr std::string_view kMaterialized[] = {
      "stablehlo.dot_general", "stablehlo.convolution", "stablehlo.while", "stablehlo.case", "stablehlo.sort",
      "stablehlo.custom_call", "stablehlo.fft", "stablehlo.rng_bit_generator", "stablehlo.triangular_solve",
      "stablehlo.cholesky", "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all",
      "stablehlo.reduce_scatter", "stablehlo.collective_permute", "func.call"};
  // What XLA's fusion treats as expensive: it fuses them into a consumer
  // but computes them once rather than copying them into each consumer.
  // chlo ops expand into several ops, most of them among these.
  static constexpr std::string_view kFusedOnce[] = {
      "stablehlo.divide", "stablehlo.remainder", "stablehlo.power", "stablehlo.exponential",
      "stablehlo.exponential_minus_one", "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.logistic",
      "stablehlo.tanh", "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.cbrt", "stablehlo.atan2",
      "stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.gather", "stablehlo.select_and_scatter"};
  static constexpr std::string_view kCheapChlo[] = {"chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf"};
  for (std::string_view name : kSameBuffer) {
    if (op_name == name) return Flow::kSameBuffer;
  }
  for (std::string_view name : kMaterialized) {
    if (op_name == name) return Flow::kMaterialized;
  }
  for (std::string_view name : kFusedOnce) {
    if (op_name == name) return Flow::kFusedOnce;
  }
  if (starts_with(op_name, "chlo.")) {
    for (std::string_view name : kCheapChlo) {
      if (op_name == name) return Flow::kFusible;
    }
    return Flow::kFusedOnce;
  }
  return starts_with(op_name, "stablehlo.") ? Flow::kFusible : Flow::kMaterialized;
}

bool Builder::ends_kernel(std::string_view op_name) {
  // Reductions: XLA's CPU compiler emits each as a kernel of its own (and
  // Builder::reduce puts the input of most behind an optimization barrier
  // there). Scatters become loops over the updates.
  static constexpr std::string_view kEnds[] = {"stablehlo.reduce", "stablehlo.reduce_window",
                                               "stablehlo.select_and_scatter", "stablehlo.scatter"};
  return std::find(std::begin(kEnds), std::end(kEnds), op_name) != std::end(kEnds);
}

std::unordered_set<int> Builder::buffer_of(int x) const {
  // x's buffer may be that of the values x was made from in place.
  std::unordered_set<int> buffer;
  std::vector<int> pending{x};
  while (!pending.empty()) {
    const int id = pending.back();
    pending.pop_back();
    if (!buffer.insert(id).second) continue;
    const ValueRecord& record = records_[id];
    if (record.flow == Flow::kSameBuffer && record.num_operands > 0) {
      pending.push_back(operand_ids_[record.first_operand]);
    } else if (record.flow == Flow::kCall) {
      for (int i : call_flows_.at(id).same_buffer) pending.push_back(operand_ids_[record.first_operand + i]);
    }
  }
  return buffer;
}

bool Builder::reaches(int from, const std::unordered_set<int>& targets, std::vector<int>* parameters) const {
  // Walk back through what XLA could fuse with `from`; past the budget,
  // assume the worst.
  constexpr size_t kBudget = 4096;
  std::unordered_set<int> seen;
  std::vector<int> pending{from};
  while (!pending.empty()) {
    const int id = pending.back();
    pending.pop_back();
    if (!seen.insert(id).second) continue;
    if (targets.count(id)) return true;
    if (seen.size() > kBudget) return true;
    const ValueRecord& record = records_[id];
    if (record.parameter_index >= 0 && parameters) parameters->push_back(record.parameter_index);
    if (record.flow == Flow::kMaterialized) continue;
    const auto first = operand_ids_.begin() + record.first_operand;
    if (record.flow == Flow::kCall) {
      for (int i : call_flows_.at(id).reads) pending.push_back(first[i]);
    } else {
      pending.insert(pending.end(), first, first + record.num_operands);
    }
  }
  return false;
}

bool Builder::update_reads_operand(const Value& x, const Value& update) {
  const std::unordered_set<int> buffer = buffer_of(x.id_);
  std::vector<int> update_parameters;
  if (reaches(update.id_, buffer, &update_parameters)) return true;
  if (update_parameters.empty() || caller_values_ == CallerValues::kOwnBuffers) return false;
  CallerDependency dependency;
  for (int id : buffer) {
    if (records_[id].parameter_index >= 0) dependency.operand_parameters.push_back(records_[id].parameter_index);
  }
  // An operand computed in the module (a constant, a dot) is no buffer of
  // the caller's: then nothing depends on the caller.
  if (dependency.operand_parameters.empty()) return false;
  if (caller_values_ == CallerValues::kMayShare) return true;
  dependency.update_parameters = std::move(update_parameters);
  caller_dependencies_.push_back(std::move(dependency));
  return false;
}

bool Builder::may_read_buffer(const Value& update, const Value& x) const {
  check_operand("may_read_buffer", update);
  check_operand("may_read_buffer", x);
  return reaches(update.id_, buffer_of(x.id_), nullptr);
}

Builder::ParameterFlow Builder::parameter_flow(const std::vector<Value>& results) const {
  ParameterFlow flow;
  std::unordered_set<int> reads, same;
  for (const Value& v : results) {
    check_operand("parameter_flow", v);
    std::vector<int> parameters;
    if (reaches(v.id_, {}, &parameters)) {
      // Past the walk's budget: any parameter.
      parameters.resize(parameter_types_.size());
      for (size_t i = 0; i < parameters.size(); ++i) parameters[i] = static_cast<int>(i);
    }
    reads.insert(parameters.begin(), parameters.end());
    for (int id : buffer_of(v.id_)) {
      if (records_[id].parameter_index >= 0) same.insert(records_[id].parameter_index);
    }
  }
  flow.chains = fusion_chains(results);
  flow.kernels = fusion_kernels(results);
  flow.reads.assign(reads.begin(), reads.end());
  flow.same_buffer.assign(same.begin(), same.end());
  std::sort(flow.reads.begin(), flow.reads.end());
  std::sort(flow.same_buffer.begin(), flow.same_buffer.end());
  return flow;
}

int Builder::reserve_id() {
  int id = static_cast<int>(records_.size());
  ValueRecord record;
  record.scope = blocks_.back().scope;
  records_.push_back(record);
  return id;
}

std::vector<Value> Builder::append_op(
    int id, std::string_view op_name, const std::vector<Value>& operands,
    const std::vector<TensorType>& result_types, std::string_view attributes,
    const std::vector<std::string>& regions) {
  check_open(op_name);
  for (const Value& v : operands) check_operand(op_name, v);
  for (const TensorType& t : result_types) check::valid_type(op_name, t);

  const int num_results = static_cast<int>(result_types.size());
  ValueRecord& record = records_[id];
  record.num_results = num_results;
  record.flow = flow_of(op_name);
  record.ends_kernel = ends_kernel(op_name);
  record.first_operand = static_cast<uint32_t>(operand_ids_.size());
  record.num_operands = static_cast<uint32_t>(operands.size());
  for (const Value& v : operands) operand_ids_.push_back(v.id_);

  std::string& out = blocks_.back().text;
  out.append(blocks_.back().indent, ' ');
  if (num_results > 0) {
    out += '%';
    text::append_int(out, id);
    if (num_results > 1) {
      out += ':';
      text::append_int(out, num_results);
    }
    out += " = ";
  }
  out += '"';
  out += op_name;
  out += "\"(";
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i) out += ", ";
    append_value_name(out, operands[i]);
  }
  out += ')';
  if (!regions.empty()) {
    out += " (";
    for (size_t i = 0; i < regions.size(); ++i) {
      if (i) out += ", ";
      out += regions[i];
    }
    out += ')';
  }
  if (!attributes.empty()) {
    out += " {";
    out += attributes;
    out += '}';
  }
  out += " : (";
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i) out += ", ";
    operands[i].type().append_to(out);
  }
  out += ") -> ";
  if (num_results == 1) {
    result_types[0].append_to(out);
  } else {
    out += '(';
    text::append_type_list(out, result_types);
    out += ')';
  }
  out += '\n';

  std::vector<Value> results;
  results.reserve(result_types.size());
  for (int i = 0; i < num_results; ++i) {
    results.push_back(
        Value(serial_, id, num_results == 1 ? -1 : i, result_types[i]));
  }
  return results;
}

Value Builder::append_op1(std::string_view op_name,
                          const std::vector<Value>& operands,
                          const TensorType& result_type,
                          std::string_view attributes) {
  return append_op(reserve_id(), op_name, operands, {result_type}, attributes,
                   {})[0];
}

std::vector<Value> Builder::emit(std::string_view op_name,
                                 const std::vector<Value>& operands,
                                 const std::vector<TensorType>& result_types,
                                 std::string_view attributes,
                                 const std::vector<Region>& regions) {
  check::op_name(op_name);
  check_open(op_name);
  int id = reserve_id();
  std::vector<std::string> region_texts;
  region_texts.reserve(regions.size());
  for (const Region& region : regions) {
    std::vector<TensorType> returned;
    region_texts.push_back(
        build_region(op_name, region.arg_types, region.body, &returned));
  }
  return append_op(id, op_name, operands, result_types, attributes,
                   region_texts);
}

std::vector<Value> Builder::call_function(const ImportedFunction& function,
                                          const std::vector<Value>& operands) {
  const std::string op_name = "func.call @" + function.symbol;
  check_open(op_name);
  if (operands.size() != function.parameter_types.size()) {
    check::fail(op_name, "takes " + std::to_string(function.parameter_types.size()) + " operands, got " +
                             std::to_string(operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].type() != function.parameter_types[i]) {
      check::fail(op_name, "operand " + std::to_string(i) + " must be " +
                               function.parameter_types[i].to_string() + ", got " +
                               operands[i].type().to_string());
    }
  }
  auto known = imported_.find(function.symbol);
  if (known == imported_.end()) {
    for (const std::string& name : function.defined_symbols) {
      if (!defined_symbols_.insert(name).second) {
        check::fail(op_name, "function @" + name + " is already defined by another imported module "
                             "(import different modules under different symbol prefixes)");
      }
    }
    imported_.emplace(function.symbol, function.text);
    functions_text_ += function.text;
  } else if (known->second != function.text) {
    check::fail(op_name, "another module was imported under the same symbol; import different modules "
                         "under different symbol prefixes");
  }
  return append_op(reserve_id(), "func.call", operands, function.result_types,
                   "callee = " + symbol_ref(function.symbol), {});
}

std::vector<Value> Builder::call_function(const ImportedFunction& function, const std::vector<Value>& operands,
                                          const ParameterFlow& flow) {
  for (const std::vector<int>* list : {&flow.reads, &flow.same_buffer}) {
    for (int i : *list) {
      if (i < 0 || static_cast<size_t>(i) >= operands.size()) {
        check::fail("func.call @" + function.symbol, "parameter flow names parameter " + std::to_string(i));
      }
    }
  }
  std::vector<Value> results = call_function(function, operands);
  const int id = results.empty() ? -1 : results[0].id_;
  if (id >= 0) {
    records_[id].flow = Flow::kCall;
    call_flows_[id] = flow;
  }
  return results;
}

// ---- Regions ---------------------------------------------------------------

std::string Builder::build_region(std::string_view op_name,
                                  const std::vector<TensorType>& arg_types,
                                  const RegionFn& body,
                                  std::vector<TensorType>* returned) {
  check_open(op_name);
  if (!body) check::fail(op_name, "region body is empty");
  for (const TensorType& t : arg_types) check::valid_type(op_name, t);

  const int scope = next_scope_++;
  const int label_indent = blocks_.back().indent;
  // Pops the block even when the body throws, so the builder stays usable
  // (values made inside the failed region are then out of scope).
  struct BlockGuard {
    std::vector<OpenBlock>& blocks;
    size_t depth;
    ~BlockGuard() { blocks.resize(depth); }
  } guard{blocks_, blocks_.size()};
  blocks_.push_back(OpenBlock{std::string(), scope, label_indent + 2});

  std::vector<Value> args;
  args.reserve(arg_types.size());
  for (const TensorType& t : arg_types) {
    int id = static_cast<int>(records_.size());
    ValueRecord record;
    record.scope = scope;
    record.num_results = 1;
    records_.push_back(record);
    args.push_back(Value(serial_, id, -1, t));
  }

  std::vector<Value> results = body(*this, args);
  std::string region_return = std::string(op_name) + " region return";
  for (const Value& v : results) check_operand(region_return, v);

  OpenBlock& block = blocks_.back();
  block.text.append(block.indent, ' ');
  block.text += "\"stablehlo.return\"(";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) block.text += ", ";
    append_value_name(block.text, results[i]);
  }
  block.text += ") : (";
  returned->clear();
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) block.text += ", ";
    results[i].type().append_to(block.text);
    returned->push_back(results[i].type());
  }
  block.text += ") -> ()\n";

  std::string out = "{\n";
  if (!args.empty()) {
    out.append(label_indent, ' ');
    out += "^bb0(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) out += ", ";
      append_value_name(out, args[i]);
      out += ": ";
      args[i].type().append_to(out);
    }
    out += "):\n";
  }
  out += block.text;
  out.append(label_indent, ' ');
  out += '}';
  return out;
}

std::string Builder::build_reducer_region(
    std::string_view op_name, const std::vector<ElementType>& dtypes,
    const RegionFn& body) {
  std::vector<TensorType> arg_types;
  arg_types.reserve(2 * dtypes.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (ElementType t : dtypes) arg_types.push_back(TensorType::scalar(t));
  }
  std::vector<TensorType> returned;
  std::string region = build_region(op_name, arg_types, body, &returned);
  bool ok = returned.size() == dtypes.size();
  for (size_t i = 0; ok && i < returned.size(); ++i) {
    ok = returned[i] == TensorType::scalar(dtypes[i]);
  }
  if (!ok) {
    std::vector<TensorType> expected(arg_types.begin(),
                                     arg_types.begin() + dtypes.size());
    std::string message = "body must return (";
    text::append_type_list(message, expected);
    message += "), got (";
    text::append_type_list(message, returned);
    message += ')';
    check::fail(op_name, message);
  }
  return region;
}

// ---- Module ----------------------------------------------------------------

std::string Builder::build(const std::vector<Value>& results) {
  check_open("build");
  if (blocks_.size() != 1) check::fail("build", "called inside a region");
  for (const Value& v : results) check_operand("func.return", v);
  for (size_t i = 0; i < parameter_aliases_.size(); ++i) {
    const int64_t r = parameter_aliases_[i];
    if (r < 0) continue;
    if (r >= static_cast<int64_t>(results.size()) || !(results[r].type() == parameter_types_[i])) {
      check::fail("build", "parameter " + std::to_string(i) + " aliases result " + std::to_string(r) +
                               ", which is missing or of another type");
    }
  }

  const std::string& body = blocks_[0].text;
  std::string out;
  out.reserve(body.size() + 256 + 32 * parameter_types_.size());
  out += "module @";
  out += module_name_;
  out += " attributes {mhlo.num_partitions = ";
  text::append_int(out, num_partitions_);
  out += " : i32, mhlo.num_replicas = ";
  text::append_int(out, num_replicas_);
  out += " : i32} {\n  func.func public @main(";
  for (size_t i = 0; i < parameter_types_.size(); ++i) {
    if (i) out += ", ";
    out += "%arg";
    text::append_int(out, static_cast<int64_t>(i));
    out += ": ";
    parameter_types_[i].append_to(out);
    if (parameter_aliases_[i] >= 0) {
      out += " {tf.aliasing_output = ";
      text::append_int(out, parameter_aliases_[i]);
      out += " : i32}";
    }
  }
  out += ") -> (";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) out += ", ";
    results[i].type().append_to(out);
  }
  out += ") {\n";
  out += body;
  out += "    \"func.return\"(";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) out += ", ";
    append_value_name(out, results[i]);
  }
  out += ") : (";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) out += ", ";
    results[i].type().append_to(out);
  }
  out += ") -> ()\n  }\n";
  out += functions_text_;
  out += "}\n";

  built_ = true;
  blocks_[0].text.clear();
  blocks_[0].text.shrink_to_fit();
  return out;
}

}  // namespace torch_tpu::hlo
