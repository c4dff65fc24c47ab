// CPU tests of the paged attention context's definition (kernels/reference/split_kv_attention.cpp
// with a PagedKvView): attending through a block table that rotates pre-RoPE fact keys on load
// equals injecting the facts into the cache (kv_inject_reference) and attending the cache, bit
// for bit, for every dtype, rotary style, Llama 3.1 scaling, delta mode and fact layout; and the
// page builder's cuts.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/paged_kv.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/split_kv_attention.h"
#include "tests/catch.h"
#include "tests/kernels/paged_kv_case.h"

using namespace inferscale;
using test::PagedKvCase;

namespace {

/// Both paths' outputs, as bytes.
std::pair<std::vector<unsigned char>, std::vector<unsigned char>> both_paths(const PagedKvCase& c) {
  test::PagedKvBuffers b = test::make_paged_kv(c);
  const std::size_t bytes =
      std::size_t(b.tokens) * c.heads * c.head_dim * std::size_t(dtype_bytes(c.dtype));
  std::vector<unsigned char> copy(bytes, 0xAB), paged(bytes, 0xCD);
  split_kv_attention_reference(test::paged_kv_params(c, b, false, copy.data()));
  split_kv_attention_reference(test::paged_kv_params(c, b, true, paged.data()));
  return {copy, paged};
}

bool all_finite(const std::vector<unsigned char>& out, DType t) {
  for (std::size_t i = 0; i < out.size() / std::size_t(dtype_bytes(t)); ++i) {
    if (!std::isfinite(load_elem(out.data(), std::int64_t(i), t))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("paged reference: a block table equals inject-then-attend bit for bit") {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kGptj}) {
      for (bool delta : {false, true}) {
        for (double scaling : {0.0, 8.0}) {
          PagedKvCase c;
          c.dtype = dtype;
          c.style = style;
          c.delta = delta;
          c.rope_scaling = scaling;
          c.seed = 7 + std::uint64_t(dtype) * 4 + std::uint64_t(delta) * 2 + (scaling > 0);
          CAPTURE(dtype_name(dtype), rope_style_name(style), delta, scaling);
          const auto [copy, paged] = both_paths(c);
          CHECK(all_finite(paged, dtype));
          CHECK(copy == paged);
        }
      }
    }
  }
}

TEST_CASE("paged reference: many facts, GQA groups of 4 and head_dim 64") {
  PagedKvCase c;
  c.heads = 8;
  c.kv_heads = 2;
  c.head_dim = 64;
  c.dtype = DType::kBF16;
  c.fact_tokens.clear();
  std::vector<std::int32_t> pieces = {-5};  // a header of the request's own
  for (std::int32_t f = 0; f < 50; ++f) {
    c.fact_tokens.push_back(1 + (f * 7) % 33);
    pieces.push_back(f);
  }
  pieces.push_back(-24);
  c.segments = {{pieces, 12}, {{3, 9, 3, -1}, 1}};
  const auto [copy, paged] = both_paths(c);
  CHECK(all_finite(paged, c.dtype));
  CHECK(copy == paged);
}

TEST_CASE("paged reference: the rotation on load is what makes the paths agree") {
  // A pre-RoPE page read as if it were rotated already: the test above could fail.
  PagedKvCase c;
  test::PagedKvBuffers b = test::make_paged_kv(c);
  const std::size_t n = std::size_t(b.tokens) * c.heads * c.head_dim;
  std::vector<float> copy(n), paged(n);
  split_kv_attention_reference(test::paged_kv_params(c, b, false, copy.data()));
  for (PagedKvEntry& e : b.pages) {
    if (e.kind == PagedKvKind::kPoolPreRope) e.position += 1;  // one position off
  }
  split_kv_attention_reference(test::paged_kv_params(c, b, true, paged.data()));
  CHECK(copy != paged);
}

TEST_CASE("paged_kv_add_run cuts pages at 16 keys and at pool block ends") {
  std::vector<PagedKvEntry> pages;
  paged_kv_add_run(pages, PagedKvKind::kPoolPreRope, 3 * 16 + 10, 23, 100, 16);
  REQUIRE(pages.size() == 3);
  CHECK(pages[0].row == 58);
  CHECK(pages[0].tokens == 6);
  CHECK(pages[0].position == 100);
  CHECK(pages[1].row == 64);
  CHECK(pages[1].tokens == 16);
  CHECK(pages[1].position == 106);
  CHECK(pages[2].tokens == 1);
  CHECK(pages[2].position == 122);
  pages.clear();
  paged_kv_add_run(pages, PagedKvKind::kPoolDelta, 16, 20, -4, 32);
  REQUIRE(pages.size() == 2);
  CHECK(pages[1].position == -4);  // a delta shift is the same for every key
  CHECK(pages[1].tokens == 4);
  pages.clear();
  paged_kv_add_run(pages, PagedKvKind::kCache, 7, 33, 0, 16);  // cache rows: no blocks
  REQUIRE(pages.size() == 3);
  CHECK(pages[2].row == 39);
  CHECK(paged_kv_keys(pages.data(), pages.data() + pages.size()) == 33);
}
