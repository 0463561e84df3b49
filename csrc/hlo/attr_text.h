// Printing helpers for attribute text in StableHLO's current syntax. Internal
// to csrc/hlo/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/types.h"

namespace torch_tpu::hlo::text {

void append_int(std::string& out, int64_t v);
void append_uint(std::string& out, uint64_t v);
// `bits` as 0x + exactly `digits` uppercase hex digits.
void append_hex(std::string& out, uint64_t bits, int digits);
// [1, 2]
void append_int_list(std::string& out, const std::vector<int64_t>& v);
// array<i64: 1, 2>; empty: array<i64>
void append_i64_array(std::string& out, const std::vector<int64_t>& v);
// dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>; rows must share one length
// `columns` (given so that zero rows still print a well-formed type).
void append_i64_matrix(std::string& out,
                       const std::vector<std::vector<int64_t>>& rows,
                       int64_t columns);
// (a, b) pairs (padding lows/highs, source/target ids) as an Nx2 i64
// matrix.
void append_pairs(std::string& out,
                    const std::vector<std::pair<int64_t, int64_t>>& padding);
// "tensor<f32>, tensor<2xi32>" (no parentheses).
void append_type_list(std::string& out, const std::vector<TensorType>& types);

// Builds the inside of an attribute dictionary: "a = 1 : i64, b = true".
class AttrList {
 public:
  AttrList& i64(std::string_view name, int64_t v);  // name = v : i64
  AttrList& i64_array(std::string_view name, const std::vector<int64_t>& v);
  AttrList& boolean(std::string_view name, bool v);
  AttrList& unit(std::string_view name);  // a unit attribute: just the name
  AttrList& raw(std::string_view name, std::string_view value_text);
  // Appends "name = " and returns the text to print the value into.
  std::string& key(std::string_view name);
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

}  // namespace torch_tpu::hlo::text
