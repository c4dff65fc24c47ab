#pragma once
// @brief RunFolder: where one run writes its results. A lock on `<base>/<run>` held for the
// run's life, a temporary folder of this process, and a move into place that replaces an old
// result in one step (never leaving neither).

#include <filesystem>
#include <string>

namespace inferscale {

class RunFolder {
 public:
  /// Creates `base` if needed, locks `<base>/<run>` and creates `<base>/<run>.tmp.<pid>/`
  /// (removing what interrupted runs left: they held the lock, so nothing else writes there).
  /// InputError at `where` (the setting that named `base`) when the folder cannot be made, or
  /// when another process holds the lock (naming its process id).
  RunFolder(const std::filesystem::path& base, const std::string& run, const std::string& where);
  /// Removes the temporary folder unless it was moved into place, and the folders it created
  /// if they are left empty; releases the lock.
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  /// The temporary folder the run writes into (removed on SIGINT/SIGTERM).
  const std::filesystem::path& tmp() const { return tmp_; }
  /// `<base>/<run>`.
  const std::filesystem::path& dir() const { return dir_; }
  /// Moves tmp() to `dest` (dir(), or `<run>.partial`), replacing what is there in one step.
  void commit(const std::filesystem::path& dest);

 private:
  std::filesystem::path dir_, tmp_, lock_;
  std::filesystem::path created_;  // the outermost folder this object created ("" if none)
  int lock_fd_ = -1;
  int partial_ = -1;  // partial_files handles of tmp_ and lock_
  int partial_lock_ = -1;
  bool committed_ = false;
};

/// Moves `from` to `to` (files or folders), replacing `to` if it exists without a moment when
/// neither is there: an exchange (renameat2) where the file system has one, else `to` is moved
/// aside first and put back if the move fails. std::runtime_error naming both on failure.
void replace_path(const std::filesystem::path& from, const std::filesystem::path& to);

/// Removes a folder and what it holds (nothing when it does not exist); false on failure.
/// POSIX rather than fs::remove_all: PyTorch's CUDA libtorch exports its own std::filesystem
/// remove_all, which the dynamic linker may bind this program's calls to, and which crashed the
/// CUDA build (SIGSEGV, a call through a null pointer) when it removed a run's folder.
bool remove_tree(const std::filesystem::path& p);

}  // namespace inferscale
