#pragma once
// @brief JsonLine: a small, allocation-reusing JSON parser for one JSONL record, with byte
// columns for error messages. Traces are read at hundreds of MB/s, which general DOM parsers
// with per-node allocation do not reach.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferscale {

class JsonLine {
 public:
  enum class Type : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  struct Node {
    Type type = Type::kNull;
    bool boolean = false;
    bool integral = false;       // number written without fraction or exponent
    std::int64_t int_value = 0;  // when integral and in range
    double number = 0;
    std::uint32_t str_begin = 0, str_len = 0;  // decoded string, in the string arena
    std::uint32_t key_begin = 0, key_len = 0;  // member key (object members), in the arena
    std::uint32_t first_child = 0;             // arrays/objects: index of the first child (0: none)
    std::uint32_t next_sibling = 0;            // 0: last
    std::uint32_t children = 0;
    std::uint32_t column = 0;  // 1-based byte column where the value starts
  };

  /// Parses `line`; on failure returns false and sets error()/error_column().
  bool parse(std::string_view line);
  const std::string& error() const { return error_; }
  std::uint32_t error_column() const { return error_column_; }

  const Node& root() const { return nodes_[0]; }
  const Node& node(std::uint32_t i) const { return nodes_[i]; }
  std::string_view key(const Node& n) const { return {arena_.data() + n.key_begin, n.key_len}; }
  std::string_view str(const Node& n) const { return {arena_.data() + n.str_begin, n.str_len}; }
  /// Index of the member `name` of object node `obj`, or 0 when absent.
  std::uint32_t member(const Node& obj, std::string_view name) const;

  static const char* type_name(Type t);

 private:
  bool value(std::uint32_t index, int depth);
  bool string_into_arena(std::uint32_t& begin, std::uint32_t& len);
  bool fail(const char* what);
  void skip_ws();

  std::string_view s_;
  std::size_t p_ = 0;
  std::vector<Node> nodes_;
  std::string arena_;
  std::string error_;
  std::uint32_t error_column_ = 0;
};

}  // namespace inferscale
