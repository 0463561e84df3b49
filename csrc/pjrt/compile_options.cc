#include "pjrt/compile_options.h"

#include <cstring>

namespace torch_tpu::pjrt {

namespace {

// Minimal protobuf wire-format writer.
class ProtoWriter {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(int field, int wire_type) { varint((uint64_t(field) << 3) | wire_type); }
  void int_field(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
  }
  void bool_field(int field, bool v) {
    tag(field, 0);
    varint(v ? 1 : 0);
  }
  void double_field(int field, double v) {
    tag(field, 1);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(bits >> (8 * i)));
  }
  void bytes_field(int field, const std::string& bytes) {
    tag(field, 2);
    varint(bytes.size());
    out_ += bytes;
  }
  void packed_ints(int field, const std::vector<int64_t>& values) {
    ProtoWriter packed;
    for (int64_t v : values) packed.varint(static_cast<uint64_t>(v));
    bytes_field(field, packed.str());
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// Field numbers of xla/pjrt/proto/compile_options.proto and xla_data.proto.
namespace field {
constexpr int kExecutableBuildOptions = 3;  // CompileOptionsProto
constexpr int kCompilePortableExecutable = 4;  // CompileOptionsProto
constexpr int kEnvOptionOverrides = 7;         // CompileOptionsProto (map)
constexpr int kNumReplicas = 4;             // ExecutableBuildOptionsProto
constexpr int kNumPartitions = 5;
constexpr int kUseSpmdPartitioning = 6;
constexpr int kDeviceAssignment = 9;
constexpr int kReplicaCount = 1;  // DeviceAssignmentProto
constexpr int kComputationCount = 2;
constexpr int kComputationDevices = 3;
constexpr int kReplicaDeviceIds = 1;  // DeviceAssignmentProto.ComputationDevice
constexpr int kOverrideString = 1;    // OptionOverrideProto
constexpr int kOverrideBool = 2;
constexpr int kOverrideInt = 3;
constexpr int kOverrideDouble = 4;
}  // namespace field

}  // namespace

std::string CompileOptions::serialize() const {
  ProtoWriter build;
  build.int_field(field::kNumReplicas, num_replicas);
  build.int_field(field::kNumPartitions, num_partitions);
  if (use_spmd_partitioning) build.bool_field(field::kUseSpmdPartitioning, true);
  if (!device_assignment.empty()) {
    // The proto stores the assignment per computation (partition), each a
    // list over replicas.
    ProtoWriter assignment;
    const int64_t replicas = static_cast<int64_t>(device_assignment.size());
    const int64_t partitions = static_cast<int64_t>(device_assignment[0].size());
    assignment.int_field(field::kReplicaCount, replicas);
    assignment.int_field(field::kComputationCount, partitions);
    for (int64_t p = 0; p < partitions; ++p) {
      std::vector<int64_t> ids;
      for (int64_t r = 0; r < replicas; ++r) ids.push_back(device_assignment[r][p]);
      ProtoWriter computation;
      computation.packed_ints(field::kReplicaDeviceIds, ids);
      assignment.bytes_field(field::kComputationDevices, computation.str());
    }
    build.bytes_field(field::kDeviceAssignment, assignment.str());
  }

  ProtoWriter options;
  options.bytes_field(field::kExecutableBuildOptions, build.str());
  if (portable) options.bool_field(field::kCompilePortableExecutable, true);
  for (const auto& [name, value] : env_option_overrides) {
    ProtoWriter override_value;
    if (auto* s = std::get_if<std::string>(&value)) {
      override_value.bytes_field(field::kOverrideString, *s);
    } else if (auto* b = std::get_if<bool>(&value)) {
      override_value.bool_field(field::kOverrideBool, *b);
    } else if (auto* i = std::get_if<int64_t>(&value)) {
      override_value.int_field(field::kOverrideInt, *i);
    } else {
      override_value.double_field(field::kOverrideDouble, std::get<double>(value));
    }
    // A map entry is a message with key = 1 and value = 2.
    ProtoWriter entry;
    entry.bytes_field(1, name);
    entry.bytes_field(2, override_value.str());
    options.bytes_field(field::kEnvOptionOverrides, entry.str());
  }
  return options.str();
}

}  // namespace torch_tpu::pjrt
