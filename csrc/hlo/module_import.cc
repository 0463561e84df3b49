#include "hlo/module_import.h"

#include <cctype>
#include <optional>
#include <unordered_set>

namespace torch_tpu::hlo {

namespace {

constexpr std::string_view kOp = "import_module";

[[noreturn]] void fail(std::string_view context, const std::string& message) {
  throw HloError(std::string(context) + ": " + message);
}

bool is_id_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// An excerpt for messages: the first line, at most 60 characters.
std::string excerpt(std::string_view s) {
  s = trim(s);
  s = s.substr(0, std::min(s.find('\n'), size_t{60}));
  return std::string(s);
}

// Reads MLIR text structurally: string literals and `//` comments are
// skipped whole, so braces and symbols inside them never count.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  std::string_view text() const { return s_; }

  // Index just past the string literal starting at s_[p] == '"'.
  size_t skip_string(size_t p) const {
    for (++p; p < s_.size(); ++p) {
      if (s_[p] == '\\') {
        ++p;
      } else if (s_[p] == '"') {
        return p + 1;
      }
    }
    fail(kOp, "unterminated string literal");
  }

  size_t skip_space(size_t p) const {
    while (p < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[p]))) {
        ++p;
      } else if (s_.compare(p, 2, "//") == 0) {
        size_t nl = s_.find('\n', p);
        p = nl == std::string_view::npos ? s_.size() : nl + 1;
      } else {
        break;
      }
    }
    return p;
  }

  // Whether the keyword `word` starts at p (not followed by an identifier
  // character).
  bool keyword_at(size_t p, std::string_view word) const {
    return s_.compare(p, word.size(), word) == 0 &&
           (p + word.size() >= s_.size() || !is_id_char(s_[p + word.size()]));
  }

  // The index of the bracket closing the one at s_[open] ('(', '{' or
  // '['), counting only those three kinds.
  size_t matching(size_t open) const {
    int depth = 0;
    for (size_t p = open; p < s_.size();) {
      char c = s_[p];
      if (c == '"') {
        p = skip_string(p);
        continue;
      }
      if (s_.compare(p, 2, "//") == 0) {
        p = skip_space(p);
        continue;
      }
      if (c == '(' || c == '{' || c == '[') ++depth;
      if (c == ')' || c == '}' || c == ']') {
        if (--depth == 0) return p;
      }
      ++p;
    }
    fail(kOp, "unbalanced brackets after '" + excerpt(s_.substr(open)) + "'");
  }

  // The bare identifier at p (after an '@' or '%').
  std::string_view identifier(size_t p) const {
    size_t end = p;
    while (end < s_.size() && is_id_char(s_[end])) ++end;
    return s_.substr(p, end - p);
  }

  // A symbol reference at p: `@name` or `@"any text"` (JAX names nested
  // jitted lambdas @"<lambda>"). `name` is the text without quotes (escapes
  // kept as written); `end` is just past it.
  struct Symbol {
    std::string_view name;
    bool quoted = false;
    size_t end = 0;
  };
  std::optional<Symbol> symbol_at(size_t p) const {
    if (p + 1 >= s_.size() || s_[p] != '@') return std::nullopt;
    if (s_[p + 1] == '"') {
      const size_t end = skip_string(p + 1);
      return Symbol{s_.substr(p + 2, end - p - 3), true, end};
    }
    if (!is_id_start(s_[p + 1])) return std::nullopt;
    std::string_view id = identifier(p + 1);
    return Symbol{id, false, p + 1 + id.size()};
  }

 private:
  std::string_view s_;
};

// Splits `s` at commas outside brackets (including <...>) and strings.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t p = 0; p < s.size(); ++p) {
    char c = s[p];
    if (c == '"') {
      p = Scanner(s).skip_string(p) - 1;
    } else if (c == '(' || c == '{' || c == '[' || c == '<') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']' || (c == '>' && !(p > 0 && s[p - 1] == '-'))) {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(s.substr(start, p - start));
      start = p + 1;
    }
  }
  if (!trim(s.substr(start)).empty() || !parts.empty()) parts.push_back(s.substr(start));
  return parts;
}

// A type possibly followed by an attribute dictionary: the type alone.
std::string_view strip_attributes(std::string_view s) {
  int angle = 0;
  for (size_t p = 0; p < s.size(); ++p) {
    if (s[p] == '<') ++angle;
    if (s[p] == '>') --angle;
    if (s[p] == '{' && angle == 0) return trim(s.substr(0, p));
  }
  return trim(s);
}

struct Function {
  std::string_view name;
  size_t signature_begin = 0;  // just past the name
  size_t end = 0;              // just past the body's closing brace
};

// The function definitions of [begin, end) of the scanner's text.
std::vector<Function> find_functions(const Scanner& sc, size_t begin, size_t end) {
  std::string_view s = sc.text();
  std::vector<Function> functions;
  size_t p = sc.skip_space(begin);
  while (p < end) {
    if (!sc.keyword_at(p, "func.func")) {
      fail(kOp, "only func.func definitions may appear in the module, found '" + excerpt(s.substr(p)) + "'");
    }
    p = sc.skip_space(p + 9);
    for (std::string_view visibility : {"public", "private", "nested"}) {
      if (sc.keyword_at(p, visibility)) p = sc.skip_space(p + visibility.size());
    }
    const auto symbol = p < end ? sc.symbol_at(p) : std::nullopt;
    if (!symbol) fail(kOp, "expected a function name after func.func, found '" + excerpt(s.substr(p)) + "'");
    Function f;
    f.name = symbol->name;
    f.signature_begin = symbol->end;
    // The body is the first '{' outside brackets that does not open an
    // `attributes {...}` dictionary.
    size_t q = f.signature_begin;
    bool after_attributes_keyword = false;
    while (true) {
      q = sc.skip_space(q);
      if (q >= end) fail(kOp, "function @" + std::string(f.name) + " has no body (declarations are not supported)");
      char c = s[q];
      if (c == '"') {
        q = sc.skip_string(q);
      } else if (c == '(' || c == '[') {
        q = sc.matching(q) + 1;
      } else if (c == '{' && after_attributes_keyword) {
        q = sc.matching(q) + 1;
        after_attributes_keyword = false;
      } else if (c == '{') {
        f.end = sc.matching(q) + 1;
        break;
      } else if (sc.keyword_at(q, "attributes")) {
        after_attributes_keyword = true;
        q += 10;
      } else {
        ++q;
      }
    }
    if (f.end > end) fail(kOp, "function @" + std::string(f.name) + " runs past the module's end");
    functions.push_back(f);
    p = sc.skip_space(f.end);
  }
  return functions;
}

// `s` with every `@name` (or `@"name"`) of a function in `names` renamed
// to `<prefix>name`, outside string literals and comments.
std::string rename_symbols(std::string_view s, const std::unordered_set<std::string_view>& names,
                           std::string_view prefix) {
  Scanner sc(s);
  std::string out;
  out.reserve(s.size() + 16 * names.size());
  for (size_t p = 0; p < s.size();) {
    if (s[p] == '"') {
      size_t q = sc.skip_string(p);
      out.append(s.substr(p, q - p));
      p = q;
    } else if (s.compare(p, 2, "//") == 0) {
      size_t q = sc.skip_space(p);
      out.append(s.substr(p, q - p));
      p = q;
    } else if (auto symbol = sc.symbol_at(p)) {
      if (names.count(symbol->name)) {
        out += symbol_ref(std::string(prefix) + std::string(symbol->name));
      } else {
        out.append(s.substr(p, symbol->end - p));
      }
      p = symbol->end;
    } else {
      out += s[p++];
    }
  }
  return out;
}

// Parses the entry function's "(%a: T {attrs}, ...) -> (T {attrs}, ...)".
void parse_signature(const Scanner& sc, const Function& f, ImportedFunction& out) {
  std::string_view s = sc.text();
  const std::string context = std::string(kOp) + ": @" + std::string(f.name);
  size_t p = sc.skip_space(f.signature_begin);
  if (p >= s.size() || s[p] != '(') fail(context, "expected '(' after the function name");
  size_t close = sc.matching(p);
  for (std::string_view arg : split_top_level(s.substr(p + 1, close - p - 1))) {
    size_t colon = arg.find(':');
    if (colon == std::string_view::npos) fail(context, "cannot read argument '" + excerpt(arg) + "'");
    out.parameter_types.push_back(parse_tensor_type(strip_attributes(arg.substr(colon + 1)), context));
  }
  p = sc.skip_space(close + 1);
  if (s.compare(p, 2, "->") != 0) return;  // no results
  p = sc.skip_space(p + 2);
  if (s[p] == '(') {
    close = sc.matching(p);
    for (std::string_view result : split_top_level(s.substr(p + 1, close - p - 1))) {
      out.result_types.push_back(parse_tensor_type(strip_attributes(result), context));
    }
    return;
  }
  // A single result type, up to its attributes or the body.
  size_t q = p;
  int angle = 0;
  while (q < s.size() && (angle > 0 || !(std::isspace(static_cast<unsigned char>(s[q])) || s[q] == '{'))) {
    if (s[q] == '<') ++angle;
    if (s[q] == '>') --angle;
    ++q;
  }
  out.result_types.push_back(parse_tensor_type(s.substr(p, q - p), context));
}

}  // namespace

std::string symbol_ref(std::string_view name) {
  bool bare = !name.empty() && is_id_start(name.front());
  for (char c : name) bare = bare && is_id_char(c);
  return bare ? "@" + std::string(name) : "@\"" + std::string(name) + "\"";
}

TensorType parse_tensor_type(std::string_view text, std::string_view context) {
  std::string_view t = trim(text);
  const std::string quoted = "'" + std::string(t) + "'";
  if (t.substr(0, 7) != "tensor<" || t.back() != '>') {
    fail(context, "only tensor types are supported, found " + quoted);
  }
  std::string_view inner = t.substr(7, t.size() - 8);
  if (split_top_level(inner).size() > 1) {
    fail(context, "tensor encodings (bounded dynamic shapes, sparsity) are not supported: " + quoted);
  }
  std::vector<int64_t> dims;
  while (!inner.empty() && (std::isdigit(static_cast<unsigned char>(inner.front())) || inner.front() == '?')) {
    if (inner.front() == '?') fail(context, "dynamic dimensions are not supported: " + quoted);
    size_t x = inner.find('x');
    if (x == std::string_view::npos) fail(context, "cannot read the shape of " + quoted);
    int64_t d = 0;
    for (char c : inner.substr(0, x)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) fail(context, "cannot read the shape of " + quoted);
      d = d * 10 + (c - '0');
    }
    dims.push_back(d);
    inner.remove_prefix(x + 1);
  }
  for (int i = 0; i < kNumElementTypes; ++i) {
    auto type = static_cast<ElementType>(i);
    if (mlir_name(type) == inner) return TensorType(type, std::move(dims));
  }
  fail(context, "unsupported element type '" + std::string(inner) + "' in " + quoted);
}

ImportedFunction import_module(std::string_view module_text, std::string_view symbol_prefix,
                               std::string_view entry) {
  if (symbol_prefix.empty() || !is_id_start(symbol_prefix.front())) {
    fail(kOp, "symbol prefix '" + std::string(symbol_prefix) + "' must start with a letter or '_'");
  }
  for (char c : symbol_prefix) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      fail(kOp, "symbol prefix '" + std::string(symbol_prefix) + "' may hold only letters, digits and '_'");
    }
  }
  Scanner sc(module_text);
  size_t begin = sc.skip_space(0);
  size_t end = module_text.size();
  if (sc.keyword_at(begin, "module")) {
    size_t p = sc.skip_space(begin + 6);
    if (auto name = sc.symbol_at(p)) p = sc.skip_space(name->end);
    if (sc.keyword_at(p, "attributes")) {
      p = sc.skip_space(p + 10);
      if (p >= end || module_text[p] != '{') fail(kOp, "expected '{' after the module's 'attributes'");
      p = sc.skip_space(sc.matching(p) + 1);
    }
    if (p >= end || module_text[p] != '{') fail(kOp, "expected the module's body after 'module'");
    size_t close = sc.matching(p);
    if (sc.skip_space(close + 1) != end) {
      fail(kOp, "unexpected text after the module: '" + excerpt(module_text.substr(close + 1)) +
                    "' (print the module without debug locations)");
    }
    begin = p + 1;
    end = close;
  }

  std::vector<Function> functions = find_functions(sc, begin, end);
  std::unordered_set<std::string_view> names;
  const Function* entry_function = nullptr;
  for (const Function& f : functions) {
    if (!names.insert(f.name).second) fail(kOp, "function @" + std::string(f.name) + " is defined twice");
    if (f.name == entry) entry_function = &f;
  }
  if (!entry_function) {
    std::string found;
    for (const Function& f : functions) found += (found.empty() ? "@" : ", @") + std::string(f.name);
    fail(kOp, "no function @" + std::string(entry) + " in the module (found: " +
                  (found.empty() ? "none" : found) + ")");
  }

  ImportedFunction out;
  out.symbol = std::string(symbol_prefix) + std::string(entry);
  for (const Function& f : functions) {
    out.defined_symbols.push_back(std::string(symbol_prefix) + std::string(f.name));
    out.text += "  func.func private ";
    out.text += symbol_ref(out.defined_symbols.back());
    out.text += rename_symbols(module_text.substr(f.signature_begin, f.end - f.signature_begin), names,
                               symbol_prefix);
    out.text += '\n';
  }
  parse_signature(sc, *entry_function, out);
  return out;
}

}  // namespace torch_tpu::hlo
