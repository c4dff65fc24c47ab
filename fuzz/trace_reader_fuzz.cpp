// The trace reader, differentially: every input read with the compact fast path and with the
// general parser alone must give the same records and, on bad input, the same InputError (the
// fast path may only change speed). Anything but an InputError is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input_file.h"
#include "traces/error.h"
#include "traces/reader.h"

using namespace inferscale;

namespace {

/// One reader's view of the input: each record in words, then the error (if any).
std::vector<std::string> read_all(const std::string& path, bool fast) {
  std::vector<std::string> out;
  try {
    TraceReader r(path);
    r.set_fast_path(fast);
    TraceRecord rec;
    while (r.next(rec)) {
      std::string s = std::to_string(static_cast<int>(rec.kind));
      if (rec.kind == RecordKind::kRequest) {
        const RequestRecord& q = rec.request;
        s += " " + std::to_string(q.id) + " " + std::to_string(q.user) + " " +
             std::to_string(q.time) + " " + std::to_string(q.query_tokens) + " " +
             std::to_string(q.output_tokens) + " " + q.text + " [";
        for (const auto f : q.facts) s += std::to_string(f) + ",";
        s += "] [";
        for (const auto d : r.request_fact_indices()) s += std::to_string(d) + ",";
        s += "]";
      } else if (rec.kind != RecordKind::kHeader) {
        const FactRecord& f = rec.fact;
        s += " " + std::to_string(f.id) + " " + std::to_string(f.user) + " " +
             std::to_string(f.tokens) + " " + std::to_string(f.time) + " " +
             std::to_string(f.session) + " " + f.text + " " + f.source + " [";
        for (const auto c : f.context_tokens) s += std::to_string(c) + ",";
        s += "]";
      } else {
        s += " " + std::to_string(r.header().version) + " " +
             std::to_string(r.header().tokens_per_word) + " " + std::to_string(r.header().k);
      }
      out.push_back(std::move(s));
    }
  } catch (const InputError& e) {
    out.push_back(std::string("error: ") + e.what());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::input_file(".jsonl", data, size);
  if (read_all(path, true) != read_all(path, false)) std::abort();  // the parsers disagree
  return 0;
}
