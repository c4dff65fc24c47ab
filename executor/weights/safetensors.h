#pragma once
// @brief SafetensorsFile: a .safetensors file read in place. Layout: u64 little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {...}}, then the data; offsets count from the first byte after the header.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/weights/mapped_file.h"

namespace inferscale {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                 // F32, F16, BF16 (others are listed, not decoded)
  std::vector<std::uint64_t> shape;  // row-major, the last dim fastest
  std::uint64_t offset = 0;          // from the start of the file
  std::uint64_t bytes = 0;
  std::uint64_t elements() const;
};

class SafetensorsFile {
 public:
  /// Reads the header; InputError("path: key", what was expected) when malformed.
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return file_.path(); }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  /// Values as fp32 (F32, F16, BF16); InputError for other dtypes.
  std::vector<float> to_float(const SafetensorsTensor& t) const;
  const std::unordered_map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, std::string> metadata_;
};

}  // namespace inferscale
