#pragma once
// @brief The CUDA executor's asynchronous host-tier copies (DeviceOps::begin_copies and after):
// two copy lanes, one per PCIe direction, each a stream fed by a thread of its own, in batches
// with tickets. Only executor/gpu/cuda_ops.cpp includes it (libtorch with CUDA).

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "executor/gpu/device_ops.h"
#include "kernels/cuda_check.h"

namespace inferscale::cuda_detail {

/// torch's current stream on the current device: where the executor's work goes.
inline cudaStream_t current_stream() {
  return at::cuda::getCurrentCUDAStream().stream();
}

inline void copy_on(const DeviceOps::CopyRegion& r, cudaStream_t stream) {
  if (r.rows <= 1) {
    INFERSCALE_CUDA_CHECK(cudaMemcpyAsync(r.dst, r.src, r.row_bytes, cudaMemcpyDefault, stream));
  } else {
    INFERSCALE_CUDA_CHECK(cudaMemcpy2DAsync(r.dst, r.pitch, r.src, r.pitch, r.row_bytes, r.rows,
                                            cudaMemcpyDefault, stream));
  }
}

/// Asynchronous loads and offloads: two lanes, one per direction (so that both PCIe directions
/// run at once), each a copy stream and a thread that issues the batches of copies on it.
///
/// A stream holds only so many operations before the call that adds one blocks until the copy
/// engine catches up, so thousands of block copies issued from the executor's thread would hold
/// it at PCIe speed; issued from a lane's thread they do not. A lane also keeps at most
/// in_flight_bytes_ of copies queued on its engine (it waits for older ones first), so that the
/// compute stream's own small transfers (uploads of step metadata, sampled tokens) never queue
/// behind seconds of bulk copies, and so that loads and offloads advance side by side.
///
/// A batch follows the compute stream's work issued before it began (an event recorded then),
/// or, while a point is held (hold_point), the work issued before the hold. Each batch gets a
/// ticket (increasing over both lanes) and an event, recorded by its lane after the batch's
/// copies and recycled once they are done. A batch may wait for an earlier ticket of
/// the other lane (a load into blocks an offload frees); the executor's thread waits only where
/// the compute stream must wait for a ticket whose copies its lane has not issued yet.
class CopyEngine {
 public:
  /// `in_flight_bytes` (> 0): DeviceOps::copy_inflight_bytes().
  CopyEngine(at::Device device, std::size_t in_flight_bytes)
      : in_flight_bytes_(in_flight_bytes), device_index_(device.index()) {
    for (Lane& lane : lanes_) {
      lane.stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    }
    for (int i = 0; i < 2; ++i) lanes_[i].thread = std::thread([this, i] { run(lanes_[i]); });
  }
  ~CopyEngine() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    for (Lane& lane : lanes_) lane.queued_cv.notify_all();
    for (Lane& lane : lanes_) lane.thread.join();
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream->stream());
    for (auto& t : tickets_) cudaEventDestroy(t.second);
    for (auto& u : after_uses_) cudaEventDestroy(u.first);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  }

  void begin(int direction) {
    rethrow();
    batch_ = Batch{};
    batch_.lane = direction;
    if (held_ != nullptr) {
      std::lock_guard lock(mutex_);
      ++after_uses_[held_];
      batch_.after = held_;
      batch_.shared_after = true;
    } else {
      batch_.after = take();
      INFERSCALE_CUDA_CHECK(cudaEventRecord(batch_.after, current_stream()));
    }
    open_ = true;
  }
  /// Batches begun from now until release_point() follow the compute stream's work issued
  /// before this call: they share one event recorded now (recycled once the last of them has
  /// issued its wait and the point is released).
  void hold_point() {
    rethrow();
    release_point();
    cudaEvent_t e = take();
    INFERSCALE_CUDA_CHECK(cudaEventRecord(e, current_stream()));
    std::lock_guard lock(mutex_);
    after_uses_[e] = 1;  // the hold's own use
    held_ = e;
  }
  void release_point() {
    if (held_ == nullptr) return;
    std::lock_guard lock(mutex_);
    drop_use_locked(held_);
    held_ = nullptr;
  }
  bool open() const { return open_; }
  void add(const DeviceOps::CopyRegion& r) { batch_.items.push_back({r, 0}); }
  std::uint64_t end() {
    open_ = false;
    Lane& lane = lanes_[batch_.lane];
    std::uint64_t ticket;
    {
      std::lock_guard lock(mutex_);
      ticket = ++submitted_;
      batch_.ticket = ticket;
      pending_.insert(ticket);
      lane.queue.push_back(std::move(batch_));
      recycle_done_locked();
    }
    lane.queued_cv.notify_one();
    return ticket;
  }
  void wait(std::uint64_t ticket) {
    if (open_) {
      batch_.items.push_back({DeviceOps::CopyRegion{}, ticket});  // the lane orders it
      return;
    }
    std::unique_lock lock(mutex_);
    cudaEvent_t e = recorded_event(ticket, lock);
    // Under the lock, so that end() cannot recycle the event before the wait is issued.
    if (e != nullptr) INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(current_stream(), e, 0));
  }
  bool done(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    if (error_ != nullptr) std::rethrow_exception(error_);
    if (pending_.count(ticket) > 0) return false;
    const auto it = tickets_.find(ticket);
    return it == tickets_.end() || cudaEventQuery(it->second) == cudaSuccess;
  }
  /// Every batch submitted so far issued and finished.
  void drain() {
    {
      std::unique_lock lock(mutex_);
      recorded_cv_.wait(lock, [&] { return pending_.empty() || error_ != nullptr; });
    }
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream->stream());
  }

 private:
  const std::size_t in_flight_bytes_;  // how deep the queue on a copy engine may be
  /// A progress event per 16 MiB (at most a quarter of the in-flight limit).
  const std::size_t mark_bytes_ = std::min(std::size_t(16) << 20, in_flight_bytes_ / 4);

  struct Item {
    DeviceOps::CopyRegion copy;
    std::uint64_t wait = 0;  // a ticket to wait for instead of a copy
  };
  struct Batch {
    int lane = 0;
    cudaEvent_t after = nullptr;  // the compute stream's work that the copies follow
    bool shared_after = false;    // `after` is a held point's (counted in after_uses_)
    std::vector<Item> items;
    std::uint64_t ticket = 0;
  };
  struct Lane {
    std::optional<c10::cuda::CUDAStream> stream;
    std::deque<Batch> queue;             // under mutex_
    std::deque<std::uint64_t> recorded;  // under mutex_: its tickets in tickets_, oldest first
    std::condition_variable queued_cv;
    std::thread thread;
    // The lane's thread only: events marking its progress, with the bytes issued before each.
    std::deque<std::pair<cudaEvent_t, std::size_t>> marks;
    std::size_t issued = 0, since_mark = 0;
  };

  // Under mutex_.
  cudaEvent_t take_locked() {
    if (!spare_.empty()) {
      cudaEvent_t e = spare_.back();
      spare_.pop_back();
      return e;
    }
    cudaEvent_t e;
    INFERSCALE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  cudaEvent_t take() {
    std::lock_guard lock(mutex_);
    return take_locked();
  }
  /// The event of a ticket once its lane has recorded it (nullptr: recycled, so done).
  cudaEvent_t recorded_event(std::uint64_t ticket, std::unique_lock<std::mutex>& lock) {
    recorded_cv_.wait(lock, [&] { return pending_.count(ticket) == 0 || error_ != nullptr; });
    if (error_ != nullptr) std::rethrow_exception(error_);
    const auto it = tickets_.find(ticket);
    return it == tickets_.end() ? nullptr : it->second;
  }
  /// Recycles the events of recorded tickets that are done. A lane's stream runs its batches in
  /// order, so a lane's tickets are done up to some point: its oldest one is asked first (not
  /// done: nothing to recycle, one query), then its newest (done: all of them), else a binary
  /// search between: a few queries per lane, under the lock the lanes' threads also take,
  /// however many tickets are in flight (after a step of hundreds of batches, the next batch end
  /// asked each one).
  void recycle_done_locked() {
    auto is_done = [&](std::uint64_t ticket) {
      const auto it = tickets_.find(ticket);
      return it == tickets_.end() || cudaEventQuery(it->second) == cudaSuccess;
    };
    for (Lane& lane : lanes_) {
      std::deque<std::uint64_t>& r = lane.recorded;
      if (r.empty() || !is_done(r.front())) continue;
      // r[lo] is done; r[hi] is not (hi == size: every one is).
      std::size_t lo = 0, hi = r.size();
      if (!is_done(r.back())) {
        hi = r.size() - 1;
        while (hi - lo > 1) {
          const std::size_t mid = lo + (hi - lo) / 2;
          (is_done(r[mid]) ? lo : hi) = mid;
        }
      }
      for (std::size_t i = 0; i < hi; ++i) {
        const auto it = tickets_.find(r.front());
        if (it != tickets_.end()) {
          spare_.push_back(it->second);
          tickets_.erase(it);
        }
        r.pop_front();
      }
    }
  }
  /// One use of a held point's event less; the last one recycles it.
  void drop_use_locked(cudaEvent_t e) {
    const auto it = after_uses_.find(e);
    if (it == after_uses_.end() || --it->second > 0) return;
    after_uses_.erase(it);
    spare_.push_back(e);
  }
  void rethrow() {
    std::lock_guard lock(mutex_);
    if (error_ != nullptr) std::rethrow_exception(error_);
  }

  void run(Lane& lane) {
    cudaSetDevice(device_index_);
    const cudaStream_t stream = lane.stream->stream();
    for (;;) {
      Batch batch;
      {
        std::unique_lock lock(mutex_);
        lane.queued_cv.wait(lock, [&] { return stopping_ || !lane.queue.empty(); });
        if (lane.queue.empty()) return;
        batch = std::move(lane.queue.front());
        lane.queue.pop_front();
      }
      try {
        INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(stream, batch.after, 0));
        for (const Item& item : batch.items) {
          if (item.wait == 0) {
            cudaEvent_t mark = nullptr;
            throttle_and_mark(lane, item.copy.row_bytes * std::max<std::size_t>(1, item.copy.rows),
                              &mark);
            copy_on(item.copy, stream);
            if (mark != nullptr) INFERSCALE_CUDA_CHECK(cudaEventRecord(mark, stream));
            continue;
          }
          // An earlier ticket, of this lane (recorded) or of the other (wait for its record).
          std::unique_lock lock(mutex_);
          cudaEvent_t e = recorded_event(item.wait, lock);
          if (e != nullptr) INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(stream, e, 0));
        }
        cudaEvent_t e;
        {
          std::lock_guard lock(mutex_);
          // Its wait is issued; a later record does not change it.
          if (batch.shared_after) {
            drop_use_locked(batch.after);
          } else {
            spare_.push_back(batch.after);
          }
          e = take_locked();
        }
        INFERSCALE_CUDA_CHECK(cudaEventRecord(e, stream));
        std::lock_guard lock(mutex_);
        tickets_.emplace(batch.ticket, e);
        lane.recorded.push_back(batch.ticket);
        pending_.erase(batch.ticket);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (error_ == nullptr) error_ = std::current_exception();
        pending_.erase(batch.ticket);
      }
      recorded_cv_.notify_all();
    }
  }

  /// Before issuing `bytes` more on the lane: wait until its engine holds at most
  /// in_flight_bytes_; sets *mark to an event to record after the copy every mark_bytes_.
  void throttle_and_mark(Lane& lane, std::size_t bytes, cudaEvent_t* mark) {
    while (!lane.marks.empty() &&
           lane.issued + bytes - lane.marks.front().second > in_flight_bytes_) {
      INFERSCALE_CUDA_CHECK(cudaEventSynchronize(lane.marks.front().first));
      cudaEventDestroy(lane.marks.front().first);
      lane.marks.pop_front();
    }
    lane.issued += bytes;
    lane.since_mark += bytes;
    if (lane.since_mark >= mark_bytes_) {
      lane.since_mark = 0;
      // Blocking sync: the lane's thread sleeps in cudaEventSynchronize instead of spinning in
      // the driver beside the executor thread's launches.
      INFERSCALE_CUDA_CHECK(
          cudaEventCreateWithFlags(mark, cudaEventDisableTiming | cudaEventBlockingSync));
      lane.marks.emplace_back(*mark, lane.issued);
    }
  }

  int device_index_;
  Lane lanes_[2];
  // The executor's thread only.
  Batch batch_;
  bool open_ = false;
  cudaEvent_t held_ = nullptr;  // hold_point()'s event while held
  // Shared with the lanes' threads, under mutex_.
  std::mutex mutex_;
  std::condition_variable recorded_cv_;
  std::map<std::uint64_t, cudaEvent_t> tickets_;  // recorded, not yet known to be done
  std::set<std::uint64_t> pending_;               // submitted, not yet recorded
  std::vector<cudaEvent_t> spare_;
  std::map<cudaEvent_t, int> after_uses_;  // held points' events: the hold and batches using them
  std::uint64_t submitted_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace inferscale::cuda_detail
