/**
 * @file config_reader.hpp
 * Reading user YAML with errors a person can act on: every problem is collected (not
 * thrown at the first) with the file, line, key path and a hint (the nearest valid key for
 * a misspelt one), so one run reports everything that is wrong.
 */
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ecs/units.hpp"

namespace mv {

/// One problem in an input file.
struct Diagnostic {
  std::string file;
  int line = 0;         ///< 1-based; 0 when unknown
  std::string key;      ///< dotted key path, empty for file-level problems
  std::string message;

  std::string format() const;
};

/// All problems found so far.
class Diagnostics {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  bool empty() const { return items_.empty(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  /// Every diagnostic, one per line.
  std::string format() const;

 private:
  std::vector<Diagnostic> items_;
};

/// The most values (scalars, mappings and sequences, aliases followed) an input YAML
/// document may hold: far above any real sweep or netsim file, far below what a small file
/// of nested aliases expands to (a "billion laughs" document).
inline constexpr int64_t kMaxYamlValues = 1'000'000;
/// The deepest nesting of mappings and sequences an input YAML document may have.
inline constexpr int kMaxYamlDepth = 100;

/**
 * False, with a diagnostic, when `root` holds more than kMaxYamlValues values once its
 * aliases are followed, or nests deeper than kMaxYamlDepth; counted without expanding the
 * aliases (each anchored collection once).
 */
bool checkExpandedSize(const YAML::Node& root, const std::string& file, Diagnostics& diags);

/**
 * Reports every key written twice in one mapping of `root` (yaml-cpp keeps both and reads
 * the first, so the second would be ignored without a word), at the repeat's line, with
 * the dotted key path and the line of the first; and every key that is a list or a mapping
 * (no reader can take it). A node reached again through an alias is not walked again.
 * False when some key is not a scalar: the document cannot be read further.
 */
bool checkKeys(const YAML::Node& root, const std::string& file, Diagnostics& diags);

/// The valid key closest to `key` by edit distance, or "" when none is close.
std::string nearestKey(std::string_view key, const std::vector<std::string>& valid);

/// A YAML mapping being read: typed getters with defaults, units and range checks.
class ConfigReader {
 public:
  ConfigReader(YAML::Node node, std::string file, std::string path, Diagnostics& diags)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), diags_(&diags) {}

  bool has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }
  /// The reader of a nested mapping (an empty one when absent).
  ConfigReader child(const std::string& key) const;
  /// A reader of this mapping without `key` (same path; it records where this one does).
  ConfigReader except(const std::string& key) const;
  /**
   * From now on every value this reader and the readers of its nested mappings return is
   * written into `resolved` (a copy of the document being read) under its key: defaults
   * included, each as the text that reads back to the same value. A default outside the
   * key's range (a sentinel such as "derived") is not written, so the key stays absent.
   */
  void recordInto(YAML::Node resolved);
  /// Reports keys of this mapping that are not in `allowed`, suggesting the nearest.
  void allowOnly(const std::vector<std::string>& allowed) const;

  int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const;
  double real(const std::string& key, double fallback, double lo, double hi) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  /// One of `choices`; returns its index (fallback index when absent).
  int choice(const std::string& key, int fallback, const std::vector<std::string>& choices) const;
  /// A rate in [lo, hi] b/s (the engine's rate range by default).
  int64_t rateBps(const std::string& key, int64_t fallback, int64_t lo = kMinRateBps, int64_t hi = kMaxRateBps) const;
  /// A time in [lo, hi] ps ("must be positive" when lo > 0 and it is 0).
  int64_t durationPs(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const;
  /// A size in [lo, hi] bytes ("must be positive" when lo > 0 and it is 0).
  int64_t sizeBytes(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const;

  /// Records a problem at `key` (or at this mapping when key is empty).
  void error(const std::string& key, const std::string& message) const;
  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }
  std::string keyPath(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  int lineOf(const std::string& key) const;
  // The getters without recording.
  int64_t readInteger(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const;
  double readReal(const std::string& key, double fallback, double lo, double hi) const;
  bool readBoolean(const std::string& key, bool fallback) const;
  int readChoice(const std::string& key, int fallback, const std::vector<std::string>& choices) const;
  /// The scalar at `key` as text, or false (with a diagnostic when it is not a scalar).
  bool scalar(const std::string& key, std::string& out) const;

  /// Writes `value` (YAML text or a scalar) at `key` of the resolved copy, when recording.
  void record(const std::string& key, const YAML::Node& value) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  Diagnostics* diags_;
  mutable YAML::Node resolved_;  // a handle into the resolved copy; written through
  bool recording_ = false;
};

}  // namespace mv
