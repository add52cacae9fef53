/**
 * @file policy.hpp
 * Execution policies: the three primitives (my rank, thread count, barrier across all
 * threads) plus a parallel loop built on them. The engine, commit and step loop are written
 * once against this interface; `kernels/` supplies the OpenMP and CUDA policies.
 */
#pragma once

#include <concepts>
#include <cstdint>

#include "ecs/macros.hpp"

namespace mv {

/// What an execution policy provides to single-source engine code.
template <class P>
concept ExecutionPolicy = requires(P p) {
  { p.rank() } -> std::convertible_to<int64_t>;
  { p.count() } -> std::convertible_to<int64_t>;
  p.barrier();
};

/// First index of part `k` when [0, n) is cut into `parts` contiguous parts whose sizes
/// differ by at most one: part k is [partBegin(n, parts, k), partBegin(n, parts, k + 1)).
/// How the CPU splits a loop over its threads, a batch into experiment blocks, and a
/// batch over CPU workers.
MV_HD MV_INLINE constexpr int64_t partBegin(int64_t n, int64_t parts, int64_t k) {
  return n * k / parts;
}

/// Whether a policy's threads share loops grid-stride (`kGridStride`, the CUDA policies:
/// neighbouring threads take neighbouring rows, so their loads coalesce) rather than in
/// contiguous blocks (the CPU's, one cache-friendly range per thread).
template <class Policy>
inline constexpr bool kGridStrideOf = requires { requires Policy::kGridStride; };

/// Runs f(i) for i in [0, n) on the calling thread's share: a contiguous static block on
/// the CPU (deterministic partitioning), a grid-stride loop under a CUDA policy (on a GPU
/// or on the emulated device).
MV_EXEC_CHECK_DISABLE
template <class Policy, class F>
MV_HD MV_INLINE void parallelFor(const Policy& policy, int64_t n, F&& f) {
  if constexpr (kGridStrideOf<Policy>) {
    for (int64_t i = policy.rank(); i < n; i += policy.count()) f(i);
  } else {
    const int64_t t = policy.rank();
    const int64_t k = policy.count();
    const int64_t begin = partBegin(n, k, t);
    const int64_t end = partBegin(n, k, t + 1);
    for (int64_t i = begin; i < end; ++i) f(i);
  }
}

/// Threads of `policy` that parallelFor gives at least one of n indices: min(n, threads),
/// for the grid-stride loop (threads below n) and the contiguous one (n / threads rounded
/// down or up each, none empty when n >= threads; n non-empty parts otherwise).
MV_EXEC_CHECK_DISABLE
template <class Policy>
MV_HD MV_INLINE int64_t parallelForThreads(const Policy& policy, int64_t n) {
  return n < policy.count() ? n : policy.count();
}

/// Threads of a CUDA warp: they issue together, so lanes on different code paths wait
/// for each other.
inline constexpr int64_t kWarpLanes = 32;

/// Runs f(i) for i in [0, n) where each i is a unit of long, divergent work (a system's
/// row: a switch's event loop). On the CPU as parallelFor. Under a CUDA policy the rows are
/// shared over all the grid's warps before a warp takes a second one: with W warps, each
/// warp runs L = ceil(n / W) consecutive rows on its first L lanes (L = 32 once n fills the
/// grid, which is then parallelFor's grid-stride loop). Lanes of a warp on different paths
/// take turns, so 32 busy rows in one warp cost about the sum of their paths; spread out,
/// each warp pays for its own L rows only. Every row still runs exactly once. A policy
/// whose spreadRows() is false keeps the grid-stride loop.
MV_EXEC_CHECK_DISABLE
template <class Policy, class F>
MV_HD MV_INLINE void parallelForUnits(const Policy& policy, int64_t n, F&& f) {
  const int64_t count = policy.count();
  if constexpr (kGridStrideOf<Policy>) {
    bool spread = true;
    if constexpr (requires { policy.spreadRows(); }) spread = policy.spreadRows();
    if (spread && count % kWarpLanes == 0) {
      const int64_t warps = count / kWarpLanes;
      const int64_t per_warp = n >= count ? kWarpLanes : (n + warps - 1) / warps;
      const int64_t lane = policy.rank() % kWarpLanes;
      if (lane >= per_warp) return;
      const int64_t stride = warps * per_warp;
      for (int64_t i = policy.rank() / kWarpLanes * per_warp + lane; i < n; i += stride) f(i);
      return;
    }
  }
  parallelFor(policy, n, static_cast<F&&>(f));
}

/**
 * The threads that run one row of a team system together (a system that declares
 * `static constexpr bool kTeam = true` and a `runTeam(ctx, team, components...)`): a CUDA
 * warp under the CUDA policies (WarpTeam, kernels/cuda/cuda_policy.cuh), the calling thread
 * alone everywhere else (SoloTeam). A team's lanes run the same code on the same row; the
 * work they can share they split by lane, and they meet with sync(), which also orders every
 * lane's writes before it against every lane's reads after it. Every lane takes part in
 * every sync and every collective (broadcast, minimum, exclusiveSum).
 */
struct SoloTeam {
  static constexpr int kSize = 1;
  MV_HD int lane() const { return 0; }
  MV_HD bool leader() const { return true; }
  MV_HD void sync() const {}
  /// Lane 0's value.
  template <class T>
  MV_HD T broadcast(T v) const {
    return v;
  }
  /// The least value over the lanes.
  template <class T>
  MV_HD T minimum(T v) const {
    return v;
  }
  /// The sum of the values of the lanes below this one; `total`: over every lane.
  MV_HD uint32_t exclusiveSum(uint32_t v, uint32_t& total) const {
    total = v;
    return 0;
  }
};

/// Runs f(i, team) for i in [0, n) where each i is a row of a team system. Under a policy
/// with teams whose teamRows() is true (the CUDA policies), each warp of the grid takes rows
/// in turn and its 32 lanes run each together; otherwise the rows go to threads as
/// parallelForUnits gives them, each thread its own SoloTeam.
MV_EXEC_CHECK_DISABLE
template <class Policy, class F>
MV_HD MV_INLINE void parallelForTeams(const Policy& policy, int64_t n, F&& f) {
  if constexpr (requires { policy.team(); }) {
    if (policy.teamRows() && policy.count() % kWarpLanes == 0) {
      const auto team = policy.team();
      const int64_t warps = policy.count() / kWarpLanes;
      for (int64_t i = policy.rank() / kWarpLanes; i < n; i += warps) f(i, team);
      return;
    }
  }
  parallelForUnits(policy, n, [&](int64_t i) { f(i, SoloTeam{}); });
}

/// One thread that runs everything, with a barrier that does nothing. Used on the host for
/// set-up (committing rows created before a run) and in tests.
struct SerialPolicy {
  MV_HD int64_t rank() const { return 0; }
  MV_HD int64_t count() const { return 1; }
  MV_HD void barrier() const {}
};

}  // namespace mv
