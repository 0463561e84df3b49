// Collectives: all_reduce, all_gather, reduce_scatter, all_to_all,
// collective_permute. Result shapes follow from the replica group size.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

// Ids are non-negative and appear once; groups share one size, which is
// returned (0 for no groups: "all processes", whose size the builder cannot
// know).
int64_t check_replica_groups(std::string_view op, const ReplicaGroups& groups) {
  std::vector<int64_t> seen;
  for (const auto& group : groups) {
    if (group.size() != groups[0].size() || group.empty()) {
      check::fail(op, "replica groups must be non-empty and of one size");
    }
    for (int64_t id : group) {
      if (id < 0 || check::contains(seen, id)) {
        check::fail(op, "replica id " + std::to_string(id) +
                            " is negative or in two groups");
      }
      seen.push_back(id);
    }
  }
  return groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
}

int64_t required_group_size(std::string_view op, const ReplicaGroups& groups) {
  int64_t size = check_replica_groups(op, groups);
  if (size == 0) {
    check::fail(op, "needs explicit replica groups to compute its shape");
  }
  return size;
}

void append_replica_groups(text::AttrList& attrs, const ReplicaGroups& groups) {
  text::append_i64_matrix(
      attrs.key("replica_groups"), groups,
      groups.empty() ? 0 : static_cast<int64_t>(groups[0].size()));
}

// channel_handle type 1 is DEVICE_TO_DEVICE.
void append_channel(std::string_view op, text::AttrList& attrs,
                    std::optional<int64_t> channel_id,
                    bool use_global_device_ids) {
  if (use_global_device_ids && !channel_id) {
    check::fail(op, "use_global_device_ids needs a channel id");
  }
  if (!channel_id) return;
  if (*channel_id < 1) {
    check::fail(op, "channel id must be >= 1, got " +
                        std::to_string(*channel_id));
  }
  std::string& out = attrs.key("channel_handle");
  out += "#stablehlo.channel_handle<handle = ";
  text::append_int(out, *channel_id);
  out += ", type = 1>";
}

}  // namespace

Value Builder::all_reduce(const Value& x, const ReplicaGroups& replica_groups,
                          const RegionFn& body,
                          std::optional<int64_t> channel_id,
                          bool use_global_device_ids) {
  constexpr std::string_view op = "stablehlo.all_reduce";
  check_open(op);
  check_operand(op, x);
  check_replica_groups(op, replica_groups);
  text::AttrList attrs;
  append_channel(op, attrs, channel_id, use_global_device_ids);
  append_replica_groups(attrs, replica_groups);
  if (use_global_device_ids) attrs.unit("use_global_device_ids");

  const int id = reserve_id();
  std::vector<std::string> regions = {
      build_reducer_region(op, {x.dtype()}, body)};
  return append_op(id, op, {x}, {x.type()}, attrs.str(), regions)[0];
}

Value Builder::all_gather(const Value& x, int64_t all_gather_dim,
                          const ReplicaGroups& replica_groups,
                          std::optional<int64_t> channel_id,
                          bool use_global_device_ids) {
  constexpr std::string_view op = "stablehlo.all_gather";
  check_operand(op, x);
  check::dim_in_range(op, "all_gather_dim", all_gather_dim, x.rank());
  const int64_t group_size = required_group_size(op, replica_groups);
  if (x.dims()[all_gather_dim] == 0) {
    check::fail(op, "cannot gather along zero-size dimension " +
                        std::to_string(all_gather_dim) + " of " +
                        x.type().to_string());
  }
  TensorType result = x.type();
  result.dims[all_gather_dim] =
      check::mul(op, result.dims[all_gather_dim], group_size);
  text::AttrList attrs;
  attrs.i64("all_gather_dim", all_gather_dim);
  append_channel(op, attrs, channel_id, use_global_device_ids);
  append_replica_groups(attrs, replica_groups);
  if (use_global_device_ids) attrs.unit("use_global_device_ids");
  return append_op1(op, {x}, result, attrs.str());
}

Value Builder::reduce_scatter(const Value& x, int64_t scatter_dim,
                              const ReplicaGroups& replica_groups,
                              const RegionFn& body,
                              std::optional<int64_t> channel_id,
                              bool use_global_device_ids) {
  constexpr std::string_view op = "stablehlo.reduce_scatter";
  check_open(op);
  check_operand(op, x);
  check::dim_in_range(op, "scatter_dimension", scatter_dim, x.rank());
  const int64_t group_size = required_group_size(op, replica_groups);
  if (x.dims()[scatter_dim] == 0 || x.dims()[scatter_dim] % group_size != 0) {
    check::fail(op, "dimension " + std::to_string(scatter_dim) + " of " +
                        x.type().to_string() + " does not divide into " +
                        "non-empty parts by the group size " +
                        std::to_string(group_size));
  }
  TensorType result = x.type();
  result.dims[scatter_dim] /= group_size;
  text::AttrList attrs;
  append_channel(op, attrs, channel_id, use_global_device_ids);
  append_replica_groups(attrs, replica_groups);
  attrs.i64("scatter_dimension", scatter_dim);
  if (use_global_device_ids) attrs.unit("use_global_device_ids");

  const int id = reserve_id();
  std::vector<std::string> regions = {
      build_reducer_region(op, {x.dtype()}, body)};
  return append_op(id, op, {x}, {result}, attrs.str(), regions)[0];
}

Value Builder::all_to_all(const Value& x, int64_t split_dim,
                          int64_t concat_dim, int64_t split_count,
                          const ReplicaGroups& replica_groups,
                          std::optional<int64_t> channel_id) {
  constexpr std::string_view op = "stablehlo.all_to_all";
  check_operand(op, x);
  check::dim_in_range(op, "split_dimension", split_dim, x.rank());
  check::dim_in_range(op, "concat_dimension", concat_dim, x.rank());
  const int64_t group_size = required_group_size(op, replica_groups);
  if (split_count != group_size) {
    check::fail(op, "split_count " + std::to_string(split_count) +
                        " must equal the group size " +
                        std::to_string(group_size));
  }
  if (x.dims()[split_dim] % split_count != 0) {
    check::fail(op, "dimension " + std::to_string(split_dim) + " of " +
                        x.type().to_string() + " does not divide by " +
                        "split_count " + std::to_string(split_count));
  }
  TensorType result = x.type();
  result.dims[split_dim] /= split_count;
  result.dims[concat_dim] = check::mul(op, result.dims[concat_dim], split_count);
  text::AttrList attrs;
  append_channel(op, attrs, channel_id, false);
  attrs.i64("concat_dimension", concat_dim);
  append_replica_groups(attrs, replica_groups);
  attrs.i64("split_count", split_count).i64("split_dimension", split_dim);
  return append_op1(op, {x}, result, attrs.str());
}

Value Builder::collective_permute(
    const Value& x,
    const std::vector<std::pair<int64_t, int64_t>>& source_target_pairs,
    std::optional<int64_t> channel_id) {
  constexpr std::string_view op = "stablehlo.collective_permute";
  check_operand(op, x);
  std::vector<int64_t> sources, targets;
  for (const auto& [source, target] : source_target_pairs) {
    if (source < 0 || target < 0 || check::contains(sources, source) ||
        check::contains(targets, target)) {
      check::fail(op, "source_target_pairs need non-negative ids, each "
                      "source and each target at most once");
    }
    sources.push_back(source);
    targets.push_back(target);
  }
  text::AttrList attrs;
  append_channel(op, attrs, channel_id, false);
  text::append_pairs(attrs.key("source_target_pairs"), source_target_pairs);
  return append_op1(op, {x}, x.type(), attrs.str());
}

}  // namespace torch_tpu::hlo
