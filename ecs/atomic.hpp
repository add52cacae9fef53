/**
 * @file atomic.hpp
 * Device-wide atomics on plain memory, the same calls on host and device. With the CUDA
 * toolkit's libcu++ they go through `cuda::atomic_ref`; without it, through
 * `std::atomic_ref` (host only).
 */
#pragma once

#include "ecs/macros.hpp"

#if defined(MV_HAS_CCCL) || defined(__CUDACC__)
#include <cuda/atomic>
#define MV_ATOMIC_REF(T, x) ::cuda::atomic_ref<T, ::cuda::thread_scope_device>(x)
#define MV_RELAXED ::cuda::std::memory_order_relaxed
#define MV_ACQ_REL ::cuda::std::memory_order_acq_rel
#define MV_ACQUIRE ::cuda::std::memory_order_acquire
#else
#include <atomic>
#define MV_ATOMIC_REF(T, x) ::std::atomic_ref<T>(x)
#define MV_RELAXED ::std::memory_order_relaxed
#define MV_ACQ_REL ::std::memory_order_acq_rel
#define MV_ACQUIRE ::std::memory_order_acquire
#endif

namespace mv {

/// Adds `v` to `*p` and returns the previous value.
template <class T>
MV_HD MV_INLINE T atomicFetchAdd(T* p, T v) {
  return MV_ATOMIC_REF(T, *p).fetch_add(v, MV_RELAXED);
}

/// Adds `v` to `*p` and returns the previous value, acquire-release: the thread that sees
/// the last increment also sees every write made before the earlier increments.
template <class T>
MV_HD MV_INLINE T atomicFetchAddAcqRel(T* p, T v) {
  return MV_ATOMIC_REF(T, *p).fetch_add(v, MV_ACQ_REL);
}
/// Stores `v` into `*p` and returns the previous value.
template <class T>
MV_HD MV_INLINE T atomicExchange(T* p, T v) {
  return MV_ATOMIC_REF(T, *p).exchange(v, MV_RELAXED);
}

/// Lowers `*p` to `v` if `v` is smaller. Order-independent, hence deterministic.
template <class T>
MV_HD MV_INLINE void atomicFetchMin(T* p, T v) {
  auto ref = MV_ATOMIC_REF(T, *p);
  T cur = ref.load(MV_RELAXED);
  while (v < cur && !ref.compare_exchange_weak(cur, v, MV_RELAXED)) {
  }
}

/// Lowers `*p` to `v` if `v` is smaller, acquire-release, and writes even when it is not:
/// a later acquire exchange of `*p` then sees every write this thread made before the call,
/// whichever value it reads (a lowering that skipped its write would publish nothing).
template <class T>
MV_HD MV_INLINE void atomicLowerAcqRel(T* p, T v) {
  auto ref = MV_ATOMIC_REF(T, *p);
  T cur = ref.load(MV_RELAXED);
  while (!ref.compare_exchange_weak(cur, v < cur ? v : cur, MV_ACQ_REL, MV_RELAXED)) {
  }
}

/// Stores `v` into `*p` and returns the previous value, acquire-release (pairs with
/// atomicLowerAcqRel).
template <class T>
MV_HD MV_INLINE T atomicExchangeAcqRel(T* p, T v) {
  return MV_ATOMIC_REF(T, *p).exchange(v, MV_ACQ_REL);
}

/// Raises `*p` to `v` if `v` is larger.
template <class T>
MV_HD MV_INLINE void atomicFetchMax(T* p, T v) {
  auto ref = MV_ATOMIC_REF(T, *p);
  T cur = ref.load(MV_RELAXED);
  while (v > cur && !ref.compare_exchange_weak(cur, v, MV_RELAXED)) {
  }
}

/// Replaces `*p` by `desired` if it still holds `expected` (then true); else loads the
/// current value into `expected` (then false). Acquire-release on success, acquire on
/// failure: for lock-free structures whose nodes are read after the exchange.
template <class T>
MV_HD MV_INLINE bool atomicCompareExchange(T* p, T& expected, T desired) {
  return MV_ATOMIC_REF(T, *p).compare_exchange_weak(expected, desired, MV_ACQ_REL, MV_ACQUIRE);
}

/// Loads `*p` with acquire ordering (pairs with a release or acquire-release store).
template <class T>
MV_HD MV_INLINE T atomicLoadAcquire(T* p) {
  return MV_ATOMIC_REF(T, *p).load(MV_ACQUIRE);
}

/// Sets the bits of `v` in `*p`.
template <class T>
MV_HD MV_INLINE void atomicFetchOr(T* p, T v) {
  MV_ATOMIC_REF(T, *p).fetch_or(v, MV_RELAXED);
}

template <class T>
MV_HD MV_INLINE T atomicLoad(T* p) {
  return MV_ATOMIC_REF(T, *p).load(MV_RELAXED);
}

template <class T>
MV_HD MV_INLINE void atomicStore(T* p, T v) {
  MV_ATOMIC_REF(T, *p).store(v, MV_RELAXED);
}

}  // namespace mv
