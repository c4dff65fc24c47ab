#include "tests/executor/weights/test_files.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace inferscale::test {

namespace {

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
  std::uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

}  // namespace

void GgufWriter::add_u32(const std::string& key, std::uint32_t v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 4);
  put(meta_, v);
  ++meta_count_;
}

void GgufWriter::add_f32(const std::string& key, float v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 6);
  put(meta_, v);
  ++meta_count_;
}

void GgufWriter::add_bool(const std::string& key, bool v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 7);
  put<std::uint8_t>(meta_, v ? 1 : 0);
  ++meta_count_;
}

void GgufWriter::add_string(const std::string& key, const std::string& v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 8);
  put_string(meta_, v);
  ++meta_count_;
}

void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 9);
  put<std::uint32_t>(meta_, 8);
  put<std::uint64_t>(meta_, v.size());
  for (const auto& s : v) put_string(meta_, s);
  ++meta_count_;
}

void GgufWriter::add_i32s(const std::string& key, const std::vector<std::int32_t>& v) {
  put_string(meta_, key);
  put<std::uint32_t>(meta_, 9);
  put<std::uint32_t>(meta_, 5);
  put<std::uint64_t>(meta_, v.size());
  for (auto x : v) put(meta_, x);
  ++meta_count_;
}

void GgufWriter::add_tensor(const std::string& name, std::vector<std::uint64_t> dims,
                            std::uint32_t type, std::vector<std::uint8_t> data) {
  tensors_.push_back({name, std::move(dims), type, std::move(data)});
}

void GgufWriter::add_f32_tensor(const std::string& name, std::vector<std::uint64_t> dims,
                                const std::vector<float>& values) {
  std::vector<std::uint8_t> data(values.size() * 4);
  std::memcpy(data.data(), values.data(), data.size());
  add_tensor(name, std::move(dims), 0, std::move(data));
}

std::vector<std::uint8_t> GgufWriter::bytes(std::uint32_t alignment) const {
  std::vector<std::uint8_t> out;
  put<std::uint32_t>(out, 0x46554747u);
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, meta_count_);
  out.insert(out.end(), meta_.begin(), meta_.end());
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> offsets;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, std::uint32_t(t.dims.size()));
    for (auto d : t.dims) put(out, d);
    put(out, t.type);
    put(out, offset);
    offsets.push_back(offset);
    offset = (offset + t.data.size() + alignment - 1) / alignment * alignment;
  }
  while (out.size() % alignment) out.push_back(0);
  const std::size_t start = out.size();
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(start + offsets[i], 0);
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const auto b = bytes();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::uint8_t> data;
  for (const auto& t : tensors) {
    const std::uint64_t begin = data.size();
    data.resize(begin + t.values.size() * 4);
    std::memcpy(data.data() + begin, t.values.data(), t.values.size() * 4);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while ((8 + h.size()) % 8) h += ' ';
  std::ofstream f(path, std::ios::binary);
  const std::uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(h.data(), std::streamsize(h.size()));
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
}

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("inferscale_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace inferscale::test
