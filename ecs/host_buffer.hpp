/**
 * @file host_buffer.hpp
 * Host memory for table columns. A large buffer is aligned to 2 MiB and marked for
 * transparent huge pages (Linux `madvise(MADV_HUGEPAGE)`, honoured when the system's THP
 * mode is `always` or `madvise`): packet pools are read at random over gigabytes, and with
 * 4 KiB pages nearly every such read also misses the TLB and walks page tables in DRAM.
 */
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mv {

/// Frees a HostBuffer.
struct HostBufferFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<std::byte, HostBufferFree>;

/// Buffers from this size on get huge pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// `bytes` (at least 1) of uninitialised host memory, 64-byte aligned (a cache line), and
/// 2 MiB aligned with huge pages requested from kHugePageBytes on. Throws std::bad_alloc.
inline HostBuffer allocateHostBuffer(std::size_t bytes) {
  const bool huge = bytes >= kHugePageBytes;
  const std::size_t align = huge ? kHugePageBytes : 64;
  const std::size_t size = (bytes + align - 1) / align * align;  // aligned_alloc needs a multiple
  auto* p = static_cast<std::byte*>(std::aligned_alloc(align, size));
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) (void)madvise(p, size, MADV_HUGEPAGE);  // advice only: without THP nothing changes
#endif
  return HostBuffer(p);
}

}  // namespace mv
