#include "sim/timeline.h"

#include <stdexcept>

namespace inferscale {

TimelineFile::TimelineFile(const std::string& path) : file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) throw std::runtime_error("cannot write " + path);
  std::fprintf(file_, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
}

TimelineFile::~TimelineFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void TimelineFile::add(int replica, const StepRecord& s) {
  std::fprintf(
      file_,
      "%s{\"name\":\"step\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
      "\"args\":{\"tokens\":%u,\"prefills\":%u,\"decodes\":%u,\"encodes\":%u,"
      "\"loads\":%u,\"async_loads\":%u,\"kv_blocks\":%llu,\"encode_us\":%.3f,\"load_us\":%.3f,"
      "\"inject_us\":%.3f,\"prefill_us\":%.3f,\"decode_us\":%.3f,"
      "\"overhead_us\":%.3f}}",
      first_ ? "" : ",\n", replica, double(s.start) / 1e3, double(s.duration_ns) / 1e3,
      s.batch_tokens, s.prefills, s.decodes, s.encodes, s.loads, s.async_loads,
      static_cast<unsigned long long>(s.kv_blocks_used), double(s.phases.encode_ns) / 1e3,
      double(s.phases.load_ns) / 1e3, double(s.phases.inject_ns) / 1e3,
      double(s.phases.prefill_ns) / 1e3, double(s.phases.decode_ns) / 1e3,
      double(s.phases.overhead_ns) / 1e3);
  first_ = false;
}

void TimelineFile::close() {
  if (file_ == nullptr) return;
  std::fprintf(file_, "\n]}\n");
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace inferscale
