#include "hlo/attr_text.h"

#include <charconv>

namespace torch_tpu::hlo::text {

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  out.append(buf, end);
}

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  out.append(buf, end);
}

void append_hex(std::string& out, uint64_t bits, int digits) {
  static constexpr char kHexDigits[] = "0123456789ABCDEF";
  out += "0x";
  for (int i = digits - 1; i >= 0; --i) {
    out += kHexDigits[(bits >> (4 * i)) & 0xF];
  }
}

void append_int_list(std::string& out, const std::vector<int64_t>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    append_int(out, v[i]);
  }
  out += ']';
}

void append_i64_array(std::string& out, const std::vector<int64_t>& v) {
  out += "array<i64";
  for (size_t i = 0; i < v.size(); ++i) {
    out += i ? ", " : ": ";
    append_int(out, v[i]);
  }
  out += '>';
}

void append_i64_matrix(std::string& out,
                       const std::vector<std::vector<int64_t>>& rows,
                       int64_t columns) {
  out += "dense<";
  // An empty elements attribute is "dense<>"; "[]" would claim shape [0].
  if (!rows.empty() && columns > 0) {
    out += '[';
    for (size_t r = 0; r < rows.size(); ++r) {
      if (r) out += ", ";
      append_int_list(out, rows[r]);
    }
    out += ']';
  }
  out += "> : tensor<";
  append_int(out, static_cast<int64_t>(rows.size()));
  out += 'x';
  append_int(out, columns);
  out += "xi64>";
}

void append_pairs(std::string& out,
                    const std::vector<std::pair<int64_t, int64_t>>& padding) {
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(padding.size());
  for (const auto& [low, high] : padding) rows.push_back({low, high});
  append_i64_matrix(out, rows, 2);
}

void append_type_list(std::string& out, const std::vector<TensorType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) out += ", ";
    types[i].append_to(out);
  }
}

std::string& AttrList::key(std::string_view name) {
  if (!text_.empty()) text_ += ", ";
  text_ += name;
  text_ += " = ";
  return text_;
}

AttrList& AttrList::i64(std::string_view name, int64_t v) {
  append_int(key(name), v);
  text_ += " : i64";
  return *this;
}

AttrList& AttrList::i64_array(std::string_view name,
                              const std::vector<int64_t>& v) {
  append_i64_array(key(name), v);
  return *this;
}

AttrList& AttrList::boolean(std::string_view name, bool v) {
  key(name) += v ? "true" : "false";
  return *this;
}

AttrList& AttrList::unit(std::string_view name) {
  if (!text_.empty()) text_ += ", ";
  text_ += name;
  return *this;
}

AttrList& AttrList::raw(std::string_view name, std::string_view value_text) {
  key(name) += value_text;
  return *this;
}

}  // namespace torch_tpu::hlo::text
