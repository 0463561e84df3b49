// Plain structs and enums that parameterize individual StableHLO ops:
// dimension numbers, precision, algorithms. Field names follow the StableHLO
// spec's attribute names so the printed text is easy to match to the source.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/element_type.h"

namespace torch_tpu::hlo {

enum class ComparisonDirection { kEq, kNe, kLt, kLe, kGt, kGe };

// Precision of dot_general / convolution on backends that trade accuracy for
// speed (TPU runs f32 matmuls in bf16 passes unless asked for HIGHEST).
enum class Precision { kDefault, kHigh, kHighest };

enum class RngAlgorithm { kDefault, kThreeFry, kPhilox };

enum class FftType { kFft, kIfft, kRfft, kIrfft };

enum class Transpose { kNoTranspose, kTranspose, kAdjoint };

// dot_general: result dims are batch dims (in lhs order), then lhs free dims,
// then rhs free dims.
struct DotDims {
  std::vector<int64_t> lhs_batch_dims;
  std::vector<int64_t> rhs_batch_dims;
  std::vector<int64_t> lhs_contracting_dims;
  std::vector<int64_t> rhs_contracting_dims;
};

// Where batch, feature and spatial dimensions live in the convolution's
// input (lhs), kernel (rhs) and output.
struct ConvDims {
  int64_t input_batch_dim = 0;
  int64_t input_feature_dim = 1;
  std::vector<int64_t> input_spatial_dims;
  int64_t kernel_output_feature_dim = 0;
  int64_t kernel_input_feature_dim = 1;
  std::vector<int64_t> kernel_spatial_dims;
  int64_t output_batch_dim = 0;
  int64_t output_feature_dim = 1;
  std::vector<int64_t> output_spatial_dims;

  // PyTorch's layout: input [N, C, *spatial], kernel [O, I, *spatial],
  // output [N, C, *spatial].
  static ConvDims channels_first(int64_t num_spatial_dims) {
    ConvDims d;
    for (int64_t i = 0; i < num_spatial_dims; ++i) {
      d.input_spatial_dims.push_back(i + 2);
      d.kernel_spatial_dims.push_back(i + 2);
      d.output_spatial_dims.push_back(i + 2);
    }
    return d;
  }
};

// Empty strides / dilations mean all 1; empty padding means all (0, 0).
struct ConvOptions {
  ConvDims dims;
  std::vector<int64_t> window_strides;
  std::vector<std::pair<int64_t, int64_t>> padding;  // (low, high) per spatial
  std::vector<int64_t> lhs_dilation;  // "transposed convolution" stride
  std::vector<int64_t> rhs_dilation;  // atrous / dilated kernel
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  Precision precision = Precision::kDefault;
  std::optional<ElementType> result_dtype;  // default: lhs element type
};

struct GatherDims {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};

// Replica groups for collectives: each inner list is one group of replica
// (or, with use_global_device_ids, global device) ids. All groups must have
// the same size.
using ReplicaGroups = std::vector<std::vector<int64_t>>;

}  // namespace torch_tpu::hlo
