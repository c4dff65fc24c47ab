#include "traces/record_stream.h"

#include <filesystem>

#include "traces/binary_trace.h"
#include "traces/reader.h"

namespace inferscale {

namespace {

/// A JSONL file through TraceReader.
class JsonlStream final : public RecordStream {
 public:
  JsonlStream(const std::string& path, bool fast_parse) : reader_(path, fast_parse) {
    std::error_code ec;
    size_ = std::max<double>(1, double(std::filesystem::file_size(path, ec)));
  }
  bool next(TraceRecord& out) override { return reader_.next(out); }
  const TraceHeader& header() const override { return reader_.header(); }
  const std::vector<std::uint32_t>& request_fact_indices() const override {
    return reader_.request_fact_indices();
  }
  std::uint32_t dense_of(FactId id) const override { return reader_.facts().find(id); }
  std::uint64_t facts_declared() const override { return reader_.facts().size(); }
  double fraction_read() const override {
    return std::min(1.0, double(reader_.bytes_read()) / size_);
  }
  const std::string& name() const override { return reader_.path(); }

 private:
  TraceReader reader_;
  double size_ = 1;
};

}  // namespace

std::unique_ptr<RecordStream> open_trace(const std::string& path, bool fast_parse) {
  if (is_binary_trace(path)) return std::make_unique<BinaryTraceReader>(path);
  return std::make_unique<JsonlStream>(path, fast_parse);
}

}  // namespace inferscale
