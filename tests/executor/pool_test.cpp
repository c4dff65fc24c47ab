// The fact pool obeys: allocate, free, report usage; the KV cache row allocator.
#include "executor/gpu/device_ops.h"
#include "executor/gpu/fact_pool.h"
#include "executor/gpu/host_tier.h"
#include "executor/gpu/kv_quant.h"
#include "executor/gpu/slot_allocator.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;

namespace {

/// A float pool of `blocks` blocks of the tiny model, every block filled with random values.
FactPool random_pool(std::uint64_t blocks) {
  const ModelConfig m = test::tiny_model();
  FactPool pool(m, blocks * FactPool::block_bytes(m, 4), 0, at::TensorOptions().dtype(at::kFloat));
  pool.storage().copy_(at::randn(pool.storage().sizes()));
  return pool;
}

}  // namespace

TEST_CASE("fact pool allocates whole blocks within its capacity") {
  const ModelConfig m = test::tiny_model();
  const std::uint64_t block = FactPool::block_bytes(m, 4);
  CHECK(block == 2ull * m.layers * 16 * m.kv_heads * m.head_dim * 4);
  FactPool pool(m, 10 * block + block / 2, 40, at::TensorOptions().dtype(at::kFloat));
  CHECK(pool.capacity_bytes() == 10 * block);
  CHECK(pool.used_bytes() == 0);
  CHECK(pool.storage().size(0) == 10 + 3);  // 40 reserved tokens: 3 blocks

  const FactPool::Entry& a = pool.allocate(1, 24, 0);  // 2 blocks
  CHECK(a.blocks.size() == 2);
  CHECK(a.slot(17) == a.blocks[1] * 16 + 1);
  pool.allocate(2, 16, 0);  // 1 block
  CHECK(pool.used_bytes() == 3 * block);
  CHECK(pool.resident_facts() == 2);
  pool.allocate(3, 7 * 16, 5);
  CHECK(pool.used_bytes() == 10 * block);
  CHECK_THROWS_AS(pool.allocate(4, 1, 0), PoolFullError);
  CHECK(pool.find(4) == nullptr);

  CHECK(pool.free(2));
  CHECK_FALSE(pool.free(2));
  CHECK(pool.used_bytes() == 9 * block);
  const FactPool::Entry& d = pool.allocate(4, 10, 3);
  CHECK(d.encode_position == 3);
  CHECK(pool.find(3)->encode_position == 5);
  // Re-allocating a resident fact replaces it.
  pool.allocate(1, 16, 0);
  CHECK(pool.find(1)->blocks.size() == 1);
  CHECK(pool.used_bytes() == 9 * block);

  // The reserved area does not count as usage and has its own limit.
  pool.allocate_reserved(99, 40, 0);
  CHECK(pool.used_bytes() == 9 * block);
  CHECK_THROWS_AS(pool.allocate_reserved(100, 1, 0), PoolFullError);
  CHECK(pool.free_reserved(99));
  CHECK(pool.find_reserved(99) == nullptr);
  for (std::int32_t b : pool.allocate_reserved(100, 33, 0).blocks) CHECK(b >= 10);
}

TEST_CASE("host tier keeps block copies in chunks, reuses freed blocks and reserves up front") {
  const std::uint64_t block = FactPool::block_bytes(test::tiny_model(), 4);
  const std::unique_ptr<DeviceOps> ops = make_cpu_ops();
  FactPool pool = random_pool(8);
  HostTier host(pool, 3 * block);  // chunks of 3 blocks
  CHECK(host.reserved_bytes() == 0);
  const FactPool::Entry a = pool.allocate(1, 40, 2);  // 3 blocks, 8 tokens of the last
  const FactPool::Entry b = pool.allocate(2, 20, 0);  // 2 blocks
  host.store(1, a, pool, *ops);
  host.store(2, b, pool, *ops);
  CHECK(host.reserved_bytes() == 6 * block);  // grew by whole chunks
  CHECK(host.find(1)->encode_position == 2);
  const at::Tensor a_kv =
      pool.storage().index_select(0, at::tensor({a.blocks[0], a.blocks[1], a.blocks[2]}));
  pool.free(1);
  pool.storage().zero_();
  const FactPool::Entry& back = pool.allocate(1, 40, 2);
  host.load(*host.find(1), back, pool, *ops);
  // Blocks [layers, 2, 16 tokens, kv_heads, head_dim]: whole blocks, then the last one's first 8
  // tokens of every layer's K and V; its other rows are not copied.
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(at::equal(pool.storage()[back.blocks[i]], a_kv[std::int64_t(i)]));
  const at::Tensor last = pool.storage()[back.blocks[2]];
  CHECK(at::equal(last.narrow(2, 0, 8), a_kv[2].narrow(2, 0, 8)));
  CHECK(last.narrow(2, 8, 8).abs().sum().item<float>() == 0.0f);
  CHECK(a_kv[2].narrow(2, 8, 8).abs().sum().item<float>() > 0.0f);  // not vacuous
  CHECK_THROWS_AS(host.load(*host.find(2), back, pool, *ops),
                  std::invalid_argument);  // 2 blocks into 3
  // Freed host blocks are reused before the tier grows.
  CHECK(host.erase(1));
  CHECK_FALSE(host.erase(1));
  host.store(3, a, pool, *ops);
  CHECK(host.reserved_bytes() == 6 * block);
  HostTier reserved(pool, 3 * block);
  reserved.reserve(7 * block);
  CHECK(reserved.reserved_bytes() == 9 * block);
}

TEST_CASE("host tier's copy warm-up leaves the pool as it was and stores no fact") {
  const std::uint64_t block = FactPool::block_bytes(test::tiny_model(), 4);
  const std::unique_ptr<DeviceOps> ops = make_cpu_ops();
  FactPool pool = random_pool(4);
  const at::Tensor before = pool.storage().clone();
  HostTier host(pool, 3 * block);
  host.warm_copies(pool, *ops);
  CHECK(at::equal(pool.storage(), before));
  CHECK(host.facts() == 0);
  CHECK(host.reserved_bytes() == 3 * block);  // one chunk, then reused
  host.warm_copies(pool, *ops);
  CHECK(host.reserved_bytes() == 3 * block);
  CHECK(at::equal(pool.storage(), before));
}

TEST_CASE("KV cache rows are handed out first-fit and merged when freed") {
  SlotAllocator rows(100);
  const auto a = rows.allocate(30), b = rows.allocate(30), c = rows.allocate(30);
  CHECK(a == 0);
  CHECK(b == 30);
  CHECK(c == 60);
  CHECK(rows.allocate(11) == -1);
  rows.free(b, 30);
  CHECK(rows.largest_free() == 30);
  CHECK(rows.allocate(20) == 30);
  rows.free(a, 30);
  rows.free(30, 20);
  CHECK(rows.largest_free() == 60);  // 0..60 merged
  rows.free(c, 30);
  CHECK(rows.free_rows() == 100);
  CHECK(rows.allocate(100) == 0);
}

TEST_CASE("fact KV formats: the tensor round trip equals the reference bit for bit") {
  at::manual_seed(3);
  // Magnitudes over many binades, zeros and a zero vector: [vectors, head_dim].
  at::Tensor x = at::randn({96, 64}) * at::exp(at::randn({96, 1}) * 4);
  x.index_put_({at::indexing::Slice(0, 96, 7), 3}, 0.0f);
  x[5].zero_();
  for (KvFormat f : {KvFormat::kFp8, KvFormat::kInt8, KvFormat::kBf16}) {
    at::Tensor t = x.clone();
    kv_quant_round_trip(t, f);
    std::vector<float> ref(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
    kv_quant_round_trip_reference(ref.data(), 96, 64, f);
    const float* got = t.data_ptr<float>();
    std::size_t differ = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) differ += got[i] != ref[i];
    INFO("format " << kv_format_name(f));
    CHECK(differ == 0);
    CHECK(!at::equal(t, x));  // the format rounds something
  }
}

TEST_CASE("fact pool round trip rounds only the named entries' blocks") {
  FactPool pool = random_pool(8);
  const FactPool::Entry& a = pool.allocate(1, 20, 0);
  const FactPool::Entry& b = pool.allocate(2, 20, 0);
  const at::Tensor before = pool.storage().clone();
  pool.round_trip({&a}, KvFormat::kFp8);
  for (std::int32_t blk : a.blocks) CHECK(!at::equal(pool.storage()[blk], before[blk]));
  for (std::int32_t blk : b.blocks) CHECK(at::equal(pool.storage()[blk], before[blk]));
  // Stored once in a format, a value stays what it is up to its scale's last bit.
  const at::Tensor once = pool.storage().clone();
  pool.round_trip({&a}, KvFormat::kFp8);
  CHECK(at::allclose(pool.storage(), once, 1e-6, 0));
}
