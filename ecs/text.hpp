/**
 * @file text.hpp
 * Text from inputs on its way out: UTF-8 validation (text values are refused at `validate`
 * when they are not UTF-8), a printable form for a terminal (control characters and bidi
 * overrides escaped, so a shared sweep file cannot retitle, clear or recolour the reader's
 * terminal, or reorder what it shows) and cuts at character boundaries.
 */
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mv {

/// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF).
bool isUtf8(std::string_view s);

/// The byte offset of the first byte of `s` that is not well-formed UTF-8 (s.size() when
/// all is).
size_t firstNonUtf8(std::string_view s);

/// `s` with every C0 and C1 control character (line breaks, tabs and ESC included), DEL, a
/// bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069) and every byte that is
/// not UTF-8 written as an escape (\x1b, \u202e); the rest unchanged. A line of it shows
/// as one line of the characters it holds.
std::string printable(std::string_view s);

/// `s` with every byte that is not well-formed UTF-8 replaced by U+FFFD (the replacement
/// character), so a page built from it is UTF-8 throughout.
std::string wellFormedUtf8(std::string_view s);

/// The characters (code points) of `s`, the columns a terminal gives it (wide characters
/// aside); an invalid byte counts as one.
size_t characterCount(std::string_view s);

/// The longest prefix of `s` of at most `n` characters that ends at a character boundary,
/// in bytes.
size_t prefixOfCharacters(std::string_view s, size_t n);

}  // namespace mv
