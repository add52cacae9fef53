/**
 * @file text.cpp
 * UTF-8 decoding (RFC 3629) for validation, escaping and character counts.
 */
#include "ecs/text.hpp"

#include <cstdint>
#include <cstdio>

namespace mv {

namespace {

/// The length of the well-formed UTF-8 character at s[i] and its code point, or 0 when the
/// bytes there are not one.
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t n = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, cp = b0 & 0x1Fu, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, cp = b0 & 0x0Fu, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, cp = b0 & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool needsEscape(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

size_t firstNonUtf8(std::string_view s) {
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode(s, i, cp);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}

bool isUtf8(std::string_view s) { return firstNonUtf8(s) == s.size(); }

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  uint32_t cp = 0;
  char buf[12];
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode(s, i, cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(s[i])));
      out += buf;
      ++i;
      continue;
    }
    if (needsEscape(cp)) {
      std::snprintf(buf, sizeof buf, cp < 0x80 ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string wellFormedUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t bad = i + firstNonUtf8(s.substr(i));
    out.append(s.substr(i, bad - i));
    if (bad == s.size()) break;
    out += "\xef\xbf\xbd";
    i = bad + 1;
  }
  return out;
}

size_t characterCount(std::string_view s) {
  size_t count = 0;
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    const size_t n = decode(s, i, cp);
    i += n == 0 ? 1 : n;
  }
  return count;
}

size_t prefixOfCharacters(std::string_view s, size_t n) {
  size_t i = 0;
  uint32_t cp = 0;
  for (size_t count = 0; i < s.size() && count < n; ++count) {
    const size_t len = decode(s, i, cp);
    i += len == 0 ? 1 : len;
  }
  return i;
}

}  // namespace mv
