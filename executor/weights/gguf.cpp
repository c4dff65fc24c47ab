#include "executor/weights/gguf.h"

#include <cstring>
#include <stdexcept>

#include "executor/weights/ggml_quants.h"
#include "traces/error.h"

namespace inferscale {

namespace {

constexpr std::uint64_t kMaxString = 1ull << 30;
constexpr std::uint64_t kMaxCount = 1ull << 32;
constexpr std::uint32_t kMaxDims = 8;

/// Bounds-checked little-endian reads from the mapped file.
class Cursor {
 public:
  Cursor(const MappedFile& f) : f_(f) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(f_.path() + ": byte " + std::to_string(pos_), what);
  }
  void need(std::uint64_t n, const char* what) const {
    if (n > f_.size() - pos_) fail(std::string("truncated file: expected ") + what);
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, f_.data() + pos_, sizeof(T));  // the host is little-endian (x86-64, arm64)
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const auto n = read<std::uint64_t>(what);
    if (n > kMaxString) fail(std::string("implausible string length in ") + what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(f_.data() + pos_), std::size_t(n));
    pos_ += n;
    return s;
  }
  std::uint64_t pos() const { return pos_; }
  void seek(std::uint64_t p) { pos_ = p; }

 private:
  const MappedFile& f_;
  std::uint64_t pos_ = 0;
};

std::int64_t read_int(Cursor& c, GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
      return c.read<std::uint8_t>("u8");
    case GgufValueType::kI8:
      return c.read<std::int8_t>("i8");
    case GgufValueType::kU16:
      return c.read<std::uint16_t>("u16");
    case GgufValueType::kI16:
      return c.read<std::int16_t>("i16");
    case GgufValueType::kU32:
      return c.read<std::uint32_t>("u32");
    case GgufValueType::kI32:
      return c.read<std::int32_t>("i32");
    case GgufValueType::kU64:
      return std::int64_t(c.read<std::uint64_t>("u64"));
    case GgufValueType::kI64:
      return c.read<std::int64_t>("i64");
    case GgufValueType::kBool: {
      const auto b = c.read<std::uint8_t>("bool");
      if (b > 1) c.fail("expected a bool (0 or 1)");
      return b;
    }
    default:
      c.fail("internal: not an integer type");
  }
}

bool is_int(GgufValueType t) {
  return t == GgufValueType::kU8 || t == GgufValueType::kI8 || t == GgufValueType::kU16 ||
         t == GgufValueType::kI16 || t == GgufValueType::kU32 || t == GgufValueType::kI32 ||
         t == GgufValueType::kU64 || t == GgufValueType::kI64 || t == GgufValueType::kBool;
}

GgufValueType value_type(Cursor& c) {
  const auto t = c.read<std::uint32_t>("a value type");
  if (t > 12) c.fail("unknown metadata value type " + std::to_string(t) + " (expected 0..12)");
  return GgufValueType(t);
}

void read_value(Cursor& c, GgufValueType t, GgufValue& v, bool keep);

void read_array(Cursor& c, GgufValue& v, bool keep) {
  v.elem = value_type(c);
  const auto n = c.read<std::uint64_t>("an array length");
  if (n > kMaxCount) c.fail("implausible array length " + std::to_string(n));
  GgufValue item;
  for (std::uint64_t j = 0; j < n; ++j) {
    if (v.elem == GgufValueType::kString) {
      std::string s = c.string("an array string");
      if (keep) v.strings.push_back(std::move(s));
    } else if (v.elem == GgufValueType::kF32) {
      const float f = c.read<float>("f32");
      if (keep) v.floats.push_back(f);
    } else if (v.elem == GgufValueType::kF64) {
      const double f = c.read<double>("f64");
      if (keep) v.floats.push_back(f);
    } else if (v.elem == GgufValueType::kArray) {
      read_array(c, item, false);  // nested arrays: parsed, not kept
    } else {
      const std::int64_t x = read_int(c, v.elem);
      if (keep) v.ints.push_back(x);
    }
  }
}

void read_value(Cursor& c, GgufValueType t, GgufValue& v, bool keep) {
  v.type = t;
  switch (t) {
    case GgufValueType::kString:
      v.s = c.string("a string value");
      return;
    case GgufValueType::kF32:
      v.f = c.read<float>("f32");
      return;
    case GgufValueType::kF64:
      v.f = c.read<double>("f64");
      return;
    case GgufValueType::kArray:
      read_array(c, v, keep);
      return;
    default:
      v.i = read_int(c, t);
      return;
  }
}

}  // namespace

std::uint64_t GgufTensor::elements() const {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

GgufFile::GgufFile(const std::string& path) : file_(path) {
  Cursor c(file_);
  const auto magic = c.read<std::uint32_t>("the magic \"GGUF\"");
  if (magic != 0x46554747u) c.fail("not a GGUF file (expected the magic \"GGUF\")");
  version_ = c.read<std::uint32_t>("the version");
  if (version_ != 2 && version_ != 3) {
    c.fail("GGUF version " + std::to_string(version_) + " (expected 2 or 3)");
  }
  const auto n_tensors = c.read<std::uint64_t>("the tensor count");
  const auto n_meta = c.read<std::uint64_t>("the metadata count");
  if (n_tensors > kMaxCount || n_meta > kMaxCount) c.fail("implausible tensor or metadata count");
  for (std::uint64_t j = 0; j < n_meta; ++j) {
    std::string key = c.string("a metadata key");
    GgufValue v;
    read_value(c, value_type(c), v, true);
    if (!meta_.emplace(key, std::move(v)).second) c.fail("duplicate metadata key " + key);
    keys_.push_back(std::move(key));
  }
  for (std::uint64_t j = 0; j < n_tensors; ++j) {
    GgufTensor t;
    t.name = c.string("a tensor name");
    const auto dims = c.read<std::uint32_t>("tensor dims");
    if (dims == 0 || dims > kMaxDims) c.fail("tensor " + t.name + ": expected 1..8 dims");
    for (std::uint32_t d = 0; d < dims; ++d) {
      const auto ne = c.read<std::uint64_t>("a tensor dim");
      if (ne == 0 || ne > kMaxCount) c.fail("tensor " + t.name + ": implausible dim");
      t.dims.push_back(ne);
    }
    t.type = c.read<std::uint32_t>("a tensor type");
    t.offset = c.read<std::uint64_t>("a tensor offset");
    GgmlTypeInfo info;
    if (!ggml_type_info(t.type, info)) {
      c.fail("tensor " + t.name + ": unknown ggml type " + std::to_string(t.type));
    }
    if (t.dims[0] % info.block_elements != 0) {
      c.fail("tensor " + t.name + ": row of " + std::to_string(t.dims[0]) +
             " values is not whole " + info.name + " blocks");
    }
    t.bytes = t.elements() / info.block_elements * info.block_bytes;
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      c.fail("duplicate tensor " + t.name);
    }
    tensors_.push_back(std::move(t));
  }
  const std::int64_t alignment = get_int("general.alignment", 32);
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    throw InputError(path + ": general.alignment", "expected a power of two");
  }
  const std::uint64_t a = std::uint64_t(alignment);
  const std::uint64_t data_start = (c.pos() + a - 1) / a * a;
  for (GgufTensor& t : tensors_) {
    if (t.offset % a != 0) {
      throw InputError(path + ": tensor " + t.name, "offset not aligned to " + std::to_string(a));
    }
    t.offset += data_start;
    if (t.offset > file_.size() || t.bytes > file_.size() - t.offset) {
      throw InputError(path + ": tensor " + t.name,
                       "data past the end of the file (truncated download?)");
    }
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = meta_.find(std::string(key));
  return it == meta_.end() ? nullptr : &it->second;
}

namespace {

[[noreturn]] void bad_key(const std::string& path, std::string_view key, const char* expected) {
  throw InputError(path + ": " + std::string(key), std::string("expected ") + expected);
}

}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kString) bad_key(path(), key, "a string");
  return v->s;
}

std::int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || !is_int(v->type)) bad_key(path(), key, "an integer");
  return v->i;
}

std::int64_t GgufFile::get_int(std::string_view key, std::int64_t fallback) const {
  return find(key) == nullptr ? fallback : get_int(key);
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v != nullptr && (v->type == GgufValueType::kF32 || v->type == GgufValueType::kF64)) {
    return v->f;
  }
  if (v != nullptr && is_int(v->type)) return double(v->i);
  bad_key(path(), key, "a number");
}

double GgufFile::get_float(std::string_view key, double fallback) const {
  return find(key) == nullptr ? fallback : get_float(key);
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kBool) bad_key(path(), key, "a bool");
  return v->i != 0;
}

bool GgufFile::get_bool(std::string_view key, bool fallback) const {
  return find(key) == nullptr ? fallback : get_bool(key);
}

const std::vector<std::string>& GgufFile::get_strings(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kArray || v->elem != GgufValueType::kString) {
    bad_key(path(), key, "an array of strings");
  }
  return v->strings;
}

const std::vector<std::int64_t>& GgufFile::get_ints(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kArray || !is_int(v->elem)) {
    bad_key(path(), key, "an array of integers");
  }
  return v->ints;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<float> GgufFile::dequantize(const GgufTensor& t) const {
  std::vector<float> out(t.elements());
  try {
    ggml_dequantize(t.type, tensor_data(t), out.data(), out.size());
  } catch (const std::invalid_argument& e) {
    throw InputError(path() + ": tensor " + t.name, e.what());
  }
  return out;
}

}  // namespace inferscale
