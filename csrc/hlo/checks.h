// Input validation shared by the op files. Every check throws HloError with
// a message "<op>: <problem>". Internal to csrc/hlo/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/types.h"
#include "hlo/value.h"

namespace torch_tpu::hlo::check {

[[noreturn]] void fail(std::string_view op, const std::string& problem);

// Element type classes, combinable as a mask.
enum DtypeClass : unsigned {
  kBool = 1u << 0,
  kSignedInt = 1u << 1,
  kUnsignedInt = 1u << 2,
  kFloat = 1u << 3,
  kComplex = 1u << 4,
  kInt = kSignedInt | kUnsignedInt,
  kIntOrBool = kInt | kBool,
  kFloatOrComplex = kFloat | kComplex,
  kNumeric = kInt | kFloat | kComplex,
  kAny = kNumeric | kBool,
};

// Op names are printed inside quotes; insist on "dialect.op" made of safe
// characters so that a typo cannot produce unparsable text.
void op_name(std::string_view name);

unsigned dtype_class(ElementType t);
// `what` names the checked thing in the message ("operand", "indices", ...).
void dtype_in(std::string_view op, std::string_view what, ElementType t,
              unsigned allowed);
// Non-negative dims, a known element type, and a size XLA can handle
// (at most 2^53 bytes and 2^53 per dim).
void valid_type(std::string_view op, const TensorType& t);
void same_type(std::string_view op, const TensorType& a, const TensorType& b);
void same_dims(std::string_view op, const TensorType& a, const TensorType& b);
void scalar(std::string_view op, std::string_view what, const TensorType& t);
void count(std::string_view op, std::string_view what, size_t actual,
           size_t expected);
// 0 <= dim < rank.
void dim_in_range(std::string_view op, std::string_view what, int64_t dim,
                  int64_t rank);
// Every dim in [0, rank) and no repeats.
void unique_dims(std::string_view op, std::string_view what,
                 const std::vector<int64_t>& dims, int64_t rank);
void sorted(std::string_view op, std::string_view what,
            const std::vector<int64_t>& dims);
void all_positive(std::string_view op, std::string_view what,
                  const std::vector<int64_t>& v);

// Arithmetic on user-given sizes that throws instead of overflowing.
int64_t add(std::string_view op, int64_t a, int64_t b);
int64_t mul(std::string_view op, int64_t a, int64_t b);

bool contains(const std::vector<int64_t>& v, int64_t x);

}  // namespace torch_tpu::hlo::check
