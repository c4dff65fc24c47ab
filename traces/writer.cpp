#include "traces/writer.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>

#include "traces/error.h"
#include "traces/partial_files.h"

namespace inferscale {

namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

void put_int(std::string& b, std::int64_t v) {
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof(tmp), v);
  b.append(tmp, p);
}

void put_uint(std::string& b, std::uint64_t v) {
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof(tmp), v);
  b.append(tmp, p);
}

void put_double(std::string& b, double v) {
  char tmp[32];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof(tmp), v);
  b.append(tmp, p);
}

void put_string(std::string& b, const std::string& s) {
  b += '"';
  for (const char c : s) {
    switch (c) {
      case '"': b += "\\\""; break;
      case '\\': b += "\\\\"; break;
      case '\n': b += "\\n"; break;
      case '\r': b += "\\r"; break;
      case '\t': b += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char tmp[8];
          std::snprintf(tmp, sizeof(tmp), "\\u%04x", static_cast<unsigned>(c));
          b += tmp;
        } else {
          b += c;
        }
    }
  }
  b += '"';
}

void key(std::string& b, const char* k) {
  b += ",\"";
  b += k;
  b += "\":";
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path) : path_(path) {
  if (path == "-") {
    file_ = stdout;
  } else {
    // Of this writer: two writers of the same trace do not share a temporary file.
    tmp_path_ = partial_file_name(path);
    file_ = std::fopen(tmp_path_.c_str(), "wb");
    if (file_ == nullptr) {
      throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
    }
    partial_ = partial_files_add(tmp_path_);
  }
  buf_.reserve(kFlushBytes + 4096);
}

TraceWriter::~TraceWriter() {
  if (!closed_ && file_ != stdout && !tmp_path_.empty()) {
    if (file_ != nullptr) std::fclose(file_);
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
  }
  partial_files_release(partial_);
}

void TraceWriter::flush_if_full() {
  ++records_;
  if (buf_.size() < kFlushBytes) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
  }
  buf_.clear();
}

void TraceWriter::write(const TraceHeader& h) {
  buf_ += "{\"type\":\"header\",\"version\":";
  put_int(buf_, h.version);
  if (!h.source.empty()) {
    key(buf_, "source");
    put_string(buf_, h.source);
  }
  key(buf_, "arrival");
  buf_ += h.arrival == ArrivalMode::kClosedLoop ? "\"closed_loop\"" : "\"open\"";
  if (h.arrival == ArrivalMode::kClosedLoop) {
    key(buf_, "concurrency");
    put_uint(buf_, h.concurrency);
    key(buf_, "think_time_ns");
    put_int(buf_, h.think_time_ns);
  }
  if (h.tokens_per_word > 0) {
    key(buf_, "tokens_per_word");
    put_double(buf_, h.tokens_per_word);
  }
  if (h.k > 0) {
    key(buf_, "k");
    put_uint(buf_, h.k);
  }
  if (!h.description.empty()) {
    key(buf_, "description");
    put_string(buf_, h.description);
  }
  buf_ += "}\n";
  flush_if_full();
}

void TraceWriter::write_fact(const FactRecord& f, bool memory_write) {
  buf_ += memory_write ? "{\"type\":\"memory_write\",\"id\":" : "{\"type\":\"fact\",\"id\":";
  put_uint(buf_, f.id);
  key(buf_, "user");
  put_uint(buf_, f.user);
  key(buf_, "tokens");
  put_uint(buf_, f.tokens);
  key(buf_, "time");
  put_int(buf_, f.time);
  if (f.session >= 0) {
    key(buf_, "session");
    put_int(buf_, f.session);
  }
  if (!f.source.empty()) {
    key(buf_, "source");
    put_string(buf_, f.source);
  }
  if (!f.context_tokens.empty()) {
    key(buf_, "context_tokens");
    buf_ += '[';
    for (std::size_t i = 0; i < f.context_tokens.size(); ++i) {
      if (i) buf_ += ',';
      put_uint(buf_, f.context_tokens[i]);
    }
    buf_ += ']';
  }
  if (!f.text.empty()) {
    key(buf_, "text");
    put_string(buf_, f.text);
  }
  buf_ += "}\n";
  flush_if_full();
}

void TraceWriter::write(const RequestRecord& r) {
  buf_ += "{\"type\":\"request\",\"id\":";
  put_uint(buf_, r.id);
  key(buf_, "user");
  put_uint(buf_, r.user);
  key(buf_, "time");
  put_int(buf_, r.time);
  key(buf_, "query_tokens");
  put_uint(buf_, r.query_tokens);
  key(buf_, "output_tokens");
  put_uint(buf_, r.output_tokens);
  key(buf_, "facts");
  buf_ += '[';
  for (std::size_t i = 0; i < r.facts.size(); ++i) {
    if (i) buf_ += ',';
    put_uint(buf_, r.facts[i]);
  }
  buf_ += ']';
  if (!r.text.empty()) {
    key(buf_, "text");
    put_string(buf_, r.text);
  }
  if (r.qa.category > 0) {
    buf_ += ",\"qa\":{\"category\":";
    put_int(buf_, r.qa.category);
    key(buf_, "answer");
    put_string(buf_, r.qa.answer);
    key(buf_, "evidence");
    buf_ += '[';
    for (std::size_t i = 0; i < r.qa.evidence.size(); ++i) {
      if (i) buf_ += ',';
      put_string(buf_, r.qa.evidence[i]);
    }
    buf_ += "]}";
  }
  buf_ += "}\n";
  flush_if_full();
}

void TraceWriter::close() {
  if (closed_) return;
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
  }
  buf_.clear();
  if (file_ == stdout) {
    std::fflush(stdout);
  } else {
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      throw InputError(path_, std::string("close failed: ") + std::strerror(errno));
    }
    file_ = nullptr;
    std::error_code ec;
    std::filesystem::rename(tmp_path_, path_, ec);
    if (ec) throw InputError(path_, "cannot rename " + tmp_path_ + " into place: " + ec.message());
    partial_files_release(partial_);
    partial_ = -1;
  }
  closed_ = true;
}

}  // namespace inferscale
