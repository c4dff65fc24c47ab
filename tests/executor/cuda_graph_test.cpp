// Forward passes as CUDA graphs (CudaGraphPolicy, DeviceOps::run_forward): the inputs re-viewed
// on another buffer (CPU), and on a CUDA GPU replayed steps give bit-identical logits to the same
// steps run eagerly. Also the step clock (on a CUDA GPU: synchronize() waits for unmarked work).
#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/forward_batch.h"
#include "executor/gpu/gpu_executor.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("forward inputs re-viewed on another buffer read the same values there") {
  auto ops = make_cpu_ops();
  ForwardBatch b;
  b.add(0, 0, {5, 6, 7}, {}, 0);
  b.add(100, 40, {9}, {}, 1);
  const ForwardInputs in = b.finalize(*ops, 512);
  const at::Tensor copy = in.buffer.clone();
  const ForwardInputs moved = in.on(copy);
  REQUIRE(moved.buffer.data_ptr() == copy.data_ptr());
  const std::vector<std::pair<at::Tensor, at::Tensor>> pairs = {
      {in.token_ids, moved.token_ids},     {in.positions, moved.positions},
      {in.cache_slots, moved.cache_slots}, {in.sample_rows, moved.sample_rows},
      {in.attn.cu_q, moved.attn.cu_q},     {in.attn.k_start, moved.attn.k_start},
      {in.attn.k_used, moved.attn.k_used}};
  for (const auto& [a, m] : pairs) {
    REQUIRE(m.defined());
    CHECK(at::equal(a, m));
    // A view of the new buffer, at the same offset.
    CHECK(m.storage().data() == copy.storage().data());
    CHECK(m.storage_offset() - copy.storage_offset() == a.storage_offset());
  }
  CHECK_FALSE(moved.pool_slots.defined());
  CHECK_THROWS(in.on(at::zeros({copy.numel() + 1}, copy.options())));

  // The shape names what the launches depend on: another context length or segment count
  // changes it, other token ids do not.
  ForwardBatch other_ids, longer, more;
  other_ids.add(0, 0, {1, 2, 3}, {}, 0);
  other_ids.add(100, 40, {4}, {}, 1);
  longer.add(0, 0, {5, 6, 7}, {}, 0);
  longer.add(100, 41, {9}, {}, 1);
  more.add(0, 0, {5, 6, 7}, {}, 0);
  more.add(100, 40, {9}, {}, 1);
  more.add(200, 3, {9}, {}, 2);
  CHECK(other_ids.finalize(*ops, 512).shape() == in.shape());
  CHECK(longer.finalize(*ops, 512).shape() != in.shape());
  CHECK(more.finalize(*ops, 512).shape() != in.shape());
}

TEST_CASE("padding adds one-token segments that write their own rows and sample nothing") {
  auto ops = make_cpu_ops();
  ForwardBatch b;
  b.add(0, 0, {5, 6, 7}, {}, 0);
  b.add(100, 40, {9}, {}, 1);
  b.pad(3, 500);
  CHECK(b.tokens() == 7);
  const ForwardInputs in = b.finalize(*ops, 512);
  CHECK(in.samples == 2);
  CHECK(in.attn.segments == 5);
  const auto rows = in.cache_slots.to(at::kLong);
  const auto pos = in.positions.to(at::kLong);
  // Segments sorted by first cache row: the pads (500, 501, 502) come last, each at position 0.
  CHECK(rows[4].item<std::int64_t>() == 500);
  CHECK(rows[6].item<std::int64_t>() == 502);
  CHECK(pos[5].item<std::int64_t>() == 0);
  CHECK(in.sample_rows[0].item<std::int32_t>() == 2);
  CHECK(in.sample_rows[1].item<std::int32_t>() == 3);
}

TEST_CASE("the CPU ops run a forward as given, never as a graph") {
  auto ops = make_cpu_ops();
  CudaGraphPolicy p;
  p.enabled = true;
  ops->set_cuda_graphs(p);
  const at::Tensor buf = at::arange(4, at::TensorOptions().dtype(at::kInt));
  int calls = 0;
  for (int i = 0; i < 3; ++i) {
    const at::Tensor out = ops->run_forward("s", 4, buf, [&](const at::Tensor& b) {
      ++calls;
      CHECK(b.data_ptr() == buf.data_ptr());
      return b + 1;
    });
    CHECK(at::equal(out, buf + 1));
  }
  CHECK(calls == 3);
  CHECK(ops->graph_replays() == 0);
}

namespace {

/// Logits of a prefill of two requests and `decodes` decode steps, each step's on the CPU.
std::vector<at::Tensor> decode_run(const CudaGraphPolicy& graphs, std::uint64_t* replays) {
  GpuExecutorOptions o = gpu_bf16_options(5);
  o.cuda_graphs = graphs;
  GpuExecutor ex(o);
  std::vector<PromptSpec> prompts(2);
  prompts[0].request = 1;
  prompts[1].request = 2;
  prompts[1].query = 9;
  BatchPlan plan;
  for (const PromptSpec& p : prompts) add_prefill(plan, p, 0, p.computed_total());
  ex.execute(plan);
  std::vector<at::Tensor> logits = {ex.last_logits().clone()};
  *replays = 0;
  for (std::uint32_t step = 0; step < 8; ++step) {
    BatchPlan d;
    for (const PromptSpec& p : prompts) {
      d.decodes.push_back(DecodeItem{p.request, p.prompt_tokens() + step});
    }
    ex.execute(d);
    *replays += ex.last_stats().graph_replays;
    logits.push_back(ex.last_logits().clone());
  }
  return logits;
}

}  // namespace

TEST_CASE("CUDA graph replays of decode steps give the eager steps' logits bit for bit") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  CudaGraphPolicy graphs;
  graphs.enabled = true;
  CudaGraphPolicy eager = graphs;  // the same shapes (context rounded up), never captured
  eager.max_graphs = 0;
  std::uint64_t replays = 0, eager_replays = 0;
  const std::vector<at::Tensor> a = decode_run(graphs, &replays);
  const std::vector<at::Tensor> b = decode_run(eager, &eager_replays);
  // Decode steps 1 and 2 share a shape: the second is captured, steps 3-8 are replays.
  CHECK(replays == 6);
  CHECK(eager_replays == 0);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i);
    CHECK(a[i].isfinite().all().item<bool>());
    CHECK(at::equal(a[i], b[i]));
  }
}

TEST_CASE("the step clock's synchronize() waits for work issued after its last mark") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  auto ops = make_cuda_ops();
  StepClock& clock = ops->clock();
  clock.reset();
  (void)clock.mark();
  // Tens of milliseconds of products after the mark, then a copy of their sum to the host.
  // Each product keeps a matrix of ones (n ones summed, over n), so the sum is n * n exactly.
  const std::int64_t n = 4096;
  at::Tensor a = at::ones({n, n}, at::TensorOptions().dtype(at::kFloat).device(ops->device()));
  for (int i = 0; i < 24; ++i) a = at::mm(a, a).div_(double(n));
  const at::Tensor host = ops->to_host(a.sum());
  clock.synchronize();
  CHECK(host.item<float>() == float(n * n));
}
