#pragma once
// @brief InputError: bad user input (trace, YAML, CLI), with where it is and what was expected.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace inferscale {

/// Raised for bad user input. `where` is "file:line:column" or "file: key.path"; the CLI prints
/// "error: <where>: <message>" on one line and exits with status 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string where, const std::string& message)
      : std::runtime_error(where.empty() ? message : where + ": " + message),
        where_(std::move(where)),
        message_(message) {}
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  std::string where_;
  std::string message_;
};

/// Position string "file:line:column" (column omitted when 0).
inline std::string position(const std::string& file, long line, long column = 0) {
  std::string s = file;
  s.append(":").append(std::to_string(line));
  if (column > 0) s.append(":").append(std::to_string(column));
  return s;
}

/// Whether `path` exists; an InputError at `where` naming the path when the system cannot tell
/// (a name too long, a folder that may not be entered), where std::filesystem::exists throws.
inline bool path_exists(const std::string& path, const std::string& where) {
  std::error_code ec;
  const bool found = std::filesystem::exists(path, ec);
  if (ec) throw InputError(where, "cannot access '" + path + "': " + ec.message());
  return found;
}

}  // namespace inferscale

/// Library invariants: on in Debug builds and in tests, compiled out otherwise.
#if !defined(NDEBUG) || defined(INFERSCALE_ASSERTS)
#include <cstdio>
#include <cstdlib>
#define INFERSCALE_ASSERT(cond, msg)                                                       \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: invariant violated: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   msg);                                                                   \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)
#else
#define INFERSCALE_ASSERT(cond, msg) \
  do {                               \
  } while (0)
#endif
