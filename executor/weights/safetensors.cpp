#include "executor/weights/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>

#include "executor/weights/ggml_quants.h"
#include "traces/error.h"

namespace inferscale {

namespace {

std::uint32_t dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

}  // namespace

std::uint64_t SafetensorsTensor::elements() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  if (file_.size() < 8) throw InputError(path, "truncated: expected an 8-byte header length");
  std::uint64_t n = 0;
  std::memcpy(&n, file_.data(), 8);
  if (n > file_.size() - 8 || n > (100u << 20)) {
    throw InputError(path, "header length " + std::to_string(n) + " past the end of the file");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file_.data() + 8, file_.data() + 8 + n);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": header byte " + std::to_string(e.byte + 7), "invalid JSON");
  }
  if (!header.is_object()) throw InputError(path + ": header", "expected a JSON object");
  const std::uint64_t data_start = 8 + n, data_bytes = file_.size() - data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string where = path + ": " + it.key();
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw InputError(where, "expected an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (m->is_string()) metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& v = *it;
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() || !v.contains("shape") ||
        !v["shape"].is_array() || !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2) {
      throw InputError(where, "expected {dtype: string, shape: [..], data_offsets: [begin, end]}");
    }
    SafetensorsTensor t;
    t.name = it.key();
    t.dtype = v["dtype"].get<std::string>();
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw InputError(where + ".shape", "expected integers >= 0");
      t.shape.push_back(d.get<std::uint64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      throw InputError(where + ".data_offsets", "expected two integers >= 0");
    }
    const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
    const std::uint32_t eb = dtype_bytes(t.dtype);
    if (eb == 0) throw InputError(where + ".dtype", "unknown dtype " + t.dtype);
    if (end < begin || end > data_bytes || end - begin != t.elements() * eb) {
      throw InputError(where + ".data_offsets",
                       "expected a range inside the data of shape x dtype bytes");
    }
    t.offset = data_start + begin;
    t.bytes = end - begin;
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<float> SafetensorsFile::to_float(const SafetensorsTensor& t) const {
  std::uint32_t type = 0;
  if (t.dtype == "F32") {
    type = std::uint32_t(GgmlType::kF32);
  } else if (t.dtype == "F16") {
    type = std::uint32_t(GgmlType::kF16);
  } else if (t.dtype == "BF16") {
    type = std::uint32_t(GgmlType::kBF16);
  } else {
    throw InputError(path() + ": " + t.name, "dtype " + t.dtype + " (expected F32, F16 or BF16)");
  }
  std::vector<float> out(t.elements());
  ggml_dequantize(type, file_.data() + t.offset, out.data(), out.size());
  return out;
}

}  // namespace inferscale
