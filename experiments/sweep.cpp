/**
 * @file sweep.cpp
 * Expansion of sweep.yaml: axes, cartesian product, constraints (a small recursive-descent
 * expression evaluator), names and ids.
 */
#include "experiments/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "ecs/input_file.hpp"
#include "ecs/text.hpp"

namespace mv {

// ---------------------------------------------------------------------------------------
// Values and expressions

ExprValue scalarValue(const YAML::Node& scalar) {
  const std::string& s = scalar.Scalar();
  if (scalar.Tag() == "!") return s;  // quoted in the file: always a string
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  const bool numeric_start =
      !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.');
  if (numeric_start) {
    const char* first = s.data() + (s[0] == '+' ? 1 : 0);
    const char* last = s.data() + s.size();
    int64_t i = 0;
    if (auto [end, ec] = std::from_chars(first, last, i); ec == std::errc() && end == last) return i;
    double d = 0;
    if (auto [end, ec] = std::from_chars(first, last, d); ec == std::errc() && end == last) return d;
  }
  return s;
}

std::string valueText(const ExprValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) {
    std::ostringstream out;
    out << *d;
    return out.str();
  }
  return std::get<std::string>(value);
}

namespace {

const char* typeName(const ExprValue& v) {
  static constexpr const char* kNames[] = {"true/false", "integer", "real", "string"};
  return kNames[v.index()];
}

/// `v` for a message: strings quoted.
std::string quoted(const ExprValue& v) {
  return std::holds_alternative<std::string>(v) ? "'" + std::get<std::string>(v) + "'" : valueText(v);
}

bool isNumber(const ExprValue& v) {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}

double asReal(const ExprValue& v) {
  return std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
}

bool isKeyStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

class Expression::Parser {
 public:
  Parser(std::string_view text, Expression& out) : text_(text), out_(out) {}

  int parseAll() {
    const int root = parseOr();
    skipSpace();
    if (pos_ < text_.size()) fail("unexpected '" + std::string(text_.substr(pos_, 1)) + "'");
    return root;
  }

 private:
  int parseOr() {
    int lhs = parseAnd();
    while (accept("||")) lhs = binary("||", lhs, parseAnd());
    return lhs;
  }

  int parseAnd() {
    int lhs = parseComparison();
    while (accept("&&")) lhs = binary("&&", lhs, parseComparison());
    return lhs;
  }

  int parseComparison() {
    const int lhs = parseSum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (accept(op)) return binary(op, lhs, parseSum());
    }
    return lhs;
  }

  int parseSum() {
    int lhs = parseProduct();
    for (;;) {
      if (accept("+")) {
        lhs = binary("+", lhs, parseProduct());
      } else if (accept("-")) {
        lhs = binary("-", lhs, parseProduct());
      } else {
        return lhs;
      }
    }
  }

  int parseProduct() {
    int lhs = parseUnary();
    for (;;) {
      if (accept("*")) {
        lhs = binary("*", lhs, parseUnary());
      } else if (accept("/")) {
        lhs = binary("/", lhs, parseUnary());
      } else if (accept("%")) {
        lhs = binary("%", lhs, parseUnary());
      } else {
        return lhs;
      }
    }
  }

  int parseUnary() {
    skipSpace();
    if (peek() == '!' && peek(1) != '=') {
      ++pos_;
      const Nested nested(*this);
      return unary("!", parseUnary());
    }
    if (accept("-")) {
      const Nested nested(*this);
      return unary("-", parseUnary());
    }
    return parsePrimary();
  }

  int parsePrimary() {
    skipSpace();
    if (pos_ >= text_.size()) fail("unexpected end of the expression");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      const Nested nested(*this);
      const int inner = parseOr();
      if (!accept(")")) fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
      return parseNumber();
    }
    if (c == '\'' || c == '"') return parseString(c);
    if (isKeyStart(c)) return parseKey();
    fail("unexpected '" + std::string(1, c) + "'");
  }

  int parseNumber() {
    const size_t start = pos_;
    bool real = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (peek() == '.') {
      real = true;
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      real = true;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    const std::string_view token = text_.substr(start, pos_ - start);
    if (real) {
      double d = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
      if (ec != std::errc() || end != token.data() + token.size())
        failAt(start, "bad number '" + std::string(token) + "'");
      return literal(d);
    }
    int64_t i = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), i);
    if (ec != std::errc()) failAt(start, "integer '" + std::string(token) + "' is too large");
    return literal(i);
  }

  int parseString(char quote) {
    const size_t start = pos_++;
    const size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) failAt(start, "unterminated string");
    const size_t from = pos_;
    pos_ = close + 1;
    return literal(std::string(text_.substr(from, close - from)));
  }

  int parseKey() {
    const size_t start = pos_;
    for (;;) {
      while (pos_ < text_.size() && isKeyChar(text_[pos_])) ++pos_;
      if (peek() != '.' || !isKeyChar(peek(1))) break;
      ++pos_;
    }
    const std::string key(text_.substr(start, pos_ - start));
    if (key == "true" || key == "false") return literal(key == "true");
    Term t;
    t.kind = Term::Kind::kKey;
    t.text = key;
    if (std::find(out_.keys_.begin(), out_.keys_.end(), key) == out_.keys_.end()) out_.keys_.push_back(key);
    return add(std::move(t));
  }

  int literal(ExprValue value) {
    out_.literals_.push_back(std::move(value));
    Term t;
    t.lhs = static_cast<int>(out_.literals_.size()) - 1;
    return add(std::move(t));
  }

  int unary(const char* op, int operand) {
    Term t;
    t.kind = Term::Kind::kUnary;
    t.text = op;
    t.lhs = operand;
    return add(std::move(t));
  }

  int binary(const char* op, int lhs, int rhs) {
    Term t;
    t.kind = Term::Kind::kBinary;
    t.text = op;
    t.lhs = lhs;
    t.rhs = rhs;
    return add(std::move(t));
  }

  /// Appends `t`, refusing a tree deeper than kMaxExpressionDepth (evaluation recurses
  /// over it: `a + a + ... + a` nests without parentheses).
  int add(Term t) {
    int depth = 1;
    if (t.kind != Term::Kind::kLiteral && t.kind != Term::Kind::kKey) depth += depth_[static_cast<size_t>(t.lhs)];
    if (t.kind == Term::Kind::kBinary) depth = std::max(depth, 1 + depth_[static_cast<size_t>(t.rhs)]);
    if (depth > kMaxExpressionDepth) tooDeep();
    depth_.push_back(depth);
    out_.terms_.push_back(std::move(t));
    return static_cast<int>(out_.terms_.size()) - 1;
  }

  /// One level of parentheses or unary operators while it is parsed (the parser recurses).
  class Nested {
   public:
    explicit Nested(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxExpressionDepth) p_.tooDeep();
    }
    ~Nested() { --p_.nesting_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& p_;
  };

  [[noreturn]] void tooDeep() const {
    fail("nested deeper than " + std::to_string(kMaxExpressionDepth) +
         " levels (parentheses, unary operators or a chain of operators); split the constraint");
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  /// Consumes `op` after optional spaces; a one-character operator never eats the start of a
  /// two-character one ("<" of "<=", "&" alone is no operator).
  bool accept(std::string_view op) {
    skipSpace();
    if (text_.substr(pos_, op.size()) != op) return false;
    if (op.size() == 1 && (op == "<" || op == ">") && peek(1) == '=') return false;
    pos_ += op.size();
    return true;
  }

  [[noreturn]] void fail(const std::string& what) const { failAt(pos_, what); }
  [[noreturn]] void failAt(size_t at, const std::string& what) const {
    throw ExpressionError("column " + std::to_string(at + 1) + ": " + what);
  }

  std::string_view text_;
  size_t pos_ = 0;
  Expression& out_;
  std::vector<int> depth_;  ///< the depth of each term's tree
  int nesting_ = 0;
};

Expression::Expression(std::string_view text) {
  Parser parser(text, *this);
  root_ = parser.parseAll();
}

ExprValue Expression::evaluate(const Lookup& lookup) const {
  return evaluateTerm(root_, lookup);
}

namespace {

bool requireBool(const ExprValue& v, const std::string& op) {
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  throw ExpressionError("'" + op + "' needs true/false, got " + quoted(v) + " (" + typeName(v) + ")");
}

ExprValue integerArithmetic(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(a, b, &r);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(a, b, &r);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(a, b, &r);
  } else {
    if (b == 0) throw ExpressionError("division by zero");
    if (a == INT64_MIN && b == -1) throw ExpressionError("integer overflow");
    r = op == "/" ? a / b : a % b;
  }
  if (overflow) throw ExpressionError("integer overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b));
  return r;
}

ExprValue arithmetic(const std::string& op, const ExprValue& a, const ExprValue& b) {
  if (!isNumber(a) || !isNumber(b)) {
    throw ExpressionError("'" + op + "' needs numbers, got " + quoted(a) + " (" + typeName(a) + ") and " + quoted(b) +
                          " (" + typeName(b) + ")");
  }
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    return integerArithmetic(op, std::get<int64_t>(a), std::get<int64_t>(b));
  }
  if (op == "%") throw ExpressionError("'%' needs integers");
  const double x = asReal(a);
  const double y = asReal(b);
  if (op == "/" && y == 0) throw ExpressionError("division by zero");
  return op == "+" ? x + y : op == "-" ? x - y : op == "*" ? x * y : x / y;
}

/// -1, 0 or 1; throws for values of different kinds or an ordering of true/false.
int compareValues(const std::string& op, const ExprValue& a, const ExprValue& b) {
  if (isNumber(a) && isNumber(b)) {
    if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
      const int64_t x = std::get<int64_t>(a);
      const int64_t y = std::get<int64_t>(b);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const double x = asReal(a);
    const double y = asReal(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.index() != b.index()) {
    throw ExpressionError("cannot compare " + quoted(a) + " (" + typeName(a) + ") with " + quoted(b) + " (" +
                          typeName(b) + ")");
  }
  if (std::holds_alternative<bool>(a)) {
    if (op != "==" && op != "!=") throw ExpressionError("'" + op + "' cannot order true/false values");
    return std::get<bool>(a) == std::get<bool>(b) ? 0 : 1;
  }
  const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool comparison(const std::string& op, int c) {
  if (op == "==") return c == 0;
  if (op == "!=") return c != 0;
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

}  // namespace

ExprValue Expression::evaluateTerm(int index, const Lookup& lookup) const {
  const Term& t = terms_[static_cast<size_t>(index)];
  switch (t.kind) {
    case Term::Kind::kLiteral:
      return literals_[static_cast<size_t>(t.lhs)];
    case Term::Kind::kKey: {
      std::optional<ExprValue> v = lookup(t.text);
      if (!v) {
        throw ExpressionError(
            "unknown key '" + t.text + "': it is set neither in base nor by an axis" +
            (t.text.find('.') == std::string::npos ? " (write strings in quotes: '" + t.text + "')" : std::string()));
      }
      return *v;
    }
    case Term::Kind::kUnary: {
      const ExprValue v = evaluateTerm(t.lhs, lookup);
      if (t.text == "!") return !requireBool(v, "!");
      return arithmetic("-", int64_t{0}, v);
    }
    case Term::Kind::kBinary:
      break;
  }
  const ExprValue a = evaluateTerm(t.lhs, lookup);
  if (t.text == "&&" || t.text == "||") {
    const bool x = requireBool(a, t.text);
    if (t.text == "&&" ? !x : x) return x;
    return requireBool(evaluateTerm(t.rhs, lookup), t.text);
  }
  const ExprValue b = evaluateTerm(t.rhs, lookup);
  if (t.text.size() == 1 && std::string_view("+-*/%").find(t.text[0]) != std::string_view::npos) {
    return arithmetic(t.text, a, b);
  }
  return comparison(t.text, compareValues(t.text, a, b));
}

// ---------------------------------------------------------------------------------------
// Canonical text, ids, names

namespace {

void appendCanonical(const YAML::Node& node, std::string& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      std::map<std::string, YAML::Node> sorted;
      for (const auto& kv : node) sorted.emplace(kv.first.Scalar(), kv.second);
      out += '{';
      for (const auto& [key, value] : sorted) {
        out += std::to_string(key.size()) + ':' + key;
        appendCanonical(value, out);
      }
      out += '}';
      break;
    }
    case YAML::NodeType::Sequence:
      out += '[';
      for (const auto& item : node) appendCanonical(item, out);
      out += ']';
      break;
    case YAML::NodeType::Scalar:
      out += std::to_string(node.Scalar().size()) + '=' + node.Scalar();
      break;
    default:
      out += '~';
      break;
  }
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::string canonicalText(const YAML::Node& node) {
  std::string out;
  appendCanonical(node, out);
  return out;
}

namespace {

/// `config` without the top-level keys in `dropped` (a non-map as it is).
YAML::Node withoutKeys(const YAML::Node& config, std::initializer_list<std::string_view> dropped) {
  if (!config.IsMap()) return config;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : config) {
    if (std::find(dropped.begin(), dropped.end(), kv.first.Scalar()) == dropped.end()) {
      out.force_insert(kv.first, kv.second);
    }
  }
  return out;
}

}  // namespace

uint64_t configId(const YAML::Node& config) { return fnv1a(canonicalText(withoutKeys(config, {"name"}))); }

std::string sizingKey(const YAML::Node& config) { return canonicalText(withoutKeys(config, {"name", "seed"})); }

std::string safeName(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-';
    const char mapped = ok ? c : '_';
    if (mapped == '_' && !out.empty() && out.back() == '_') continue;
    out += mapped;
  }
  const auto trim = [](char c) { return c == '.' || c == '_' || c == '-'; };
  while (!out.empty() && trim(out.front())) out.erase(out.begin());
  if (out.size() > 200) out.resize(200);
  while (!out.empty() && trim(out.back())) out.pop_back();
  return out.empty() ? "experiment" : out;
}

std::vector<std::string> splitKeyPath(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
    parts.push_back(key.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(key.substr(start));
  return parts;
}

// ---------------------------------------------------------------------------------------
// Sweep files

namespace {

/// The child `key` of mapping `node`, without creating it; nullopt when absent.
std::optional<YAML::Node> childOf(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) return std::nullopt;
  const YAML::Node& map = node;
  YAML::Node child = map[key];
  if (!child.IsDefined()) return std::nullopt;
  return child;
}

/// The node at the dotted path `parts[from..]` below `node`; nullopt when absent.
std::optional<YAML::Node> nodeAt(const YAML::Node& node, const std::vector<std::string>& parts, size_t from = 0) {
  YAML::Node cur(node);  // Node handles are rebound with reset(): assignment would overwrite the node itself
  for (size_t i = from; i < parts.size(); ++i) {
    const std::optional<YAML::Node> next = childOf(cur, parts[i]);
    if (!next) return std::nullopt;
    cur.reset(*next);
  }
  return cur;
}

bool validKeyPath(const std::string& key) {
  const std::vector<std::string> parts = splitKeyPath(key);
  if (parts.empty()) return false;
  return std::all_of(parts.begin(), parts.end(),
                     [](const std::string& p) { return !p.empty() && std::all_of(p.begin(), p.end(), isKeyChar); });
}

int lineOf(const YAML::Node& node) {
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

/// A value for messages and the swept columns: the scalar, or flow YAML for a collection.
std::string nodeText(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

/// The scalars of `node`, depth first, joined by '_' (a map or list inside a name).
std::string leafText(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  std::string out;
  for (const auto& item : node) {
    const std::string part = leafText(node.IsMap() ? item.second : YAML::Node(item));
    if (part.empty()) continue;
    out += (out.empty() ? "" : "_") + part;
  }
  return out;
}

/// A copy of `node` that shares no node with it (and has no marks): values an axis sets
/// are copied so that setting keys inside one experiment's mapping changes no other.
YAML::Node deepCopy(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      YAML::Node out(YAML::NodeType::Map);
      for (const auto& kv : node) out.force_insert(kv.first.Scalar(), deepCopy(kv.second));
      return out;
    }
    case YAML::NodeType::Sequence: {
      YAML::Node out(YAML::NodeType::Sequence);
      for (const YAML::Node& item : node) out.push_back(deepCopy(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      YAML::Node out(node.Scalar());
      out.SetTag(node.Tag());
      return out;
    }
    default:
      return YAML::Node(node.Type());
  }
}

/// The items of a sequence.
std::vector<YAML::Node> valuesOf(const YAML::Node& list) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& item : list) out.push_back(item);
  return out;
}

/// One axis of the product: a `sweep:` key, or a `zip:` group of keys varying together.
struct Axis {
  int line = 0;
  std::string path;  ///< "sweep.<key>" or "zip[g]": where its problems are reported
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> paths;
  /// values[k][i]: value i of key k.
  std::vector<std::vector<YAML::Node>> values;
  std::vector<int> key_lines;
  size_t size = 0;
};

/// One key set to one value in a combination (pointers: sorting must not assign Nodes,
/// which would overwrite the nodes themselves).
struct Assignment {
  const std::vector<std::string>* path;
  const YAML::Node* value;
  int line;  ///< of the axis key
};

/// A constraint as a message quotes it: its first 80 characters (the error's column says
/// where the problem is).
std::string quotedConstraint(const std::string& text) {
  constexpr size_t kQuoted = 80;
  return characterCount(text) <= kQuoted ? text : text.substr(0, prefixOfCharacters(text, kQuoted)) + "...";
}

/// A constraint of the file, parsed once.
struct Constraint {
  std::string text;
  int line = 0;
  std::optional<Expression> expr;
  bool broken = false;  ///< reported once; not evaluated again
};

/// Expands one sweep file; holds what the phases share.
class Expander {
 public:
  Expander(const std::string& text, const std::filesystem::path& file, Diagnostics& diags)
      : text_(text), file_(file.string()), stem_(file.stem().string()), diags_(diags),
        problems_before_(diags.items().size()) {
    sweep_.file = file;
  }

  Sweep run() {
    if (!load()) return std::move(sweep_);
    const ConfigReader root(root_, file_, "", diags_);
    root.allowOnly({"base", "sweep", "zip", "constraints"});
    if (!readBase(root)) return std::move(sweep_);
    readSweepAxes(root);
    readZipAxes(root);
    std::stable_sort(axes_.begin(), axes_.end(), [](const Axis& a, const Axis& b) { return a.line < b.line; });
    readConstraints(root);
    for (const Axis& axis : axes_)
      sweep_.swept_keys.insert(sweep_.swept_keys.end(), axis.keys.begin(), axis.keys.end());
    expand();
    return std::move(sweep_);
  }

 private:
  /// Records a problem once (a problem of the base or an axis recurs in every combination).
  void report(int line, const std::string& key, const std::string& message) {
    Diagnostic d{file_, line, key, message};
    if (reported_.insert(d.format()).second) diags_.add(std::move(d));
  }

  bool load() {
    try {
      root_.reset(YAML::Load(text_));
    } catch (const YAML::ParserException& e) {
      report(e.mark.line + 1, "", "YAML syntax error: " + e.msg);
      return false;
    }
    if (!checkExpandedSize(root_, file_, diags_)) return false;
    if (!checkKeys(root_, file_, diags_)) return false;
    if (!root_.IsMap()) {
      report(lineOf(root_), "", "expected a mapping with base: and optionally sweep:, zip:, constraints:");
      return false;
    }
    return true;
  }

  bool readBase(const ConfigReader& root) {
    const std::optional<YAML::Node> base = childOf(root_, "base");
    if (!base) {
      report(lineOf(root_), "base", "missing: the experiment every combination starts from");
      return false;
    }
    if (!base->IsMap()) {
      root.error("base", "expected a mapping (the keys of one experiment)");
      return false;
    }
    base_.reset(*base);
    extractBaseText();
    return true;
  }

  /// Checks an axis key and its list of values; adds the key to `axis` when usable.
  void addAxisKey(Axis& axis, const YAML::Node& key_node, const YAML::Node& list, const std::string& where) {
    const std::string key = key_node.Scalar();
    const int line = lineOf(key_node);
    if (!validKeyPath(key)) {
      report(line, where, "'" + key + "' is not a dotted key path (e.g. parallelism.tp)");
      return;
    }
    if (!list.IsSequence() || list.size() == 0) {
      report(line, where + "." + key, "expected a non-empty list of values, e.g. [1, 2]");
      return;
    }
    if (const auto it = key_lines_.find(key); it != key_lines_.end()) {
      report(line, where + "." + key, "swept twice (also at line " + std::to_string(it->second) + ")");
      return;
    }
    key_lines_.emplace(key, line);
    axis.keys.push_back(key);
    axis.paths.push_back(splitKeyPath(key));
    axis.values.push_back(valuesOf(list));
    axis.key_lines.push_back(line);
  }

  void readSweepAxes(const ConfigReader& root) {
    const std::optional<YAML::Node> sweep = childOf(root_, "sweep");
    if (!sweep || sweep->IsNull()) return;
    if (!sweep->IsMap()) {
      root.error("sweep", "expected a mapping from dotted keys to lists of values");
      return;
    }
    for (const auto& kv : *sweep) {
      Axis axis;
      axis.line = lineOf(kv.first);
      axis.path = "sweep." + kv.first.Scalar();
      addAxisKey(axis, kv.first, kv.second, "sweep");
      if (axis.keys.empty()) continue;
      axis.size = axis.values[0].size();
      axes_.push_back(std::move(axis));
    }
  }

  void readZipAxes(const ConfigReader& root) {
    const std::optional<YAML::Node> zip = childOf(root_, "zip");
    if (!zip || zip->IsNull()) return;
    if (!zip->IsSequence()) {
      root.error("zip", "expected a list of groups, each a mapping from dotted keys to equal-length lists");
      return;
    }
    for (size_t g = 0; g < zip->size(); ++g) {
      const YAML::Node group = (*zip)[g];
      const std::string where = "zip[" + std::to_string(g) + "]";
      if (!group.IsMap() || group.size() == 0) {
        report(lineOf(group), where, "expected a mapping from dotted keys to equal-length lists");
        continue;
      }
      Axis axis;
      axis.line = lineOf(group);
      axis.path = where;
      for (const auto& kv : group) addAxisKey(axis, kv.first, kv.second, where);
      if (axis.keys.size() != group.size()) continue;
      axis.size = axis.values[0].size();
      bool equal = true;
      for (const auto& list : axis.values) equal = equal && list.size() == axis.size;
      if (!equal) {
        std::string sizes;
        for (size_t k = 0; k < axis.keys.size(); ++k) {
          sizes += (k ? ", " : "") + axis.keys[k] + " has " + std::to_string(axis.values[k].size());
        }
        report(axis.line, where, "the lists of a zip group must have the same length (" + sizes + ")");
        continue;
      }
      axes_.push_back(std::move(axis));
    }
  }

  void readConstraints(const ConfigReader& root) {
    const std::optional<YAML::Node> list = childOf(root_, "constraints");
    if (!list || list->IsNull()) return;
    if (!list->IsSequence()) {
      root.error("constraints", "expected a list of expressions, e.g. [\"parallelism.tp <= 8\"]");
      return;
    }
    for (const YAML::Node& item : *list) {
      Constraint c;
      c.line = lineOf(item);
      if (!item.IsScalar()) {
        report(c.line, "constraints", "expected an expression string");
        continue;
      }
      c.text = item.Scalar();
      try {
        c.expr.emplace(c.text);
      } catch (const ExpressionError& e) {
        report(c.line, "constraints", "'" + quotedConstraint(c.text) + "': " + e.what());
        continue;
      }
      constraints_.push_back(std::move(c));
    }
  }

  /// The assignments of the combination `index` (one value index per axis).
  std::vector<Assignment> assignmentsOf(const std::vector<size_t>& index, const std::vector<Axis>& axes) const {
    std::vector<Assignment> out;
    for (size_t a = 0; a < axes.size(); ++a) {
      for (size_t k = 0; k < axes[a].keys.size(); ++k)
        out.push_back({&axes[a].paths[k], &axes[a].values[k][index[a]], axes[a].key_lines[k]});
    }
    return out;
  }

  /// Value of `key` in a combination without building its configuration: the deepest
  /// assignment at or above the key wins, else the base.
  std::optional<ExprValue> lookup(const std::string& key, const std::vector<Assignment>& assignments) const {
    const std::vector<std::string> parts = splitKeyPath(key);
    const Assignment* best = nullptr;
    for (const Assignment& as : assignments) {
      const auto& p = *as.path;
      if (p.size() <= parts.size() && std::equal(p.begin(), p.end(), parts.begin()) &&
          (!best || p.size() > best->path->size())) {
        best = &as;
      }
    }
    const std::optional<YAML::Node> node =
        best ? nodeAt(*best->value, parts, best->path->size()) : nodeAt(base_, parts);
    if (!node || node->IsNull()) return std::nullopt;
    if (!node->IsScalar())
      throw ExpressionError("'" + key + "' is a " + (node->IsMap() ? "mapping" : "list") + ", not a value");
    return scalarValue(*node);
  }

  /// Whether the combination passes every constraint (broken constraints are reported once).
  bool passes(const std::vector<Assignment>& assignments) {
    for (Constraint& c : constraints_) {
      if (c.broken) continue;
      try {
        const ExprValue v = c.expr->evaluate([&](const std::string& key) { return lookup(key, assignments); });
        if (const bool* b = std::get_if<bool>(&v)) {
          if (!*b) return false;
          continue;
        }
        throw ExpressionError("not a condition (it evaluates to " + quoted(v) + ")");
      } catch (const ExpressionError& e) {
        c.broken = true;
        report(c.line, "constraints", "'" + quotedConstraint(c.text) + "': " + e.what());
      }
    }
    return true;
  }

  /// Combinations of the axes, or 0 when there are more than kMaxCombinations.
  uint64_t combinationCount() {
    uint64_t n = 1;
    for (const Axis& axis : axes_) {
      if (__builtin_mul_overflow(n, axis.size, &n) || n > kMaxCombinations) {
        report(axis.line, "sweep", "the axes give more than " + std::to_string(kMaxCombinations) + " combinations");
        return 0;
      }
    }
    return n;
  }

  void expand() {
    sweep_.combinations = combinationCount();
    if (sweep_.combinations == 0) return;
    std::vector<size_t> index(axes_.size(), 0);
    std::vector<std::vector<size_t>> kept;
    for (uint64_t c = 0; c < sweep_.combinations; ++c) {
      if (passes(assignmentsOf(index, axes_))) {
        kept.push_back(index);
      } else {
        ++sweep_.dropped;
      }
      for (size_t a = axes_.size(); a-- > 0;) {  // the last axis varies fastest
        if (++index[a] < axes_[a].size) break;
        index[a] = 0;
      }
    }
    if (kept.size() > kMaxExperiments) {
      report(axes_.front().line, "sweep",
             "the sweep keeps " + std::to_string(kept.size()) + " experiments after its constraints, more than " +
                 std::to_string(kMaxExperiments) + " (each is held as a configuration of its own); split it into "
                 "several sweep files or add constraints");
      return;
    }
    readNameTemplate();
    // A sweep this file's problems already refuse needs one experiment, for the problems of
    // its configuration and name (the same in every combination): materialising thousands
    // only to refuse them took seconds (a fuzzed file: 2 s, 20 s under the sanitizers).
    const size_t count = diags_.items().size() == problems_before_ ? kept.size() : std::min<size_t>(kept.size(), 1);
    for (size_t i = 0; i < count; ++i) sweep_.experiments.push_back(materialize(kept[i]));
    makeNamesUnique();
    reportRepeatedConfigurations(kept);
  }

  /// The first axis whose value differs between two combinations (they always differ).
  static size_t firstDifferingAxis(const std::vector<size_t>& a, const std::vector<size_t>& b) {
    size_t axis = 0;
    while (a[axis] == b[axis]) ++axis;
    return axis;
  }

  /// Two combinations with one configuration (a value repeated in an axis, or one another
  /// axis overrides) would be one experiment run twice under two names: an input error,
  /// reported once per axis at the first where the two differ, with the first such pair.
  void reportRepeatedConfigurations(const std::vector<std::vector<size_t>>& kept) {
    std::unordered_map<uint64_t, size_t> first_with_id;
    std::map<size_t, std::pair<std::string, size_t>> per_axis;  // axis -> (first pair, pairs)
    for (size_t i = 0; i < sweep_.experiments.size(); ++i) {
      const auto [it, fresh] = first_with_id.emplace(sweep_.experiments[i].id, i);
      if (fresh) continue;
      auto& [pair, count] = per_axis[firstDifferingAxis(kept[it->second], kept[i])];
      if (count++ == 0)
        pair = "experiments '" + sweep_.experiments[it->second].name + "' and '" + sweep_.experiments[i].name + "'";
    }
    for (const auto& [axis, repeat] : per_axis) {
      const auto& [pair, count] = repeat;
      report(axes_[axis].line, axes_[axis].path,
             pair + " have the same configuration" +
                 (count > 1 ? " (" + std::to_string(count) + " pairs in all)" : std::string()) +
                 ": a value is repeated, or another axis overrides it; every combination must be a different "
                 "experiment");
    }
  }

  void readNameTemplate() {
    const std::optional<YAML::Node> name = childOf(base_, "name");
    if (!name) {
      prefix_ = stem_;
      return;
    }
    if (!name->IsScalar()) {
      report(lineOf(*name), "name", "expected text, e.g. \"{workload.model}-tp{parallelism.tp}\"");
      return;
    }
    name_line_ = lineOf(*name);
    if (name->Scalar().find('{') == std::string::npos) {
      prefix_ = name->Scalar();
    } else {
      template_ = name->Scalar();
    }
  }

  /// A configuration of its own for one combination: the base parsed again (its nodes keep
  /// their lines; nothing is shared between experiments) with copies of the axis values set,
  /// shallow keys before deep ones (a whole mapping first, then keys inside it). The copies
  /// have no line: problems with them are placed through `axis_lines`.
  ExpandedExperiment materialize(const std::vector<size_t>& combination) {
    std::vector<Assignment> assignments = assignmentsOf(combination, axes_);
    std::stable_sort(assignments.begin(), assignments.end(),
                     [](const Assignment& a, const Assignment& b) { return a.path->size() < b.path->size(); });
    ExpandedExperiment x;
    x.file = sweep_.file;
    for (size_t a = 0; a < axes_.size(); ++a) {
      for (size_t k = 0; k < axes_[a].keys.size(); ++k) {
        x.swept.emplace_back(axes_[a].keys[k], nodeText(axes_[a].values[k][combination[a]]));
        x.axis_lines.emplace_back(axes_[a].keys[k], axes_[a].key_lines[k]);
      }
    }
    x.config.reset(YAML::Load(base_text_)["base"]);
    for (const Assignment& as : assignments) setValue(x.config, *as.path, deepCopy(*as.value), as.line);
    x.id = configId(x.config);
    x.name = template_.empty() ? defaultName(combination) : expandTemplate(x.config);
    return x;
  }

  /// The file with every line outside `base:` blanked: parsing it gives an experiment a
  /// base of its own whose nodes keep their lines, at a cost that does not grow with the
  /// axes. The whole file when `base:` shares lines with other sections or uses their anchors.
  void extractBaseText() {
    base_text_ = text_;
    int first = -1;
    int end = INT32_MAX;
    std::vector<int> others;
    for (const auto& kv : root_) {
      const int line = kv.first.Mark().line;
      if (kv.first.Scalar() == "base") {
        first = line;
      } else {
        others.push_back(line);
      }
    }
    for (const int line : others) {
      if (line == first) return;
      if (line > first) end = std::min(end, line);
    }
    std::string kept;
    std::istringstream in(text_);
    int n = 0;
    for (std::string line; std::getline(in, line); ++n) kept += (n >= first && n < end ? line : std::string()) + '\n';
    try {
      if (YAML::Load(kept)["base"].IsMap()) base_text_ = std::move(kept);
    } catch (const YAML::Exception&) {
      // an alias to an anchor outside base: keep the whole file
    }
  }

  /// Sets the dotted `path` of `config` to `value` (an axis value at `line`), creating
  /// mappings on the way.
  void setValue(YAML::Node& config, const std::vector<std::string>& path, const YAML::Node& value, int line) {
    YAML::Node cur(config);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      YAML::Node next = cur[path[i]];
      if (!next.IsDefined() || next.IsNull()) next = YAML::Node(YAML::NodeType::Map);
      if (!next.IsMap()) {
        std::string prefix;
        for (size_t j = 0; j <= i; ++j) prefix += (j ? "." : "") + path[j];
        report(line, prefix, "cannot set a key inside it: it is not a mapping");
        return;
      }
      cur.reset(next);
    }
    cur[path.back()] = value;
  }

  /// Base name, then one part per swept value: key and number ("pp4"), the text of other
  /// values ("hpcc"), the key or no_key for true/false, a mapping's scalars joined by '_'.
  std::string defaultName(const std::vector<size_t>& combination) const {
    const std::vector<Axis>& axes = axes_;
    std::string name = prefix_;
    for (size_t a = 0; a < axes.size(); ++a) {
      for (size_t k = 0; k < axes[a].keys.size(); ++k) {
        const YAML::Node& v = axes[a].values[k][combination[a]];
        const std::string& leaf = axes[a].paths[k].back();
        std::string part = leafText(v);
        if (v.IsScalar()) {
          const ExprValue value = scalarValue(v);
          if (const bool* b = std::get_if<bool>(&value)) {
            part = *b ? leaf : "no_" + leaf;
          } else if (isNumber(value) || (!part.empty() && std::isdigit(static_cast<unsigned char>(part[0])))) {
            part = leaf + part;
          }
        }
        name += "-" + part;
      }
    }
    return safeName(name);
  }

  /// `template_` with every {dotted.key} replaced by that key's value in `config`.
  std::string expandTemplate(const YAML::Node& config) {
    std::string out;
    size_t pos = 0;
    while (pos < template_.size()) {
      const size_t open = template_.find('{', pos);
      out += template_.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
      if (open == std::string::npos) break;
      const size_t close = template_.find('}', open);
      if (close == std::string::npos) {
        report(name_line_, "name", "unclosed '{' in the name template");
        break;
      }
      const std::string key = template_.substr(open + 1, close - open - 1);
      const std::optional<YAML::Node> v = validKeyPath(key) ? nodeAt(config, splitKeyPath(key)) : std::nullopt;
      if (v && !v->IsNull()) {
        out += leafText(*v);
      } else {
        report(name_line_, "name", "'{" + key + "}' in the name template is set neither in base nor by an axis");
      }
      pos = close + 1;
    }
    return safeName(out);
  }

  /// Appends -2, -3, ... to names already taken, in experiment order.
  void makeNamesUnique() {
    std::unordered_set<std::string> taken;
    for (ExpandedExperiment& x : sweep_.experiments) {
      std::string name = x.name;
      for (int n = 2; taken.count(name); ++n) name = x.name + "-" + std::to_string(n);
      taken.insert(name);
      x.name = name;
      x.config["name"] = name;
    }
  }

  const std::string& text_;
  std::string file_;
  std::string stem_;
  Diagnostics& diags_;
  size_t problems_before_;  ///< problems diags_ held before this file was read
  Sweep sweep_;
  YAML::Node root_;
  YAML::Node base_;
  std::vector<Axis> axes_;
  std::map<std::string, int> key_lines_;
  std::vector<Constraint> constraints_;
  std::string prefix_;
  std::string template_;
  std::string base_text_;
  int name_line_ = 0;
  std::set<std::string> reported_;
};

}  // namespace

Sweep parseSweep(const std::string& text, const std::filesystem::path& file, Diagnostics& diags) {
  Expander expander(text, file, diags);
  return expander.run();
}

Sweep readSweep(const std::filesystem::path& file, Diagnostics& diags) {
  const InputFile input = readInputFile(file);
  if (!input.ok()) {
    diags.add(Diagnostic{file.string(), 0, "", "cannot open the file: " + input.problem});
    Sweep sweep;
    sweep.file = file;
    return sweep;
  }
  return parseSweep(input.text, file, diags);
}

}  // namespace mv
