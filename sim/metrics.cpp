#include "sim/metrics.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "traces/error.h"

namespace inferscale {

namespace {

/// Ascending order of doubles by their bits (LSD radix, 11-bit digits): the order std::sort
/// gives for values that are not NaN, in a few passes instead of n log n comparisons (a run
/// sorts four arrays of one value per request).
void sort_values(std::vector<double>& v) {
  constexpr int kBits = 11, kDigits = (64 + kBits - 1) / kBits;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  std::vector<std::uint64_t> keys(v.size()), tmp(v.size());
  std::vector<std::uint32_t> counts(kBuckets * kDigits, 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t b;
    std::memcpy(&b, &v[i], sizeof b);
    // Negative values reversed below the positive ones: unsigned order is numeric order.
    b = (b >> 63) != 0 ? ~b : b | (std::uint64_t{1} << 63);
    keys[i] = b;
    for (int d = 0; d < kDigits; ++d)
      ++counts[d * kBuckets + ((b >> (d * kBits)) & (kBuckets - 1))];
  }
  for (int d = 0; d < kDigits; ++d) {
    std::uint32_t* c = counts.data() + d * kBuckets;
    // A digit all keys share moves nothing.
    if (c[(keys[0] >> (d * kBits)) & (kBuckets - 1)] == v.size()) continue;
    std::uint32_t sum = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      const std::uint32_t n = c[b];
      c[b] = sum;
      sum += n;
    }
    for (const std::uint64_t k : keys) tmp[c[(k >> (d * kBits)) & (kBuckets - 1)]++] = k;
    keys.swap(tmp);
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t b = keys[i];
    b = (b >> 63) != 0 ? b & ~(std::uint64_t{1} << 63) : ~b;
    std::memcpy(&v[i], &b, sizeof b);
  }
}

}  // namespace

Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  if (v.size() < 256 || v.size() > 0xffffffffu ||
      std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); })) {
    std::sort(v.begin(), v.end());
  } else {
    sort_values(v);
  }
  auto rank = [&](double q) {
    const auto i = static_cast<std::size_t>(std::ceil(q * double(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / double(v.size());
  p.max = v.back();
  return p;
}

namespace {

constexpr const char* kHeader =
    "id,user,replica,arrival,first_token,finish,ttft,tpot,e2e,k,gpu_hits,host_hits,misses,"
    "prefill_tokens,queue_delay,preemptions\n";

void put_u(std::string& b, std::uint64_t v) {
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof(tmp), v);
  b.append(tmp, p);
}

/// Nanoseconds as milliseconds with 6 decimals: exact, and identical on every platform.
void put_ms(std::string& b, SimTime ns) {
  if (ns < 0) {
    b += '-';
    ns = -ns;
  }
  put_u(b, static_cast<std::uint64_t>(ns / 1'000'000));
  char frac[8];
  auto f = static_cast<unsigned>(ns % 1'000'000);
  for (int i = 5; i >= 0; --i) {
    frac[i] = static_cast<char>('0' + f % 10);
    f /= 10;
  }
  b += '.';
  b.append(frac, 6);
}

}  // namespace

Metrics::Metrics(const std::string& csv_path) : csv_path_(csv_path) {
  if (!csv_path.empty()) {
    csv_ = std::fopen(csv_path.c_str(), "wb");
    if (csv_ == nullptr) {
      throw InputError(csv_path, std::string("cannot write: ") + std::strerror(errno));
    }
    buf_ = kHeader;
  }
}

Metrics::~Metrics() {
  if (csv_ != nullptr) std::fclose(csv_);
}

void Metrics::record(const Request& r, std::uint32_t k, double ttft_slo_ms, double tpot_slo_ms) {
  const SimTime ttft = r.first_token - r.arrival;
  const SimTime e2e = r.finish - r.arrival;
  const SimTime tpot = r.output_tokens > 1 ? (r.finish - r.first_token) / (r.output_tokens - 1) : 0;
  const SimTime queue = r.first_scheduled - r.arrival;
  ++completed_;
  output_tokens_ += r.output_tokens;
  gpu_hits_ += r.gpu_hits;
  host_hits_ += r.host_hits;
  disk_hits_ += r.disk_hits;
  remote_hits_ += r.remote_hits;
  misses_ += r.misses;
  preemptions_ += r.preemptions;
  prefill_tokens_ += r.prefill_tokens;
  if (first_arrival_ < 0 || r.arrival < first_arrival_) first_arrival_ = r.arrival;
  last_finish_ = std::max(last_finish_, r.finish);
  const double ttft_ms = double(ttft) / 1e6, tpot_ms = double(tpot) / 1e6;
  ttft_ms_.push_back(ttft_ms);
  tpot_ms_.push_back(tpot_ms);
  e2e_ms_.push_back(double(e2e) / 1e6);
  queue_ms_.push_back(double(queue) / 1e6);
  if (ttft_ms <= ttft_slo_ms && tpot_ms <= tpot_slo_ms) ++good_;
  if (csv_ == nullptr) return;
  put_u(buf_, r.id);
  buf_ += ',';
  put_u(buf_, r.user);
  buf_ += ',';
  put_u(buf_, static_cast<std::uint64_t>(r.replica));
  buf_ += ',';
  put_ms(buf_, r.arrival);
  buf_ += ',';
  put_ms(buf_, r.first_token);
  buf_ += ',';
  put_ms(buf_, r.finish);
  buf_ += ',';
  put_ms(buf_, ttft);
  buf_ += ',';
  put_ms(buf_, tpot);
  buf_ += ',';
  put_ms(buf_, e2e);
  buf_ += ',';
  put_u(buf_, k);
  buf_ += ',';
  put_u(buf_, r.gpu_hits);
  buf_ += ',';
  put_u(buf_, r.host_hits);
  buf_ += ',';
  put_u(buf_, r.misses);
  buf_ += ',';
  put_u(buf_, r.prefill_tokens);
  buf_ += ',';
  put_ms(buf_, queue);
  buf_ += ',';
  put_u(buf_, r.preemptions);
  buf_ += '\n';
  if (!hold_ && buf_.size() > (1u << 20)) flush_csv();
}

void Metrics::hold_rows() {
  if (csv_ == nullptr) return;
  flush_csv();
  hold_ = true;
}

void Metrics::write_held_rows(const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  if (csv_ == nullptr) return;
  reordered_.clear();
  for (const auto& [begin, end] : ranges) reordered_.append(buf_, begin, end - begin);
  INFERSCALE_ASSERT(reordered_.size() == buf_.size(), "held rows not covered once each");
  buf_.swap(reordered_);
  flush_csv();
}

void Metrics::flush_csv() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), csv_) != buf_.size()) {
    throw InputError(csv_path_, std::string("write failed: ") + std::strerror(errno));
  }
  buf_.clear();
}

void Metrics::close() {
  if (csv_ == nullptr) return;
  flush_csv();
  // fclose writes what stdio still buffers: a full disk shows there at the latest.
  const bool bad = std::fflush(csv_) != 0 || std::ferror(csv_) != 0;
  const int error = errno;
  const bool close_failed = std::fclose(csv_) != 0;
  csv_ = nullptr;
  if (bad || close_failed) {
    throw InputError(csv_path_, std::string("write failed: ") + std::strerror(bad ? error : errno));
  }
}

}  // namespace inferscale
