#include "traces/binary_trace.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "traces/error.h"
#include "traces/partial_files.h"
#include "traces/writer.h"

namespace inferscale {

// Layout after the magic: one zstd stream of records, each a kind byte and its fields, integers
// as LEB128 varints (signed ones zigzag-encoded), strings as a varint length and bytes, ended by
// the end mark (kEnd, then the number of records before it) so that a truncated file is told
// from a complete one.
//   header:  version, source, arrival (0 open, 1 closed_loop), concurrency, think_time_ns,
//            tokens_per_word (8 bytes, little-endian IEEE double), k, description
//   fact / memory_write: flags (1 session, 2 context_tokens, 4 source, 8 text), id - previous
//            fact id (signed), user, tokens, time - previous record's time (signed),
//            [session], [count, context tokens...], [source], [text]
//   request: flags (1 text, 2 qa), id, user, time - previous record's time (signed),
//            query_tokens, output_tokens, count, facts (each minus the one before it, the first
//            minus the last fact declared; signed), [text], [category, answer, count, evidence...]

namespace {

enum : std::uint8_t { kHeader = 0, kFact = 1, kMemoryWrite = 2, kRequest = 3, kEnd = 0xff };
enum : std::uint8_t { kFactSession = 1, kFactContext = 2, kFactSource = 4, kFactText = 8 };
enum : std::uint8_t { kRequestText = 1, kRequestQa = 2 };

constexpr std::size_t kFlushBytes = 1 << 20;
constexpr std::uint64_t kMaxId = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kMaxTokens = 1 << 24;

void put_varint(std::string& b, std::uint64_t v) {
  while (v >= 0x80) {
    b += static_cast<char>(static_cast<std::uint8_t>(v) | 0x80);
    v >>= 7;
  }
  b += static_cast<char>(v);
}
void put_svarint(std::string& b, std::int64_t v) {
  put_varint(b, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void put_text(std::string& b, const std::string& s) {
  put_varint(b, s.size());
  b += s;
}
std::int64_t delta(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(a - b);  // wraps; the reader adds it back the same way
}

}  // namespace

bool is_binary_trace(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char head[8] = {};
  const std::size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  return n == sizeof(head) && std::string_view(head, n) == kBinaryTraceMagic;
}

// ---- writer ---------------------------------------------------------------------------------

BinaryTraceWriter::BinaryTraceWriter(const std::string& path, int zstd_level)
    : path_(path), tmp_path_(partial_file_name(path)) {
  // Of this writer (two writers of one trace do not share it), and removed if a signal ends the
  // process before close().
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  partial_ = partial_files_add(tmp_path_);
  auto* c = ZSTD_createCCtx();
  cctx_ = c;
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  if (std::fwrite(kBinaryTraceMagic.data(), 1, kBinaryTraceMagic.size(), file_) !=
      kBinaryTraceMagic.size()) {
    const std::string why = std::strerror(errno);
    discard();
    throw InputError(path_, "write failed: " + why);
  }
  buf_.reserve(kFlushBytes + 4096);
  out_.resize(ZSTD_CStreamOutSize());
}

BinaryTraceWriter::~BinaryTraceWriter() {
  discard();
}

void BinaryTraceWriter::discard() {
  ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
  cctx_ = nullptr;
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  if (!closed_) {
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
  }
  partial_files_release(partial_);
  partial_ = -1;
}

void BinaryTraceWriter::compress(bool end) {
  auto* c = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_inBuffer in{buf_.data(), buf_.size(), 0};
  while (true) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const std::size_t left = ZSTD_compressStream2(c, &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(left)) throw InputError(path_, std::string("zstd: ") + ZSTD_getErrorName(left));
    if (out.pos > 0 && std::fwrite(out_.data(), 1, out.pos, file_) != out.pos) {
      throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
    }
    if (end ? left == 0 : in.pos == in.size) break;
  }
  buf_.clear();
}

void BinaryTraceWriter::record_done() {
  ++records_;
  if (buf_.size() >= kFlushBytes) compress(false);
}

void BinaryTraceWriter::write(const TraceHeader& h) {
  buf_ += static_cast<char>(kHeader);
  put_varint(buf_, static_cast<std::uint64_t>(h.version));
  put_text(buf_, h.source);
  buf_ += static_cast<char>(h.arrival == ArrivalMode::kClosedLoop ? 1 : 0);
  put_varint(buf_, h.concurrency);
  put_varint(buf_, static_cast<std::uint64_t>(h.think_time_ns));
  std::uint64_t bits = 0;
  std::memcpy(&bits, &h.tokens_per_word, sizeof(bits));
  for (int i = 0; i < 8; ++i) buf_ += static_cast<char>((bits >> (8 * i)) & 0xff);
  put_varint(buf_, h.k);
  put_text(buf_, h.description);
  record_done();
}

void BinaryTraceWriter::write_fact(const FactRecord& f, bool memory_write) {
  buf_ += static_cast<char>(memory_write ? kMemoryWrite : kFact);
  std::uint8_t flags = 0;
  if (f.session >= 0) flags |= kFactSession;
  if (!f.context_tokens.empty()) flags |= kFactContext;
  if (!f.source.empty()) flags |= kFactSource;
  if (!f.text.empty()) flags |= kFactText;
  buf_ += static_cast<char>(flags);
  put_svarint(buf_, delta(f.id, last_fact_));
  last_fact_ = f.id;
  put_varint(buf_, f.user);
  put_varint(buf_, f.tokens);
  put_svarint(buf_, delta(static_cast<std::uint64_t>(f.time), static_cast<std::uint64_t>(last_time_)));
  last_time_ = f.time;
  if (flags & kFactSession) put_varint(buf_, static_cast<std::uint64_t>(f.session));
  if (flags & kFactContext) {
    put_varint(buf_, f.context_tokens.size());
    for (const auto t : f.context_tokens) put_varint(buf_, t);
  }
  if (flags & kFactSource) put_text(buf_, f.source);
  if (flags & kFactText) put_text(buf_, f.text);
  record_done();
}

void BinaryTraceWriter::write(const RequestRecord& r) {
  buf_ += static_cast<char>(kRequest);
  std::uint8_t flags = 0;
  if (!r.text.empty()) flags |= kRequestText;
  if (r.qa.category > 0) flags |= kRequestQa;
  buf_ += static_cast<char>(flags);
  put_varint(buf_, r.id);
  put_varint(buf_, r.user);
  put_svarint(buf_, delta(static_cast<std::uint64_t>(r.time), static_cast<std::uint64_t>(last_time_)));
  last_time_ = r.time;
  put_varint(buf_, r.query_tokens);
  put_varint(buf_, r.output_tokens);
  put_varint(buf_, r.facts.size());
  FactId prev = last_fact_;
  for (const FactId f : r.facts) {
    put_svarint(buf_, delta(f, prev));
    prev = f;
  }
  if (flags & kRequestText) put_text(buf_, r.text);
  if (flags & kRequestQa) {
    put_varint(buf_, static_cast<std::uint64_t>(r.qa.category));
    put_text(buf_, r.qa.answer);
    put_varint(buf_, r.qa.evidence.size());
    for (const auto& e : r.qa.evidence) put_text(buf_, e);
  }
  record_done();
}

void BinaryTraceWriter::close() {
  if (closed_) return;
  buf_ += static_cast<char>(kEnd);
  put_varint(buf_, records_);
  compress(true);
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) throw InputError(path_, std::string("close failed: ") + std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp_path_, path_, ec);
  if (ec) throw InputError(path_, "cannot rename " + tmp_path_ + " into place: " + ec.message());
  closed_ = true;
  partial_files_release(partial_);
  partial_ = -1;
}

// ---- reader ---------------------------------------------------------------------------------

BinaryTraceReader::BinaryTraceReader(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw InputError(path, "cannot open trace file");
  std::error_code ec;
  file_bytes_ = std::max<std::uint64_t>(1, std::filesystem::file_size(path, ec));
  char head[8] = {};
  if (std::fread(head, 1, sizeof(head), file_) != sizeof(head) ||
      std::string_view(head, sizeof(head)) != kBinaryTraceMagic) {
    std::fclose(file_);
    file_ = nullptr;
    throw InputError(path, "not a binary trace (its first 8 bytes are not the magic)");
  }
  consumed_ = sizeof(head);
  dctx_ = ZSTD_createDCtx();
  in_.resize(ZSTD_DStreamInSize());
}

BinaryTraceReader::~BinaryTraceReader() {
  ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
  if (file_ != nullptr) std::fclose(file_);
}

void BinaryTraceReader::fail(const std::string& message) const {
  throw InputError(path_ + ": record " + std::to_string(record_), message);
}

double BinaryTraceReader::fraction_read() const {
  return std::min(1.0, double(consumed_) / double(file_bytes_));
}

bool BinaryTraceReader::fill(std::size_t n) {
  if (buf_.size() - pos_ >= n) return true;
  if (pos_ > 0) {  // keep only what is not parsed yet
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  auto* d = static_cast<ZSTD_DCtx*>(dctx_);
  const std::size_t chunk = ZSTD_DStreamOutSize();
  while (buf_.size() < n) {
    if (in_pos_ == in_size_) {
      if (in_eof_) return false;
      in_size_ = std::fread(in_.data(), 1, in_.size(), file_);
      in_pos_ = 0;
      consumed_ += in_size_;
      if (in_size_ == 0) {
        if (std::ferror(file_)) throw InputError(path_, "read error");
        in_eof_ = true;
        if (!frame_done_) fail("truncated: the compressed data ends inside a frame");
        return false;
      }
    }
    const std::size_t old = buf_.size();
    buf_.resize(old + chunk);
    ZSTD_inBuffer in{in_.data(), in_size_, in_pos_};
    ZSTD_outBuffer out{buf_.data() + old, chunk, 0};
    const std::size_t rc = ZSTD_decompressStream(d, &out, &in);
    in_pos_ = in.pos;
    buf_.resize(old + out.pos);
    if (ZSTD_isError(rc)) fail(std::string("corrupt compressed data: ") + ZSTD_getErrorName(rc));
    frame_done_ = rc == 0;
  }
  return true;
}

std::uint8_t BinaryTraceReader::byte() {
  if (!fill(1)) fail("truncated record");
  return static_cast<std::uint8_t>(buf_[pos_++]);
}

std::uint64_t BinaryTraceReader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const std::uint8_t b = byte();
    v |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  fail("malformed varint (more than 10 bytes)");
}

std::int64_t BinaryTraceReader::svarint() {
  const std::uint64_t z = varint();
  return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
}

std::uint64_t BinaryTraceReader::in_range(const char* key, std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t v = varint();
  if (v < lo || v > hi) {
    fail(std::string("key '") + key + "': expected an integer in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "], got " + std::to_string(v));
  }
  return v;
}

void BinaryTraceReader::text(std::string& out) {
  const std::uint64_t n = varint();
  if (n > (std::uint64_t{1} << 30)) fail("string of " + std::to_string(n) + " bytes (at most 2^30)");
  if (!fill(n)) fail("truncated record");
  out.assign(buf_.data() + pos_, n);
  pos_ += n;
}

SimTime BinaryTraceReader::time_after_delta(const char*) {
  const std::int64_t d = svarint();
  std::int64_t t = 0;
  if (__builtin_add_overflow(last_time_, d, &t) || t < 0) {
    fail("key 'time': expected an integer in [0, " + std::to_string(kMaxId) + "]");
  }
  if (t < last_time_) {
    fail("time goes backwards: " + std::to_string(t) + " after " + std::to_string(last_time_) +
         " (records must be in time order)");
  }
  last_time_ = t;
  return t;
}

bool BinaryTraceReader::next(TraceRecord& out) {
  if (ended_) return false;
  if (!fill(1)) {
    fail("truncated: the file ends without its end mark (after " + std::to_string(record_) +
         " records)");
  }
  ++record_;
  const std::uint8_t kind = byte();
  switch (kind) {
    case kHeader:
      if (record_ != 1) fail("a header record must be the first record");
      read_header(out);
      return true;
    case kFact:
    case kMemoryWrite:
      read_fact(out, kind == kMemoryWrite);
      return true;
    case kRequest:
      read_request(out);
      return true;
    case kEnd: {
      const std::uint64_t n = varint();
      if (n != record_ - 1) {
        fail("end mark counts " + std::to_string(n) + " records, the file holds " +
             std::to_string(record_ - 1));
      }
      if (fill(1)) fail("data after the end mark");
      --record_;
      ended_ = true;
      return false;
    }
    default:
      fail("unknown record kind " + std::to_string(kind) +
           " (expected fact, memory_write, request or header)");
  }
}

void BinaryTraceReader::read_header(TraceRecord& out) {
  TraceHeader h;
  h.version = static_cast<int>(in_range("version", 1, 1));
  text(h.source);
  const std::uint8_t arrival = byte();
  if (arrival > 1) fail("key 'arrival': expected 'open' or 'closed_loop'");
  h.arrival = arrival == 1 ? ArrivalMode::kClosedLoop : ArrivalMode::kOpen;
  h.concurrency = static_cast<std::uint32_t>(in_range("concurrency", 0, 1 << 30));
  h.think_time_ns = static_cast<SimTime>(in_range("think_time_ns", 0, kMaxId));
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= std::uint64_t(byte()) << (8 * i);
  std::memcpy(&h.tokens_per_word, &bits, sizeof(bits));
  if (!(h.tokens_per_word >= 0 && h.tokens_per_word <= 1000)) {
    fail("key 'tokens_per_word': expected a number in [0, 1000]");
  }
  h.k = static_cast<std::uint32_t>(in_range("k", 0, 1 << 20));
  text(h.description);
  if (h.arrival == ArrivalMode::kClosedLoop && h.concurrency == 0) {
    fail("a closed_loop header needs 'concurrency' >= 1");
  }
  header_ = h;
  out.kind = RecordKind::kHeader;
  out.header = h;
}

void BinaryTraceReader::read_fact(TraceRecord& out, bool memory_write) {
  FactRecord& r = out.fact;
  const std::uint8_t flags = byte();
  if (flags & ~(kFactSession | kFactContext | kFactSource | kFactText)) {
    fail("unknown flags " + std::to_string(flags) + " in a fact record");
  }
  r.id = last_fact_ + static_cast<std::uint64_t>(svarint());
  if (r.id > kMaxId) fail("key 'id': expected an integer in [0, " + std::to_string(kMaxId) + "]");
  last_fact_ = r.id;
  r.user = in_range("user", 0, kMaxId);
  r.tokens = static_cast<std::uint32_t>(in_range("tokens", 1, kMaxTokens));
  r.time = time_after_delta(memory_write ? "memory_write" : "fact");
  r.session = (flags & kFactSession) ? static_cast<std::int32_t>(in_range("session", 0, 1 << 30))
                                     : -1;
  r.context_tokens.clear();
  if (flags & kFactContext) {
    const std::uint64_t n = in_range("context_tokens", 1, 1 << 24);
    for (std::uint64_t i = 0; i < n; ++i) {
      r.context_tokens.push_back(static_cast<std::uint32_t>(in_range("context_tokens", 0, kMaxTokens)));
    }
  }
  r.source.clear();
  r.text.clear();
  if (flags & kFactSource) text(r.source);
  if (flags & kFactText) text(r.text);
  if (facts_.add(r.id, r.user) == FactIndex::kAbsent) {
    fail("duplicate fact id " + std::to_string(r.id));
  }
  out.kind = memory_write ? RecordKind::kMemoryWrite : RecordKind::kFact;
}

void BinaryTraceReader::read_request(TraceRecord& out) {
  RequestRecord& r = out.request;
  const std::uint8_t flags = byte();
  if (flags & ~(kRequestText | kRequestQa)) {
    fail("unknown flags " + std::to_string(flags) + " in a request record");
  }
  r.id = in_range("id", 0, kMaxId);
  r.user = in_range("user", 0, kMaxId);
  r.time = time_after_delta("request");
  r.query_tokens = static_cast<std::uint32_t>(in_range("query_tokens", 1, kMaxTokens));
  r.output_tokens = static_cast<std::uint32_t>(in_range("output_tokens", 1, kMaxTokens));
  const std::uint64_t n = in_range("facts", 0, 1 << 24);
  r.facts.clear();
  dense_facts_.clear();
  FactId prev = last_fact_;
  for (std::uint64_t i = 0; i < n; ++i) {
    const FactId id = prev + static_cast<std::uint64_t>(svarint());
    prev = id;
    const auto dense = id > kMaxId ? FactIndex::kAbsent : facts_.find(id);
    if (dense == FactIndex::kAbsent) {
      fail("request " + std::to_string(r.id) + " names fact " + std::to_string(id) +
           ", which does not exist (yet): facts must be declared before use");
    }
    if (facts_.owner(dense) != r.user) {
      fail("request " + std::to_string(r.id) + " of user " + std::to_string(r.user) +
           " names fact " + std::to_string(id) + " of user " +
           std::to_string(facts_.owner(dense)));
    }
    r.facts.push_back(id);
    dense_facts_.push_back(dense);
  }
  r.text.clear();
  if (flags & kRequestText) text(r.text);
  r.qa.category = 0;
  r.qa.answer.clear();
  r.qa.evidence.clear();
  if (flags & kRequestQa) {
    r.qa.category = static_cast<int>(in_range("qa.category", 1, 5));
    text(r.qa.answer);
    const std::uint64_t e = in_range("qa.evidence", 0, 1 << 20);
    for (std::uint64_t i = 0; i < e; ++i) text(r.qa.evidence.emplace_back());
  }
  out.kind = RecordKind::kRequest;
}

// ---- conversion -----------------------------------------------------------------------------

ConvertResult convert_trace(const std::string& in, const std::string& out,
                            const StreamProgressFn& progress) {
  ConvertResult r;
  r.to_binary = !is_binary_trace(in);
  const auto stream = open_trace(in);
  if (r.to_binary) {
    BinaryTraceWriter w(out);
    r.records = copy_records(*stream, w, progress).records;
    w.close();
  } else {
    TraceWriter w(out);
    r.records = copy_records(*stream, w, progress).records;
    w.close();
  }
  return r;
}

}  // namespace inferscale
