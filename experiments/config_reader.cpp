/**
 * @file config_reader.cpp
 * Typed, range-checked reading of YAML mappings with collected diagnostics.
 */
#include "experiments/config_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "ecs/quantity.hpp"
#include "ecs/text.hpp"

namespace mv {

std::string Diagnostic::format() const {
  std::ostringstream out;
  out << (file.empty() ? "multiverse" : file);
  if (line > 0) out << ':' << line;
  out << ": ";
  if (!key.empty()) out << key << ": ";
  out << message;
  return printable(out.str());  // values quoted from the file may hold control characters
}

std::string Diagnostics::format() const {
  std::string out;
  for (const Diagnostic& d : items_) out += d.format() + "\n";
  return out;
}

namespace {

/// Walks a document for checkKeys, each mapping and sequence once.
class KeyChecker {
 public:
  KeyChecker(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  /// Keys that are lists or mappings, found so far.
  int nonScalarKeys() const { return non_scalar_; }

  void walk(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap() && !node.IsSequence()) return;
    if (node.Mark().pos >= 0 && !visited_.insert(node.Mark().pos).second) return;  // an alias of a walked node
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) walk(node[i], path + "[" + std::to_string(i) + "]");
      return;
    }
    std::map<std::string, int> first_line;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        ++non_scalar_;
        diags_.add(Diagnostic{file_, kv.first.Mark().line + 1, path,
                              "a key must be a plain name, not a list or a mapping"});
        continue;
      }
      const std::string key = path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar();
      const int line = kv.first.Mark().line + 1;
      const auto [it, fresh] = first_line.emplace(kv.first.Scalar(), line);
      if (!fresh) {
        diags_.add(Diagnostic{file_, line, key,
                              "duplicate key (first at line " + std::to_string(it->second) + "; remove one of them)"});
      }
      walk(kv.second, key);
    }
  }

 private:
  const std::string& file_;
  Diagnostics& diags_;
  std::set<int> visited_;  ///< source positions of the collections walked
  int non_scalar_ = 0;
};

/// Counts the values of a document as a reader that follows its aliases sees them, each
/// collection counted once and its total reused for every alias of it; saturates above
/// `cap`.
class ExpandedCounter {
 public:
  explicit ExpandedCounter(int64_t cap) : cap_(cap) {}

  /// Saturates (too large) past kMaxYamlDepth levels of nesting as well: the walk recurses.
  int64_t count(const YAML::Node& node, int depth = 0) {
    if (!node.IsMap() && !node.IsSequence()) return 1;
    if (depth > kMaxYamlDepth) return cap_ + 1;
    const int pos = node.Mark().pos;
    if (pos >= 0) {
      if (const auto it = memo_.find(pos); it != memo_.end()) return it->second;
    }
    int64_t n = 1;
    for (const auto& item : node) {
      n += node.IsMap() ? count(item.first, depth + 1) + count(item.second, depth + 1) : count(item, depth + 1);
      if (n > cap_) break;
    }
    n = std::min(n, cap_ + 1);
    if (pos >= 0) memo_[pos] = n;
    return n;
  }

 private:
  int64_t cap_;
  std::map<int, int64_t> memo_;  ///< collection source position -> its count
};

}  // namespace

bool checkExpandedSize(const YAML::Node& root, const std::string& file, Diagnostics& diags) {
  if (ExpandedCounter(kMaxYamlValues).count(root) <= kMaxYamlValues) return true;
  diags.add(Diagnostic{file, 1, "",
                       "the document holds more than " + std::to_string(kMaxYamlValues) +
                           " values once its aliases (*name) are followed, or nests deeper than " +
                           std::to_string(kMaxYamlDepth) + " levels; write the lists out or shorten them"});
  return false;
}

bool checkKeys(const YAML::Node& root, const std::string& file, Diagnostics& diags) {
  KeyChecker checker(file, diags);
  checker.walk(root, "");
  return checker.nonScalarKeys() == 0;
}

std::string nearestKey(std::string_view key, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& candidate : valid) {
    std::vector<size_t> row(candidate.size() + 1);
    for (size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= key.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= candidate.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (key[i - 1] == candidate[j - 1] ? 0u : 1u)});
        diagonal = up;
      }
    }
    const size_t d = row[candidate.size()];
    if (best.empty() || d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best_distance <= std::max<size_t>(2, key.size() / 3) ? best : std::string();
}

ConfigReader ConfigReader::child(const std::string& key) const {
  YAML::Node sub = has(key) ? node_[key] : YAML::Node(YAML::NodeType::Map);
  if (!sub.IsMap()) {
    error(key, "expected a mapping (key: value pairs)");
    // reset, not assignment: assigning to a yaml-cpp node writes through to the user's document.
    sub.reset(YAML::Node(YAML::NodeType::Map));
  }
  ConfigReader out(sub, file_, keyPath(key), *diags_);
  if (recording_) {
    if (!resolved_[key].IsMap()) resolved_[key] = YAML::Node(YAML::NodeType::Map);
    out.recordInto(resolved_[key]);
  }
  return out;
}

ConfigReader ConfigReader::except(const std::string& key) const {
  YAML::Node rest(YAML::NodeType::Map);
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.Scalar() != key) rest.force_insert(kv.first, kv.second);
    }
  }
  ConfigReader out(rest, file_, path_, *diags_);
  if (recording_) out.recordInto(resolved_);
  return out;
}

void ConfigReader::recordInto(YAML::Node resolved) {
  resolved_ = std::move(resolved);
  recording_ = true;
}

void ConfigReader::record(const std::string& key, const YAML::Node& value) const {
  if (recording_) resolved_[key] = value;
}

void ConfigReader::allowOnly(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::string hint = nearestKey(key, allowed);
    diags_->add(Diagnostic{file_, kv.first.Mark().line + 1, keyPath(key),
                           "unknown key" + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)")});
  }
}

int ConfigReader::lineOf(const std::string& key) const {
  if (!key.empty() && has(key)) return node_[key].Mark().line + 1;
  return node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0;
}

void ConfigReader::error(const std::string& key, const std::string& message) const {
  diags_->add(Diagnostic{file_, lineOf(key), key.empty() ? path_ : keyPath(key), message});
}

bool ConfigReader::scalar(const std::string& key, std::string& out) const {
  if (!has(key)) return false;
  const YAML::Node v = node_[key];
  if (!v.IsScalar()) {
    error(key, "expected a single value");
    return false;
  }
  if (const size_t bad = firstNonUtf8(v.Scalar()); bad < v.Scalar().size()) {
    error(key, "not UTF-8 text (byte " + std::to_string(bad + 1) + " of the value); results are written as UTF-8");
    return false;
  }
  out = v.Scalar();
  return true;
}

namespace {
/// The shortest text that reads back to `v`.
std::string shortest(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
}  // namespace

int64_t ConfigReader::integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  const size_t problems = diags_->items().size();
  const int64_t v = readInteger(key, fallback, lo, hi);
  if (v >= lo && v <= hi && diags_->items().size() == problems) record(key, YAML::Node(v));
  return v;
}

double ConfigReader::real(const std::string& key, double fallback, double lo, double hi) const {
  const size_t problems = diags_->items().size();
  const double v = readReal(key, fallback, lo, hi);
  if (v >= lo && v <= hi && diags_->items().size() == problems) record(key, YAML::Node(shortest(v)));
  return v;
}

bool ConfigReader::boolean(const std::string& key, bool fallback) const {
  const size_t problems = diags_->items().size();
  const bool v = readBoolean(key, fallback);
  if (diags_->items().size() == problems) record(key, YAML::Node(v));
  return v;
}

std::string ConfigReader::text(const std::string& key, const std::string& fallback) const {
  std::string s;
  if (!scalar(key, s)) s = fallback;
  if (!s.empty()) record(key, YAML::Node(s));
  return s;
}

int ConfigReader::choice(const std::string& key, int fallback, const std::vector<std::string>& choices) const {
  const size_t problems = diags_->items().size();
  const int v = readChoice(key, fallback, choices);
  if (v >= 0 && static_cast<size_t>(v) < choices.size() && diags_->items().size() == problems) {
    record(key, YAML::Node(choices[static_cast<size_t>(v)]));
  }
  return v;
}

int64_t ConfigReader::readInteger(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  std::string s;
  if (!scalar(key, s)) return fallback;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    error(key, "expected an integer, got '" + s + "'");
    return fallback;
  }
  if (v < lo || v > hi) {
    error(key, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return fallback;
  }
  return v;
}

double ConfigReader::readReal(const std::string& key, double fallback, double lo, double hi) const {
  std::string s;
  if (!scalar(key, s)) return fallback;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    error(key, "expected a number, got '" + s + "'");
    return fallback;
  }
  if (!std::isfinite(v)) {
    error(key, "expected a finite number, got '" + s + "'");
    return fallback;
  }
  if (v < lo || v > hi) {
    std::ostringstream m;
    m << s << " is out of range [" << lo << ", " << hi << "]";
    error(key, m.str());
    return fallback;
  }
  return v;
}

bool ConfigReader::readBoolean(const std::string& key, bool fallback) const {
  std::string s;
  if (!scalar(key, s)) return fallback;
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  error(key, "expected true or false, got '" + s + "'");
  return fallback;
}

int ConfigReader::readChoice(const std::string& key, int fallback, const std::vector<std::string>& choices) const {
  std::string s;
  if (!scalar(key, s)) return fallback;
  const auto it = std::find(choices.begin(), choices.end(), s);
  if (it != choices.end()) return static_cast<int>(it - choices.begin());
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  const std::string hint = nearestKey(s, choices);
  error(key, "'" + s + "' is not one of " + list + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  return fallback;
}

namespace {
/// The quantity at `key` (parsed by `parse`, written back by `format`), checked against
/// [lo, hi]; `fallback` when absent or wrong, with a diagnostic when wrong.
template <class Parse>
int64_t quantity(const ConfigReader& r, bool found, const std::string& key, const std::string& s, int64_t fallback,
                 const char* what, int64_t lo, int64_t hi, Parse parse, std::string (*format)(int64_t)) {
  if (!found) return fallback;
  int64_t v = 0;
  const QuantityStatus status = parse(s, v);
  if (status != QuantityStatus::kOk) {
    r.error(key, quantityError(status, s, what));
    return fallback;
  }
  if (v <= 0 && lo > 0) {
    r.error(key, std::string(what) + " must be positive");
    return fallback;
  }
  if (const std::string range = outOfRange(s, v, lo, hi, format); !range.empty()) {
    r.error(key, range);
    return fallback;
  }
  return v;
}
}  // namespace

int64_t ConfigReader::rateBps(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  std::string s;
  const size_t problems = diags_->items().size();
  const bool found = scalar(key, s);
  const int64_t bps = quantity(
      *this, found, key, s, fallback, "rate", lo, hi, [](std::string_view t, int64_t& v) { return parseRate(t, v); },
      formatRate);
  if (bps >= lo && bps <= hi && diags_->items().size() == problems) record(key, YAML::Node(formatRate(bps)));
  return bps;
}

int64_t ConfigReader::durationPs(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  std::string s;
  const size_t problems = diags_->items().size();
  const bool found = scalar(key, s);
  const int64_t ps = quantity(
      *this, found, key, s, fallback, "time", lo, hi,
      [](std::string_view t, int64_t& v) { return parseDuration(t, v); }, formatDuration);
  if (ps >= lo && ps <= hi && diags_->items().size() == problems) record(key, YAML::Node(formatDuration(ps)));
  return ps;
}

int64_t ConfigReader::sizeBytes(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  std::string s;
  const size_t problems = diags_->items().size();
  const bool found = scalar(key, s);
  const int64_t bytes = quantity(
      *this, found, key, s, fallback, "size", lo, hi, [](std::string_view t, int64_t& v) { return parseSize(t, v); },
      formatSize);
  if (bytes >= lo && bytes <= hi && diags_->items().size() == problems) record(key, YAML::Node(formatSize(bytes)));
  return bytes;
}

}  // namespace mv
