// Percentiles: the radix sort of large arrays gives the values, order and mean of std::sort.
#include <algorithm>
#include <cstring>
#include <random>

#include "sim/metrics.h"
#include "tests/catch.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

Percentiles reference(std::vector<double> v) {
  Percentiles p;
  std::sort(v.begin(), v.end());
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

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

TEST_CASE("percentiles: large arrays sorted by radix match std::sort bit for bit") {
  std::mt19937_64 rng(3);
  for (const std::size_t n : {1, 255, 256, 1000, 100000}) {
    for (int shape = 0; shape < 4; ++shape) {
      INFO("n " << n << " shape " << shape);
      std::vector<double> v(n);
      for (auto& x : v) {
        const auto r = std::int64_t(rng() % 2000000000) - (shape == 1 ? 1000000000 : 0);
        if (shape == 2) {
          x = double(rng() % 7) / 1e6;  // many equal values
        } else if (shape == 3) {
          x = double(r) * 1e290;  // wide exponents, infinities
        } else {
          x = double(r) / 1e6;
        }
      }
      const Percentiles want = reference(v);
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const Percentiles got = percentiles(v);
      CHECK(v == sorted);
      CHECK(same_bits(got.p50, want.p50));
      CHECK(same_bits(got.p90, want.p90));
      CHECK(same_bits(got.p99, want.p99));
      CHECK(same_bits(got.mean, want.mean));
      CHECK(same_bits(got.max, want.max));
    }
  }
}

TEST_CASE("a full disk while writing requests.csv is an input error naming the file") {
  // /dev/full: every write fails with ENOSPC, as on a full disk. Before: a runtime_error
  // ("write error in requests.csv"), which the CLI reported as an internal error.
  Metrics m("/dev/full");
  Request r;
  r.arrival = 0;
  r.first_scheduled = 0;
  r.first_token = 1000;
  r.finish = 2000;
  r.output_tokens = 2;
  for (int i = 0; i < 10; ++i) {
    r.id = static_cast<RequestId>(i);
    m.record(r, 0, 1e9, 1e9);
  }
  std::string message;
  try {
    m.close();
  } catch (const InputError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.rfind("/dev/full: write failed: ", 0) == 0);
  CHECK(message.find("No space left") != std::string::npos);
}
