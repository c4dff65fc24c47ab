#pragma once
// @brief A read-only memory map of a whole file (weights are read in place, not copied).

#include <cstddef>
#include <cstdint>
#include <string>

namespace inferscale {

class MappedFile {
 public:
  /// Maps `path`; throws InputError(path, ...) when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace inferscale
