/**
 * @file step_barrier.hpp
 * The CPU executor's barrier: a short spin, then a sleep on a futex (std::atomic::wait).
 *
 * Why not `#pragma omp barrier`: libgomp spins up to GOMP_SPINCOUNT (300,000 pauses, about
 * milliseconds) before it sleeps. On a machine with more runnable threads than cores, the
 * thread a barrier waits for is often descheduled, and its partner spins out whole time
 * slices: on the 2-core machine loaded with 10 busy processes, `topology_search` with one
 * 2-thread worker took 280 s (0.4 s idle). A pure futex wait (OMP_WAIT_POLICY=passive) pays
 * a wake-up at every barrier: 4-5 s idle. The spin here is bounded by kStepBarrierSpins,
 * chosen by measurement (bench/busy_machine.sh, bench/README.md "Busy machines"): idle as
 * fast as libgomp's spin; loaded, no spinning out of time slices. Yielding inside the spin
 * was tried and is far worse under load (the yield hands whole slices to the other load).
 */
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mv {

/// Checks of the barrier's flag before a waiting thread sleeps (each with a pause, about
/// 50-150 cycles on x86-64).
inline constexpr int kStepBarrierSpins = 2000;

/// A reusable barrier for a team of threads whose size is set once before first use.
class StepBarrier {
 public:
  /// Sets the team size; call before any thread arrives.
  void setCount(int count) { count_ = static_cast<uint32_t>(count); }

  /// Returns once every thread of the team arrived. Writes before it happen before reads
  /// after it, on every thread.
  void arriveAndWait() {
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
      arrived_.store(0, std::memory_order_relaxed);
      // seq_cst, not release: notify_all() first reads the waiter count of libstdc++'s
      // waiter pool and skips the futex wake when it is zero. A release store may still sit
      // in this core's store buffer when that load runs (store-load reordering), while a
      // waiter registers and finds the old generation: it sleeps and nobody wakes it (a
      // hung run, seen in the calibration fit). A seq_cst store orders the two.
      generation_.store(gen + 1, std::memory_order_seq_cst);
      generation_.notify_all();
      return;
    }
    for (int i = 0; i < kStepBarrierSpins; ++i) {
      if (generation_.load(std::memory_order_acquire) != gen) return;
      pause();
    }
    while (generation_.load(std::memory_order_acquire) == gen) generation_.wait(gen, std::memory_order_acquire);
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  uint32_t count_ = 1;
  alignas(64) std::atomic<uint32_t> arrived_{0};     // written by every arrival
  alignas(64) std::atomic<uint32_t> generation_{0};  // read by the spinners
};

}  // namespace mv
