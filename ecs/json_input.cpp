/**
 * @file json_input.cpp
 * parseJsonInput: nlohmann's SAX parser feeding its own DOM builder, with a depth count and
 * one key set per open object in between (nlohmann's callback parser would do the same
 * checks but rescans a parent array at every object it closes, quadratic in a trace's nodes).
 */
#include "ecs/json_input.hpp"

#include <cstddef>
#include <set>
#include <vector>

namespace mv {

namespace {

/// Builds the DOM through nlohmann's own builder; stops at the first refused construct.
template <class Json>
class CheckedSax {
 public:
  explicit CheckedSax(Json& root) : dom_(root, true) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(typename Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(typename Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(typename Json::string_t& v) { return dom_.string(v); }
  bool binary(typename Json::binary_t& v) { return dom_.binary(v); }

  bool start_object(std::size_t n) {
    if (!deeper()) return false;
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return deeper() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool key(typename Json::string_t& k) {
    if (!keys_.back().insert(k).second) {
      problem_ = "key '" + k + "' written twice in one JSON object (readers differ on which one wins; remove one)";
      return false;
    }
    return dom_.key(k);
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    return dom_.parse_error(position, token, e);  // throws e
  }

  const std::string& problem() const { return problem_; }

 private:
  bool deeper() {
    if (++depth_ <= kMaxJsonInputDepth) return true;
    problem_ = "JSON nested deeper than " + std::to_string(kMaxJsonInputDepth) + " levels";
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::set<typename Json::string_t>> keys_;  ///< the keys of each open object
  int depth_ = 0;
  std::string problem_;
};

template <class Json>
Json parseChecked(std::string_view text) {
  Json root;
  CheckedSax<Json> sax(root);
  try {
    if (Json::sax_parse(text, &sax)) return root;
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond double (out_of_range)
    throw JsonInputError(std::string("invalid JSON: ") + e.what(), true);
  }
  throw JsonInputError(sax.problem(), false);
}

}  // namespace

nlohmann::json parseJsonInput(std::string_view text) { return parseChecked<nlohmann::json>(text); }

nlohmann::ordered_json parseOrderedJsonInput(std::string_view text) {
  return parseChecked<nlohmann::ordered_json>(text);
}

}  // namespace mv
