/**
 * @file test_text.cpp
 * Text from inputs on its way out (UTF-8 checks, escapes for a terminal, cuts at character
 * boundaries) and the checked JSON reader every JSON input goes through.
 */
#include <catch2/catch.hpp>

#include <string>

#include "ecs/input_file.hpp"
#include "ecs/json_input.hpp"
#include "ecs/text.hpp"
#include "tests/support/temp_dir.hpp"

using namespace mv;

TEST_CASE("UTF-8 validation follows RFC 3629", "[text]") {
  CHECK(isUtf8("plain ascii"));
  CHECK(isUtf8("caf\xc3\xa9 \xe2\x80\xa6 \xf0\x9f\x98\x80"));  // é … 😀
  CHECK_FALSE(isUtf8("\xff"));
  CHECK_FALSE(isUtf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(isUtf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(isUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(isUtf8("ab\xe2\x80"));        // cut inside a character
  CHECK(firstNonUtf8("ab\xe2\x80") == 2);
  CHECK(firstNonUtf8("abc") == 3);
  CHECK(wellFormedUtf8("a\xff" "b\xe2\x80") == "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("printable text cannot drive a terminal", "[text]") {
  // A title change, a screen clear and a carriage return (the attacks of a shared sweep).
  CHECK(printable("a\x1b]0;pwned\x07\x1b[2Jb\rc") == "a\\x1b]0;pwned\\x07\\x1b[2Jb\\x0dc");
  CHECK(printable("line\nbreak\ttab\x7f") == "line\\x0abreak\\x09tab\\x7f");
  CHECK(printable("\xc2\x9b" "31m") == "\\u009b31m");           // C1 CSI
  CHECK(printable("abc\xe2\x80\xae" "def") == "abc\\u202edef");  // right-to-left override
  CHECK(printable("\xff") == "\\xff");
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");  // characters stay as they are
}

TEST_CASE("cuts fall between characters", "[text]") {
  const std::string s = "\xc3\xa9\xc3\xa9x";  // ééx
  CHECK(characterCount(s) == 3);
  CHECK(prefixOfCharacters(s, 1) == 2);
  CHECK(prefixOfCharacters(s, 2) == 4);
  CHECK(prefixOfCharacters(s, 10) == s.size());
  CHECK(characterCount("\xff\xff") == 2);
}

TEST_CASE("JSON inputs: depth and repeated keys refused, syntax errors named", "[text][json]") {
  CHECK(parseJsonInput(R"({"a": [1, {"b": 2}], "c": "d"})")["a"][1]["b"] == 2);
  const auto error = [](const std::string& text) {
    try {
      parseJsonInput(text);
    } catch (const JsonInputError& e) {
      return std::string(e.syntax() ? "syntax: " : "refused: ") + e.what();
    }
    return std::string("accepted");
  };
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(error(deep) == "refused: JSON nested deeper than 64 levels");
  CHECK(error(std::string(64, '[') + std::string(64, ']')) == "accepted");
  CHECK(error(std::string(65, '[') + std::string(65, ']')) == "refused: JSON nested deeper than 64 levels");
  CHECK_THAT(error(R"({"a": 1, "b": {"a": 2, "a": 3}})"),
             Catch::StartsWith("refused: key 'a' written twice in one JSON object"));
  CHECK(error(R"({"a": {"k": 1}, "b": {"k": 2}})") == "accepted");  // one key set per object
  CHECK_THAT(error("{\"a\": "), Catch::StartsWith("syntax: invalid JSON"));
  CHECK_THAT(error("[1e99999]"), Catch::StartsWith("syntax: invalid JSON"));  // beyond double
  CHECK_THAT(error("{} {}"), Catch::StartsWith("syntax: invalid JSON"));
}

TEST_CASE("text inputs skip a byte-order mark, binary ones keep it", "[text]") {
  const test::TempDir tmp;
  const auto path = tmp.write("bom.txt", "\xef\xbb\xbf" "3 1 2\n");
  CHECK(readInputFile(path).text == "3 1 2\n");
  CHECK(readInputFile(path, InputKind::kBinary).text == "\xef\xbb\xbf" "3 1 2\n");
}
