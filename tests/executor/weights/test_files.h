#pragma once
// @brief Writers of small GGUF and safetensors files for the reader tests (only what the tests
// need: scalar and array metadata, tensors given as raw bytes).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace inferscale::test {

class GgufWriter {
 public:
  void add_u32(const std::string& key, std::uint32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_i32s(const std::string& key, const std::vector<std::int32_t>& v);
  /// `dims` in GGUF order (fastest first); `data` the encoded bytes of `type`.
  void add_tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type,
                  std::vector<std::uint8_t> data);
  /// F32 tensor from values.
  void add_f32_tensor(const std::string& name, std::vector<std::uint64_t> dims,
                      const std::vector<float>& values);
  std::vector<std::uint8_t> bytes(std::uint32_t alignment = 32) const;
  void write(const std::string& path) const;

 private:
  std::vector<std::uint8_t> meta_;
  std::uint64_t meta_count_ = 0;
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    std::uint32_t type;
    std::vector<std::uint8_t> data;
  };
  std::vector<Tensor> tensors_;
};

/// A safetensors file of F32 tensors (name, shape, values).
struct SafetensorsEntry {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors);

/// A fresh temporary directory for one test.
std::string temp_dir(const std::string& name);

}  // namespace inferscale::test
