#pragma once
// @brief The binary trace format: the JSONL records, varint-packed and zstd-compressed, for
// big traces (several times smaller and faster to read). JSONL stays the interchange format;
// `inferscale trace convert` turns one into the other, and every command that reads a trace
// reads both (open_trace tells them apart by the magic bytes).

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "traces/reader.h"
#include "traces/record_stream.h"
#include "traces/trace.h"

namespace inferscale {

/// The first 8 bytes of a binary trace (uncompressed); a JSONL trace starts with '{' or blank.
inline constexpr std::string_view kBinaryTraceMagic{"\x89ISTRC1\n", 8};

/// True when the file at `path` starts with kBinaryTraceMagic.
bool is_binary_trace(const std::string& path);

/// @brief Writes a binary trace atomically (a temporary file of this writer,
/// `<path>.<pid>.<n>.tmp`, renamed on close(); removed if the writer is dropped, or on
/// SIGINT/SIGTERM). It writes what it is given: the reader validates, as it does for JSONL.
class BinaryTraceWriter {
 public:
  explicit BinaryTraceWriter(const std::string& path, int zstd_level = 3);
  ~BinaryTraceWriter();  // without close(): the temporary file is removed
  BinaryTraceWriter(const BinaryTraceWriter&) = delete;
  BinaryTraceWriter& operator=(const BinaryTraceWriter&) = delete;

  void write(const TraceHeader& h);
  void write_fact(const FactRecord& f, bool memory_write);
  void write(const RequestRecord& r);
  /// Writes the end mark (with the record count), flushes and renames into place.
  void close();
  std::uint64_t records() const { return records_; }

 private:
  void record_done();
  void compress(bool end);
  /// Frees the compressor; closes and removes the temporary file unless close() renamed it.
  void discard();
  std::string path_, tmp_path_;
  int partial_ = -1;  // partial_files handle of tmp_path_
  std::FILE* file_ = nullptr;
  void* cctx_ = nullptr;  // ZSTD_CCtx
  std::string buf_, out_;
  std::uint64_t records_ = 0;
  SimTime last_time_ = 0;
  FactId last_fact_ = 0;
  bool closed_ = false;
};

/// @brief Streams a binary trace with the JSONL reader's checks; errors are InputErrors at
/// "file: record N" (N counts records from 1, the header included).
class BinaryTraceReader final : public RecordStream {
 public:
  explicit BinaryTraceReader(const std::string& path);
  ~BinaryTraceReader() override;
  BinaryTraceReader(const BinaryTraceReader&) = delete;
  BinaryTraceReader& operator=(const BinaryTraceReader&) = delete;

  bool next(TraceRecord& out) override;
  const TraceHeader& header() const override { return header_; }
  const std::vector<std::uint32_t>& request_fact_indices() const override { return dense_facts_; }
  std::uint32_t dense_of(FactId id) const override { return facts_.find(id); }
  std::uint64_t facts_declared() const override { return facts_.size(); }
  double fraction_read() const override;
  const std::string& name() const override { return path_; }
  std::uint64_t record() const { return record_; }

 private:
  [[noreturn]] void fail(const std::string& message) const;
  /// At least `n` decompressed bytes from pos_ on; false at a clean end of the input.
  bool fill(std::size_t n);
  std::uint8_t byte();
  std::uint64_t varint();
  std::int64_t svarint();
  std::uint64_t in_range(const char* key, std::uint64_t lo, std::uint64_t hi);
  void text(std::string& out);
  SimTime time_after_delta(const char* record);
  void read_header(TraceRecord& out);
  void read_fact(TraceRecord& out, bool memory_write);
  void read_request(TraceRecord& out);

  std::string path_;
  std::FILE* file_ = nullptr;
  void* dctx_ = nullptr;  // ZSTD_DCtx
  std::uint64_t file_bytes_ = 1, consumed_ = 0;
  std::vector<char> in_;
  std::size_t in_pos_ = 0, in_size_ = 0;
  bool in_eof_ = false;
  bool frame_done_ = false;  // the last zstd frame was decoded whole (checksum included)
  std::string buf_;          // decompressed bytes [pos_, buf_.size()) not parsed yet
  std::size_t pos_ = 0;
  std::uint64_t record_ = 0;
  bool ended_ = false;
  TraceHeader header_;
  SimTime last_time_ = 0;
  FactId last_fact_ = 0;
  FactIndex facts_;
  std::vector<std::uint32_t> dense_facts_;
};

struct ConvertResult {
  std::uint64_t records = 0;
  bool to_binary = false;
};

/// Converts the trace at `in` into the other format at `out` (JSONL to binary, binary to
/// JSONL), streaming and validating as it reads; `out` appears only when all went well.
/// `progress` (when set) is told how far the reading is every 65,536 records and at the end.
ConvertResult convert_trace(const std::string& in, const std::string& out,
                            const StreamProgressFn& progress = {});

}  // namespace inferscale
