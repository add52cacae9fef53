/**
 * @file sweep.hpp
 * The sweep.yaml front end: one base experiment plus the axes to vary (`sweep:` keys and
 * `zip:` groups), expanded into a cartesian product, filtered by `constraints:`, each
 * experiment named and given a stable id. The schema and the rules are in docs/sweep.md;
 * experiment_yaml.hpp turns each expanded configuration into a TrainingExperiment.
 */
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "experiments/config_reader.hpp"

namespace mv {

/// One experiment of a sweep: the base with the values of one combination of the axes.
struct ExpandedExperiment {
  /// The sweep file it comes from (diagnostics name it).
  std::filesystem::path file;
  /// Unique, filesystem-safe name (from the `base.name` template or the swept values).
  std::string name;
  /// FNV-1a hash of the configuration without `name`, emitted canonically (configId).
  uint64_t id = 0;
  /// The resolved configuration: `base:` with the axis values set; `name` holds `name`. The
  /// base's nodes keep their marks (lines) in the sweep file; values set by axes are copies
  /// without marks, placed by `axis_lines`.
  YAML::Node config;
  /// What the axes set, in axis order: dotted key -> value text (flow YAML for maps).
  std::vector<std::pair<std::string, std::string>> swept;
  /// Dotted key -> 1-based line of the axis that set it: where problems with that value, or
  /// with keys inside it, are reported.
  std::vector<std::pair<std::string, int>> axis_lines;
};

/// An expanded sweep file.
struct Sweep {
  std::filesystem::path file;
  /// The experiments that pass every constraint, in product order (first axis slowest).
  std::vector<ExpandedExperiment> experiments;
  /// Every dotted key an axis sets, in axis order (the swept columns of a summary).
  std::vector<std::string> swept_keys;
  /// Combinations of the axes before the constraints (1 without axes).
  uint64_t combinations = 0;
  /// Combinations a constraint dropped.
  uint64_t dropped = 0;
};

/// Largest number of combinations a sweep may expand to (before constraints: they are
/// only visited, as indices).
inline constexpr uint64_t kMaxCombinations = 10'000'000;
/// Largest number of experiments a sweep may keep after constraints: each is held as a
/// configuration of its own (tens of kB), so 10^5 take a few GB at most.
inline constexpr uint64_t kMaxExperiments = 100'000;

/**
 * Reads and expands the sweep file `file`. Every problem (unreadable file, YAML syntax,
 * unknown top-level key, malformed axis, bad constraint or name template) goes to `diags`
 * with the file, line and key; the experiments returned are then incomplete.
 */
Sweep readSweep(const std::filesystem::path& file, Diagnostics& diags);

/// Like readSweep, from the text of a sweep file; `file` names it in diagnostics and
/// resolves relative paths later.
Sweep parseSweep(const std::string& text, const std::filesystem::path& file, Diagnostics& diags);

/// `node` as canonical text: mapping keys sorted, every scalar length-prefixed (so no two
/// different trees give the same text), no styles, comments or marks.
std::string canonicalText(const YAML::Node& node);

/// The stable id of a configuration: 64-bit FNV-1a of canonicalText(config) without its
/// top-level `name`. The same configuration gets the same id whatever the axis order.
uint64_t configId(const YAML::Node& config);

/// canonicalText(config) without `name` and `seed`: experiments with equal keys build
/// equal tables (the seed changes random streams, not sizes).
std::string sizingKey(const YAML::Node& config);

/// The parts of a dotted key path: "a.b" gives {"a", "b"}; "a..b" and "a." have empty parts.
std::vector<std::string> splitKeyPath(const std::string& key);

/// `text` made safe as a file name: characters other than letters, digits and . _ + - become
/// '_', runs of '_' collapse, leading and trailing . _ - go, at most 200 characters;
/// "experiment" when nothing is left.
std::string safeName(std::string_view text);

/// Deepest nesting of a constraint expression: parentheses and unary operators while it is
/// parsed, and the tree of its operators (`a + a + ... + a` is as deep as it is long), which
/// evaluation walks recursively; far above a written constraint, far below a stack's limit.
inline constexpr int kMaxExpressionDepth = 256;

/// A value of a constraint expression.
using ExprValue = std::variant<bool, int64_t, double, std::string>;

/// A syntax, lookup or type error in a constraint expression.
class ExpressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/**
 * A parsed constraint expression: integers, reals, 'strings' or "strings", true, false,
 * dotted keys, + - * / % (integer / and % truncate, as in C), == != < <= > >=, && || !,
 * parentheses. Precedence from loosest: ||, &&, comparison, + -, * / %, unary ! and -.
 */
class Expression {
 public:
  /// Value of a dotted key; nullopt when the key is not set.
  using Lookup = std::function<std::optional<ExprValue>(const std::string& key)>;

  /// Parses `text`; throws ExpressionError naming the column of a syntax error.
  explicit Expression(std::string_view text);

  /// Evaluates the expression; throws ExpressionError for an unset key, a type mismatch,
  /// a division by zero or an integer overflow.
  ExprValue evaluate(const Lookup& lookup) const;

  /// The dotted keys the expression reads, in order of appearance.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  struct Term {
    enum class Kind : uint8_t { kLiteral, kKey, kUnary, kBinary } kind = Kind::kLiteral;
    std::string text;  ///< key or operator
    int lhs = -1;      ///< operand, or the index into literals_ of a literal
    int rhs = -1;
  };
  class Parser;

  ExprValue evaluateTerm(int index, const Lookup& lookup) const;

  std::vector<Term> terms_;
  std::vector<ExprValue> literals_;
  int root_ = -1;
  std::vector<std::string> keys_;
};

/// The value a YAML scalar has in an expression: an integer, a real, true/false, or a
/// string (always a string when quoted in the file).
ExprValue scalarValue(const YAML::Node& scalar);

/// `value` as text ("true", "42", "0.5", "hpcc").
std::string valueText(const ExprValue& value);

}  // namespace mv
