// The binary trace reader. The first byte says what the rest is: even, the record bytes, which
// this target compresses (so that mutations reach the record parser instead of failing zstd's
// checksum); odd, the compressed stream as it follows the magic in a file (zstd framing,
// truncation, the end mark). An InputError is the expected outcome for bad input, anything else
// a finding; a trace that reads must be written again (BinaryTraceWriter) and read back to the
// same records.
#include <zstd.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input_file.h"
#include "traces/binary_trace.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

/// A record in words, every field the format carries.
std::string describe(const TraceRecord& r) {
  std::string s = std::to_string(static_cast<int>(r.kind));
  if (r.kind == RecordKind::kHeader) {
    const TraceHeader& h = r.header;
    s += " " + std::to_string(h.version) + " " + h.source + " " +
         std::to_string(static_cast<int>(h.arrival)) + " " + std::to_string(h.concurrency) + " " +
         std::to_string(h.think_time_ns) + " " +
         std::to_string(std::bit_cast<std::uint64_t>(h.tokens_per_word)) + " " +
         std::to_string(h.k) + " " + h.description;
  } else if (r.kind == RecordKind::kRequest) {
    const RequestRecord& q = r.request;
    s += " " + std::to_string(q.id) + " " + std::to_string(q.user) + " " + std::to_string(q.time) +
         " " + std::to_string(q.query_tokens) + " " + std::to_string(q.output_tokens) + " [";
    for (const auto f : q.facts) s += std::to_string(f) + ",";
    s += "] " + q.text + " " + std::to_string(q.qa.category) + " " + q.qa.answer + " [";
    for (const auto& e : q.qa.evidence) s += e + ",";
    s += "]";
  } else {
    const FactRecord& f = r.fact;
    s += " " + std::to_string(f.id) + " " + std::to_string(f.user) + " " +
         std::to_string(f.tokens) + " " + std::to_string(f.time) + " " + std::to_string(f.session) +
         " " + f.text + " " + f.source + " [";
    for (const auto c : f.context_tokens) s += std::to_string(c) + ",";
    s += "]";
  }
  return s;
}

/// Every record of the binary trace at `path`; false on an InputError.
bool read_all(const std::string& path, std::vector<TraceRecord>& out) {
  try {
    BinaryTraceReader r(path);
    TraceRecord rec;
    while (r.next(rec)) out.push_back(rec);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return -1;  // not kept in the corpus
  std::string file(kBinaryTraceMagic);
  const char* body = reinterpret_cast<const char*>(data + 1);
  if ((data[0] & 1) != 0) {
    file.append(body, size - 1);
  } else {
    std::string z(ZSTD_compressBound(size - 1), '\0');
    const std::size_t n = ZSTD_compress(z.data(), z.size(), body, size - 1, 1);
    if (ZSTD_isError(n)) std::abort();
    file.append(z.data(), n);
  }
  const std::string path =
      fuzz::input_file(".bin", reinterpret_cast<const std::uint8_t*>(file.data()), file.size());
  std::vector<TraceRecord> records;
  if (!read_all(path, records)) return 0;

  const std::string again = path + ".again";
  {
    BinaryTraceWriter w(again);
    for (const auto& r : records) {
      if (r.kind == RecordKind::kHeader) {
        w.write(r.header);
      } else if (r.kind == RecordKind::kRequest) {
        w.write(r.request);
      } else {
        w.write_fact(r.fact, r.kind == RecordKind::kMemoryWrite);
      }
    }
    w.close();
  }
  std::vector<TraceRecord> back;
  if (!read_all(again, back) || back.size() != records.size()) std::abort();
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (describe(records[i]) != describe(back[i])) std::abort();  // the writer lost a field
  }
  return 0;
}
