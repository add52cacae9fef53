/**
 * @file input_file.cpp
 * Whole-file reads of user input with the reason of a failure.
 */
#include "ecs/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace mv {

InputFile readInputFile(const std::filesystem::path& path, InputKind kind) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return {"", "no such file"};
  if (status.type() == std::filesystem::file_type::directory) return {"", "it is a directory, not a file"};
  if (error) return {"", error.message()};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {"", std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return {"", "read error"};
  std::string bytes = text.str();
  if (kind == InputKind::kText && bytes.starts_with("\xef\xbb\xbf")) bytes.erase(0, 3);
  return {std::move(bytes), ""};
}

}  // namespace mv
