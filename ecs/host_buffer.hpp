/**
 * @file host_buffer.hpp
 * Host memory for table columns, always zero-filled.
 *
 * A large buffer is mapped from the system (Linux `mmap`, anonymous, not reserved against
 * swap), so its pages are committed only when first written: a packet pool sized for its
 * worst case costs the memory of the records actually used (a pool hands out its records
 * in order, FreeStack). It is aligned to 2 MiB and marked for transparent huge pages
 * (`madvise(MADV_HUGEPAGE)`, honoured when the system's THP mode is `always` or
 * `madvise`): packet pools are read at random over gigabytes, and with 4 KiB pages nearly
 * every such read also misses the TLB and walks page tables in DRAM.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mv {

/// Frees a HostBuffer: unmaps a mapped one, frees an allocated one.
struct HostBufferFree {
  std::size_t mapped_bytes = 0;  ///< 0: from aligned_alloc
  void operator()(std::byte* p) const {
#if defined(__linux__)
    if (mapped_bytes != 0) {
      (void)munmap(p, mapped_bytes);
      return;
    }
#endif
    std::free(p);
  }
};
using HostBuffer = std::unique_ptr<std::byte, HostBufferFree>;

/// Buffers from this size on are mapped lazily and get huge pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

namespace detail {

#if defined(__linux__)
/// `bytes` (a multiple of kHugePageBytes) of zero pages at a 2 MiB boundary, committed as
/// they are written; null when the system refuses the mapping.
inline std::byte* mapZeroPages(std::size_t bytes) {
  const std::size_t span = bytes + kHugePageBytes;  // room to move the start to a boundary
  void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* base = static_cast<std::byte*>(m);
  const auto misalign = reinterpret_cast<std::uintptr_t>(base) % kHugePageBytes;
  const std::size_t head = misalign == 0 ? 0 : kHugePageBytes - misalign;
  if (head != 0) (void)munmap(base, head);
  const std::size_t tail = span - head - bytes;
  if (tail != 0) (void)munmap(base + head + bytes, tail);
#if defined(MADV_HUGEPAGE)
  (void)madvise(base + head, bytes, MADV_HUGEPAGE);  // advice only: without THP nothing changes
#endif
  return base + head;
}
#endif

}  // namespace detail

/// `bytes` (at least 1) of zero-filled host memory, 64-byte aligned (a cache line); from
/// kHugePageBytes on 2 MiB aligned, with huge pages requested, and committed page by page
/// as it is first written (on Linux). Throws std::bad_alloc.
inline HostBuffer allocateHostBuffer(std::size_t bytes) {
  const bool huge = bytes >= kHugePageBytes;
  const std::size_t align = huge ? kHugePageBytes : 64;
  const std::size_t size = (bytes + align - 1) / align * align;  // aligned_alloc needs a multiple
#if defined(__linux__)
  if (huge) {
    std::byte* p = detail::mapZeroPages(size);
    if (p == nullptr) throw std::bad_alloc();
    return HostBuffer(p, HostBufferFree{size});
  }
#endif
  auto* p = static_cast<std::byte*>(std::aligned_alloc(align, size));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return HostBuffer(p);
}

/// Bytes of the blocks `copyIntoZeroed` skips when they are zero (a 4 KiB page).
inline constexpr std::size_t kZeroCopyBlockBytes = 4096;

/**
 * Copies `bytes` from `src` into `dst`, which holds zeros only (fresh from
 * allocateHostBuffer), leaving out whole zero blocks of `src`: their destination already
 * holds them, and not writing them keeps those pages of a lazily mapped buffer uncommitted
 * (a packet pool copied when its table grows stays as small as its records in use).
 */
inline void copyIntoZeroed(void* dst, const void* src, std::size_t bytes) {
  auto* to = static_cast<std::byte*>(dst);
  const auto* from = static_cast<const std::byte*>(src);
  static constexpr std::byte kZeros[kZeroCopyBlockBytes] = {};
  std::size_t at = 0;
  for (; at + kZeroCopyBlockBytes <= bytes; at += kZeroCopyBlockBytes) {
    if (std::memcmp(from + at, kZeros, kZeroCopyBlockBytes) != 0) std::memcpy(to + at, from + at, kZeroCopyBlockBytes);
  }
  if (at < bytes) std::memcpy(to + at, from + at, bytes - at);
}

}  // namespace mv
