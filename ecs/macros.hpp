/**
 * @file macros.hpp
 * The one header that owns host/device annotations and the bug-assertion macro.
 * Without nvcc the annotations vanish, so every `.hpp` in the project compiles with g++.
 */
#pragma once

#include <cstdio>
#include <cstdlib>

#if defined(__CUDACC__)
#define MV_HD __host__ __device__
#define MV_DEVICE __device__
#define MV_HOST __host__
#define MV_INLINE __forceinline__
#else
#define MV_HD
#define MV_DEVICE
#define MV_HOST
#define MV_INLINE inline
#endif

/// Put before a host-device template that calls a policy or functor which may be
/// host-only (the CPU policy): nvcc then checks the call only where it is instantiated.
#if defined(__CUDACC__)
#define MV_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define MV_EXEC_CHECK_DISABLE
#endif

#if defined(__CUDA_ARCH__)
#define MV_ON_DEVICE 1
#else
#define MV_ON_DEVICE 0
#endif

namespace mv::detail {
/// Reports a violated internal invariant (a bug, never a user error) and aborts.
[[noreturn]] MV_HD inline void assertFail(const char* cond, const char* msg, const char* file,
                                          int line) {
  std::printf("multiverse: internal error at %s:%d: %s (%s)\n", file, line, msg, cond);
#if MV_ON_DEVICE
  __trap();
#else
  std::abort();
#endif
}
}  // namespace mv::detail

/// Checks an internal invariant; a failure is a bug in Multiverse, not in the user's input.
#define MV_ASSERT(cond, msg)                                         \
  do {                                                               \
    if (!(cond)) ::mv::detail::assertFail(#cond, msg, __FILE__, __LINE__); \
  } while (0)
