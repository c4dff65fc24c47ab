#pragma once
// @brief GgufFile: a GGUF file (version 2 or 3) read in place: its metadata (key -> typed value)
// and its tensors (name, dims, ggml type, bytes), with dequantization to fp32.
//
// Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count; metadata
// entries (string key, u32 value type, value); tensor infos (string name, u32 dims, u64 ne[dims]
// with ne[0] the fastest-varying, u32 ggml type, u64 offset); padding to `general.alignment`
// (default 32); tensor data, each tensor at its offset from there. A string is u64 length +
// bytes; an array is u32 element type + u64 count + elements.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/weights/mapped_file.h"

namespace inferscale {

/// GGUF metadata value types.
enum class GgufValueType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

/// One metadata value: a scalar (integers in `i`, floats in `f`, bools in `i`), a string, or an
/// array of strings or of numbers (arrays of arrays are skipped: `elem` says so, no items).
struct GgufValue {
  GgufValueType type = GgufValueType::kU32;
  GgufValueType elem = GgufValueType::kU32;  // arrays only
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<std::string> strings;  // string arrays
  std::vector<std::int64_t> ints;    // integer and bool arrays
  std::vector<double> floats;        // float arrays
};

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne: dims[0] varies fastest (a [out, in] matrix: {in, out})
  std::uint32_t type = 0;           // ggml type (GgmlType)
  std::uint64_t offset = 0;         // from the start of the file
  std::uint64_t bytes = 0;
  std::uint64_t elements() const;
};

class GgufFile {
 public:
  /// Reads the header, metadata and tensor infos of `path`. Throws InputError("path: byte N",
  /// what was expected) on anything malformed or truncated.
  explicit GgufFile(const std::string& path);

  std::uint32_t version() const { return version_; }
  const std::string& path() const { return file_.path(); }

  const GgufValue* find(std::string_view key) const;
  /// Typed getters; throw InputError("path: key", ...) when absent or of another type.
  std::string get_string(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // integers convert
  bool get_bool(std::string_view key) const;
  const std::vector<std::string>& get_strings(std::string_view key) const;
  const std::vector<std::int64_t>& get_ints(std::string_view key) const;
  /// The same with a default when the key is absent.
  std::int64_t get_int(std::string_view key, std::int64_t fallback) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  const std::vector<std::string>& keys() const { return keys_; }

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  /// A tensor's raw bytes (inside the mapped file).
  const std::uint8_t* tensor_data(const GgufTensor& t) const { return file_.data() + t.offset; }
  /// A tensor's values as fp32, row-major with dims[0] fastest. Throws InputError for a type
  /// that cannot be decoded.
  std::vector<float> dequantize(const GgufTensor& t) const;

 private:
  MappedFile file_;
  std::uint32_t version_ = 0;
  std::vector<std::string> keys_;  // in file order
  std::unordered_map<std::string, GgufValue> meta_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, std::size_t> tensor_index_;
};

}  // namespace inferscale
