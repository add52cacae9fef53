/**
 * @file cpu_executor.hpp
 * The CPU backend: one OpenMP parallel region runs many steps of the system graph. Each
 * node is a loop over all rows of all experiments with static, contiguous partitioning;
 * an OpenMP barrier separates levels and engine phases. Results do not depend on the
 * number of threads (systems write only their own row; creation order is sorted at commit).
 */
#pragma once

#include <omp.h>

#include <chrono>
#include <cstdint>

#include "ecs/graph.hpp"

namespace mv {

/// OpenMP execution policy; only valid inside the executor's parallel region.
class CpuPolicy {
 public:
  CpuPolicy() : rank_(omp_get_thread_num()), count_(omp_get_num_threads()) {}
  int64_t rank() const { return rank_; }
  int64_t count() const { return count_; }
  void barrier() const {
#pragma omp barrier
  }

 private:
  int64_t rank_;
  int64_t count_;
};

/// What one call of a backend's `run` did.
struct RunReport {
  int64_t steps = 0;        ///< steps executed by this call
  bool finished = false;    ///< every experiment done, or an error raised
  uint32_t status = 0;      ///< union of world and table status bits (0 = fine)
  double wall_seconds = 0;  ///< host wall time of the call
};

/// Number of hardware threads OpenMP would use by default.
int defaultCpuThreads();

/// Runs a world's graph on CPU threads.
class CpuExecutor {
 public:
  /// `threads` = 0 means OpenMP's default (all cores).
  explicit CpuExecutor(int threads = 0) : threads_(threads > 0 ? threads : defaultCpuThreads()) {}

  int threads() const { return threads_; }

  /// Runs up to `max_steps` steps of graph G on `world` and reports what happened.
  template <class G, class WV>
  RunReport run(WV& world, int64_t max_steps) const {
    const auto start = std::chrono::steady_clock::now();
    prepareRun(world);
    int64_t steps = 0;
#pragma omp parallel num_threads(threads_)
    {
      const CpuPolicy policy;
      const int64_t k = runSteps<G>(policy, world, max_steps);
      if (policy.rank() == 0) steps = k;
    }
    RunReport r;
    r.steps = steps;
    r.finished = steps > 0 && world.stop[(world.steps_run - 1) & 1] != 0u;
    r.status = world.allStatus();
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  /// Runs until every experiment is done (or an error is raised), `chunk` steps per region.
  template <class G, class WV>
  RunReport runToEnd(WV& world, int64_t chunk = 1 << 20) const {
    RunReport total;
    for (;;) {
      const RunReport r = run<G>(world, chunk);
      total.steps += r.steps;
      total.wall_seconds += r.wall_seconds;
      total.status = r.status;
      if (r.finished || r.steps == 0) {
        total.finished = r.finished;
        return total;
      }
    }
  }

 private:
  int threads_;
};

}  // namespace mv
