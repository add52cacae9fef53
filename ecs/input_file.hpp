/**
 * @file input_file.hpp
 * Reading a user's input file whole (a sweep or netsim YAML, a flow list, a topology.txt,
 * a Chakra trace), with a reason a person can act on when it cannot be read: every reader
 * reports the same causes the same way, a directory included.
 */
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace mv {

/// An input file's content, or why it could not be read.
struct InputFile {
  std::string text;
  /// Empty when read; else the reason: "no such file", "it is a directory, not a file",
  /// or the system's error message.
  std::string problem;

  bool ok() const { return problem.empty(); }
};

/// How a file's bytes are taken.
enum class InputKind : uint8_t {
  kText,   ///< a UTF-8 byte-order mark at its start (as Windows editors and spreadsheet exports write) is skipped
  kBinary  ///< every byte kept
};

/// Reads the whole file at `path`.
InputFile readInputFile(const std::filesystem::path& path, InputKind kind = InputKind::kText);

}  // namespace mv
