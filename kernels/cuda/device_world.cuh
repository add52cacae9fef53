/**
 * @file device_world.cuh
 * A world's mirror in device memory, kept for a whole run. Every buffer the host `World`
 * owns gets a device twin, uploaded once; the device copy of the view is the host view with
 * each pointer field patched to its twin. The twins of the first upload are carved out of
 * one `cudaMalloc` arena (256-byte aligned, as cudaMalloc aligns): a world has about a
 * thousand buffers, most of a few bytes, and one allocation each would cost a page or more
 * apiece on top of the bytes the batcher counts. A buffer made or resized later gets an
 * allocation of its own. Copies back map pointers by value, so
 * pointer swaps done by the device (compaction double buffers) come back right. Each host
 * buffer is either current (equal to its twin) or stale (the device ran since); only
 * stale buffers are copied back, and only when asked. Plain device memory, no managed
 * memory, no device malloc; small copies go through a pinned staging buffer.
 */
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/cpu/step_session.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace mv {

template <class WorldT>
class DeviceWorld {
 public:
  using View = typename WorldT::View;

  /// Allocates and uploads the whole world; on a failure (device memory exhausted) frees
  /// what it took and rethrows, naming the bytes the world needs.
  explicit DeviceWorld(WorldT& world) : world_(world) {
    try {
      MV_CUDA_CHECK(cudaMalloc(&device_view_, sizeof(View)));
      MV_CUDA_CHECK(cudaMallocHost(&staging_, kStagingBytes));
      for (std::size_t off : world_.pointerFields()) arena_bytes_ += aligned(world_.bufferBytes(fieldAt(world_.view(), off)));
      MV_CUDA_CHECK(cudaMalloc(&arena_, arena_bytes_));
      pushFields(0, sizeof(View));
      pushView();
      ++stats_.full_uploads;
    } catch (const DeviceOutOfMemory& e) {
      release();
      throw DeviceOutOfMemory(std::string(e.what()) + " while uploading a world of " +
                              std::to_string(world.totalBytes()) + " bytes");
    } catch (const DeviceFault& e) {
      release();
      throw DeviceFault(std::string(e.what()) + " while uploading a world of " + std::to_string(world.totalBytes()) +
                        " bytes");
    }
  }
  ~DeviceWorld() { release(); }
  DeviceWorld(const DeviceWorld&) = delete;
  DeviceWorld& operator=(const DeviceWorld&) = delete;

  /// The view in device memory, for kernels.
  View* deviceView() const { return device_view_; }
  const TransferStats& transfers() const { return stats_; }

  /// Copies the host view (its counters and pointers, patched to the twins) to the device.
  void pushView() {
    View patched = world_.view();
    for (std::size_t off : world_.pointerFields()) {
      void*& field = fieldAt(patched, off);
      field = twinAt(field).device;
    }
    copy(device_view_, &patched, sizeof(View), cudaMemcpyHostToDevice);
  }

  /// Copies the device's view back to the host view, pointers mapped to the host buffers.
  void pullView() {
    View back;
    copy(&back, device_view_, sizeof(View), cudaMemcpyDeviceToHost);
    for (std::size_t off : world_.pointerFields()) {
      void*& field = fieldAt(back, off);
      field = to_host_.at(field);
    }
    world_.view() = back;
  }

  /// Uploads the buffers whose pointer fields lie in bytes [lo, hi) of the host view
  /// (allocating twins on first sight, or again for a buffer whose size changed).
  void pushFields(std::size_t lo, std::size_t hi) {
    nvtx3::scoped_range range{"mv::DeviceWorld::push"};
    forBuffersIn(lo, hi, [&](void* host) {
      Twin& twin = twinOf(host);
      copy(twin.device, host, twin.bytes, cudaMemcpyHostToDevice);
      twin.host_current = true;
    });
  }

  /// The device is about to run: every host buffer becomes stale. On the emulated device
  /// they are poisoned, so host code that reads one without a pull reads garbage.
  void releaseHost() {
    for (auto& [host, twin] : twins_) {
#ifdef MV_EMULATED_DEVICE
      if (twin.host_current) emu::poisonHost(host, twin.bytes);
#endif
      twin.host_current = false;
    }
  }

  /// Downloads the stale buffers whose pointer fields lie in bytes [lo, hi) of the view.
  void pullFields(std::size_t lo, std::size_t hi) {
    nvtx3::scoped_range range{"mv::DeviceWorld::pull"};
    forBuffersIn(lo, hi, [&](void* host) {
      Twin& twin = twinAt(host);
      if (twin.host_current) return;
      copy(host, twin.device, twin.bytes, cudaMemcpyDeviceToHost);
      twin.host_current = true;
    });
  }

  /// Makes the whole host world current: its view, then every stale buffer.
  void pullAll() {
    pullView();
    pullFields(0, sizeof(View));
  }

  /// Reads one scalar member of the device view (e.g. the stop flags) without a full copy.
  template <class T>
  T readField(std::size_t offset) const {
    T value;
    MV_CUDA_CHECK(cudaMemcpy(&value, reinterpret_cast<const std::byte*>(device_view_) + offset, sizeof(T),
                             cudaMemcpyDeviceToHost));
    return value;
  }

 private:
  /// Copies of at most this many bytes go through pinned memory.
  static constexpr std::size_t kStagingBytes = std::size_t{1} << 20;

  /// Alignment of a twin inside the arena (cudaMalloc's own).
  static constexpr std::size_t kAlign = 256;

  struct Twin {
    void* device = nullptr;
    std::size_t bytes = 0;
    bool host_current = false;
    bool in_arena = false;  ///< carved out of the arena (freed with it), else its own allocation
  };

  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

  /// Calls f(host buffer) for every pointer field of the host view in bytes [lo, hi).
  template <class F>
  void forBuffersIn(std::size_t lo, std::size_t hi, F&& f) {
    for (std::size_t off : world_.pointerFields()) {
      if (off >= lo && off < hi) f(fieldAt(world_.view(), off));
    }
  }

  /// The twin of a host buffer already mirrored (a buffer the host made since must be pushed).
  Twin& twinAt(void* host) {
    const auto it = twins_.find(host);
    if (it == twins_.end()) throw std::logic_error("a host buffer of the world has no device twin: push what the host grew");
    return it->second;
  }

  /// The twin of a host buffer, allocated on first sight or again when its size changed.
  Twin& twinOf(void* host) {
    const std::size_t bytes = world_.bufferBytes(host);
    Twin& twin = twins_[host];
    if (twin.device != nullptr && twin.bytes == bytes) return twin;
    if (twin.device != nullptr) {
      to_host_.erase(twin.device);
      if (!twin.in_arena) MV_CUDA_CHECK(cudaFree(twin.device));
      twin.device = nullptr;
    }
    twin.in_arena = arena_used_ + aligned(bytes) <= arena_bytes_;
    if (twin.in_arena) {
      twin.device = static_cast<std::byte*>(arena_) + arena_used_;
      arena_used_ += aligned(bytes);
    } else {
      MV_CUDA_CHECK(cudaMalloc(&twin.device, bytes));
    }
    twin.bytes = bytes;
    to_host_[twin.device] = host;
    return twin;
  }

  /// One copy, through the pinned staging buffer when it is small enough.
  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (kind == cudaMemcpyHostToDevice) {
      stats_.bytes_up += static_cast<int64_t>(bytes);
    } else {
      stats_.bytes_down += static_cast<int64_t>(bytes);
    }
    if (bytes > kStagingBytes) {
      MV_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
    } else if (kind == cudaMemcpyHostToDevice) {
      std::memcpy(staging_, src, bytes);
      MV_CUDA_CHECK(cudaMemcpy(dst, staging_, bytes, kind));
    } else {
      MV_CUDA_CHECK(cudaMemcpy(staging_, src, bytes, kind));
      std::memcpy(dst, staging_, bytes);
    }
  }

  void release() {
    for (auto& [host, twin] : twins_) {
      if (!twin.in_arena) cudaFree(twin.device);
    }
    cudaFree(arena_);
    arena_ = nullptr;
    arena_bytes_ = 0;
    arena_used_ = 0;
    twins_.clear();
    to_host_.clear();
    cudaFree(device_view_);
    device_view_ = nullptr;
    cudaFreeHost(staging_);
    staging_ = nullptr;
  }

  static void*& fieldAt(View& v, std::size_t offset) {
    return *reinterpret_cast<void**>(reinterpret_cast<std::byte*>(&v) + offset);
  }

  WorldT& world_;
  View* device_view_ = nullptr;
  void* staging_ = nullptr;
  void* arena_ = nullptr;        ///< the first upload's twins, back to back
  std::size_t arena_bytes_ = 0;
  std::size_t arena_used_ = 0;
  std::unordered_map<void*, Twin> twins_;  ///< by host buffer
  std::unordered_map<void*, void*> to_host_;
  TransferStats stats_;
};

}  // namespace mv
