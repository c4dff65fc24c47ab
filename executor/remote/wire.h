#pragma once
// @brief Writer and Reader: the explicit little-endian field codec behind protocol.h. Private
// to executor/remote/. Reader checks every length against the bytes left and names the field
// and offset of whatever does not decode.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "executor/remote/protocol.h"

namespace inferscale::remote::wire {

inline constexpr std::uint32_t kMaxStringBytes = 1u << 16;

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}
  template <class T>
  void uint(T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      out_.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i)));
    }
  }
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16(std::uint16_t v) { uint(v); }
  void u32(std::uint32_t v) { uint(v); }
  void u64(std::uint64_t v) { uint(v); }
  void i32(std::int32_t v) { uint(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { uint(static_cast<std::uint64_t>(v)); }
  void flag(bool v) { u8(v ? 1 : 0); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    u64(bits);
  }
  void str(const std::string& s) {
    // Our strings are names and messages; cut rather than fail on an absurd one.
    const std::size_t n = std::min<std::size_t>(s.size(), kMaxStringBytes);
    u32(static_cast<std::uint32_t>(n));
    out_.insert(out_.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void count(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }

 private:
  std::vector<std::uint8_t>& out_;
};

class Reader {
 public:
  Reader(std::span<const std::uint8_t> in, const char* message) : in_(in), message_(message) {}

  template <class T>
  T uint(const char* field) {
    need(sizeof(T), field);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= std::uint64_t(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  std::uint8_t u8(const char* field) { return uint<std::uint8_t>(field); }
  std::uint32_t u32(const char* field) { return uint<std::uint32_t>(field); }
  std::uint64_t u64(const char* field) { return uint<std::uint64_t>(field); }
  std::int32_t i32(const char* field) { return static_cast<std::int32_t>(u32(field)); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  bool flag(const char* field) {
    const std::uint8_t b = u8(field);
    if (b > 1) fail(field, "boolean byte " + std::to_string(b) + " (expected 0 or 1)", 1);
    return b == 1;
  }
  double f64(const char* field) {
    const std::uint64_t bits = u64(field);
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
  std::string str(const char* field) {
    const std::uint32_t n = u32(field);
    if (n > kMaxStringBytes) {
      fail(field,
           "string of " + std::to_string(n) + " bytes (limit " + std::to_string(kMaxStringBytes) +
               ")",
           4);
    }
    need(n, field);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  /// An item count, checked against the bytes left before anything is allocated for it.
  std::size_t count(const char* field, std::size_t item_bytes) {
    const std::uint32_t n = u32(field);
    if (std::uint64_t(n) * item_bytes > left()) {
      fail(field,
           std::to_string(n) + " items of " + std::to_string(item_bytes) + " bytes but only " +
               std::to_string(left()) + " bytes left",
           4);
    }
    return n;
  }
  void finish() {
    if (left() != 0) {
      throw ProtocolError(std::string(message_) + ": " + std::to_string(left()) +
                          " unexpected bytes after the message (at offset " + std::to_string(pos_) +
                          ")");
    }
  }
  [[noreturn]] void fail(const char* field, const std::string& what, std::size_t back = 0) const {
    throw ProtocolError(std::string(message_) + ": " + field + " at offset " +
                        std::to_string(pos_ - back) + ": " + what);
  }

 private:
  std::size_t left() const { return in_.size() - pos_; }
  void need(std::size_t n, const char* field) const {
    if (left() < n) {
      fail(field, "truncated (needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                      " left)");
    }
  }

  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  const char* message_;
};

}  // namespace inferscale::remote::wire
