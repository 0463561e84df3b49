#include "aten/captured_program.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "aten/generator.h"
#include "aten/launch.h"
#include "aten/op_runner.h"
#include "aten/scalar_cache.h"

namespace torch_tpu::aten {

using runtime::DeviceBufferPtr;

namespace {

// An exact text of a scalar's value, for signatures.
std::string scalar_text(const ScalarInput& s) {
  std::ostringstream out;
  out << static_cast<int>(s.type) << ':';
  if (s.value.isFloatingPoint()) {
    out << std::hexfloat << s.value.toDouble();
  } else if (s.value.isComplex()) {
    const auto z = s.value.toComplexDouble();
    out << std::hexfloat << z.real() << ',' << z.imag();
  } else if (s.value.isBoolean()) {
    out << s.value.toBool();
  } else if (s.value.type() == c10::kUInt64) {
    out << s.value.to<uint64_t>();
  } else {
    out << s.value.toLong();
  }
  return out.str();
}

DeviceBufferPtr u64_buffer(int device, uint64_t value) {
  return cached_scalar_buffer(device, {ElementType::kU64, c10::Scalar(value)});
}

}  // namespace

std::string trace_program(const RanGraph& ran, const std::vector<RandomDraw>& draws,
                          const std::function<int32_t(const runtime::DeviceBuffer*)>& value_index,
                          CapturedProgram* program, std::string* signature) {
  using Kind = CapturedProgram::Argument::Kind;
  CapturedProgram& p = *program;
  p.device = ran.device;
  p.has_program = !ran.results.empty();
  p.key = ran.key;
  p.name = ran.name;
  p.text = ran.text;
  p.n_results = ran.results.size();
  std::vector<int32_t> draw_of(draws.size(), -1);  // a draw's index among the program's
  std::vector<size_t> seed_args;                   // the args drawn, to renumber in the draws' order
  for (size_t k = 0; k < ran.parameters.size(); ++k) {
    const RanGraph::Parameter& parameter = ran.parameters[k];
    if (!parameter.scalar) {
      const int32_t index = value_index(parameter.buffer);
      if (index < 0) {
        return "argument " + std::to_string(k) + " of the program is a device value the capture did not trace";
      }
      p.args.push_back({Kind::kValue, index, nullptr});
      continue;
    }
    const ScalarInput& s = *parameter.scalar;
    if (s.role == ScalarRole::kValue) {
      p.args.push_back({Kind::kScalar, -1, cached_scalar_buffer(ran.device, s)});
      *signature += "s" + scalar_text(s) + ";";
      continue;
    }
    // A random op's seed, then the offset of the same draw.
    const bool paired = s.role == ScalarRole::kRandomSeed && k + 1 < ran.parameters.size() &&
                        ran.parameters[k + 1].scalar &&
                        ran.parameters[k + 1].scalar->role == ScalarRole::kRandomOffset;
    if (!paired) return "a random op's seed and offset are not consecutive arguments";
    const uint64_t seed = s.value.to<uint64_t>();
    const uint64_t offset = ran.parameters[k + 1].scalar->value.to<uint64_t>();
    int32_t draw = -1;
    for (size_t d = 0; d < draws.size(); ++d) {
      if (draws[d].seed != seed || draws[d].offset != offset) continue;
      if (draw >= 0) return "two random draws took the same seed and offset";
      draw = static_cast<int32_t>(d);
    }
    if (draw < 0) return "a random op's seed and offset come from no draw the capture saw";
    draw_of[draw] = 0;
    seed_args.push_back(p.args.size());
    p.args.push_back({Kind::kSeed, draw, nullptr});
    p.args.push_back({Kind::kOffset, draw, nullptr});
    ++k;
  }
  // A replay draws as the ops drew: the draws used, in the order they were made.
  for (size_t d = 0; d < draws.size(); ++d) {
    if (draw_of[d] < 0) continue;
    draw_of[d] = static_cast<int32_t>(p.draws.size());
    p.draws.push_back({draws[d].generator, draws[d].increment});
  }
  for (size_t a : seed_args) {
    p.args[a].index = p.args[a + 1].index = draw_of[p.args[a].index];
  }
  return {};
}

std::vector<DeviceBufferPtr> CapturedProgram::launch(std::vector<DeviceBufferPtr> values,
                                                     const std::function<void(int32_t)>& release) const {
  std::vector<std::pair<uint64_t, uint64_t>> drawn;
  drawn.reserve(draws.size());
  for (const Draw& d : draws) {
    drawn.push_back(next_seed_offset(d.generator, static_cast<c10::DeviceIndex>(device), d.increment));
  }
  std::vector<DeviceBufferPtr> held;
  held.reserve(args.size());
  for (const Argument& a : args) {
    switch (a.kind) {
      case Argument::Kind::kValue: held.push_back(values.at(a.index)); break;
      case Argument::Kind::kScalar: held.push_back(a.scalar); break;
      case Argument::Kind::kSeed: held.push_back(u64_buffer(device, drawn[a.index].first)); break;
      case Argument::Kind::kOffset: held.push_back(u64_buffer(device, drawn[a.index].second)); break;
    }
  }
  values.clear();
  if (!has_program) return {};

  std::vector<pjrt::c::Buffer*> buffers;
  buffers.reserve(held.size());
  for (const DeviceBufferPtr& buffer : held) buffers.push_back(buffer->get());
  // A value is donated when only its holder and this launch hold it.
  std::vector<int64_t> keep;
  std::vector<int32_t> donated;
  for (const Donation& d : donations) {
    long holders = 1;
    for (const DeviceBufferPtr& buffer : held) holders += buffer == held[d.arg];
    if (d.owner >= 0 && held[d.arg].use_count() == holders) {
      donated.push_back(d.owner);
    } else {
      keep.push_back(d.arg);
    }
  }
  std::vector<hlo::TensorType> types;
  std::vector<pjrt::Buffer> launched = launch_program_keeping(key, name.c_str(), text, buffers, device, keep, &types);
  TORCH_INTERNAL_ASSERT(launched.size() == n_results, name, ": wrong number of results");
  held.clear();
  // Donated memory belongs to the results now: the old values go before
  // the results are counted.
  for (int32_t owner : donated) release(owner);
  return device_buffers(std::move(launched), std::move(types), device);
}

}  // namespace torch_tpu::aten
