#pragma once
// @brief Partial files: paths that an interrupted process removes on its way out (SIGINT,
// SIGTERM), so that a stopped run or trace generation leaves no temporary results behind.

#include <string>

namespace inferscale {

/// Registers `path` (a file, or a folder of files) for removal if SIGINT or SIGTERM ends the
/// process; the first call installs the handlers (where the signal's action is still the
/// default). Returns a handle for partial_files_release, or -1 when every slot is taken (then
/// the path is simply not cleaned up on a signal).
int partial_files_add(const std::string& path);
/// The path of `handle` is complete (renamed into place) or gone: no longer removed on a signal.
void partial_files_release(int handle);
/// A temporary name beside `path` that no other writer shares, `<path>.<pid>.<n>.tmp`: the
/// process id keeps two processes apart, n (counting this process's calls) two writers of one
/// process.
std::string partial_file_name(const std::string& path);

/// RAII form: registered for the object's lifetime.
class PartialFile {
 public:
  explicit PartialFile(const std::string& path) : handle_(partial_files_add(path)) {}
  ~PartialFile() { partial_files_release(handle_); }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

 private:
  int handle_;
};

}  // namespace inferscale
