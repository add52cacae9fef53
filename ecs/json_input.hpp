/**
 * @file json_input.hpp
 * Reading JSON a user hands over (a Chakra trace, communicator groups, a results folder's
 * summary and manifests) the same safe way everywhere: in time linear in its size, with
 * nesting and repeated keys refused, so no reader recurses without bound over hostile input
 * and no two readers disagree on which of two equal keys wins.
 */
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mv {

/// Deepest nesting a JSON input may have (objects and arrays): far above any file the
/// project reads (a Chakra trace needs 4, a manifest 8), far below a stack's limit.
inline constexpr int kMaxJsonInputDepth = 64;

/// Why a JSON input was refused: a syntax error (with nlohmann's position), nesting deeper
/// than kMaxJsonInputDepth, or a key written twice in one object. No file name: the caller
/// prefixes its own.
class JsonInputError : public std::runtime_error {
 public:
  JsonInputError(const std::string& what, bool syntax) : std::runtime_error(what), syntax_(syntax) {}
  /// Whether the text is not one JSON value (else it is, but refused).
  bool syntax() const { return syntax_; }

 private:
  bool syntax_;
};

/// The one JSON value of `text`; throws JsonInputError.
nlohmann::json parseJsonInput(std::string_view text);
/// The same, keeping each object's keys in the order of the text.
nlohmann::ordered_json parseOrderedJsonInput(std::string_view text);

}  // namespace mv
