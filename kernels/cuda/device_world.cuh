/**
 * @file device_world.cuh
 * A world's mirror in device memory. Every buffer the host `World` owns gets one
 * `cudaMalloc` twin; the device copy of the view is the host view with each pointer field
 * patched to its twin. Download maps pointers back by value, so pointer swaps done by the
 * device (compaction double buffers) come back right. Plain device memory, no managed
 * memory, no device malloc.
 */
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/cuda/cuda_check.hpp"

namespace mv {

template <class WorldT>
class DeviceWorld {
 public:
  using View = typename WorldT::View;

  /// Allocates and uploads; on a failure (device memory exhausted) frees what it took and
  /// rethrows, naming the bytes the world needs.
  explicit DeviceWorld(WorldT& world) : world_(world) {
    try {
      MV_CUDA_CHECK(cudaMalloc(&device_view_, sizeof(View)));
      upload();
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

  /// Copies every buffer and the view to the device (allocating twins on first sight).
  void upload() {
    nvtx3::scoped_range range{"mv::DeviceWorld::upload"};
    View patched = world_.view();
    for (std::size_t off : world_.pointerFields()) {
      void*& field = fieldAt(patched, off);
      void* host = field;
      auto it = to_device_.find(host);
      if (it == to_device_.end()) {
        void* dev = nullptr;
        MV_CUDA_CHECK(cudaMalloc(&dev, world_.bufferBytes(host)));
        it = to_device_.emplace(host, dev).first;
        to_host_[dev] = host;
      }
      MV_CUDA_CHECK(cudaMemcpy(it->second, host, world_.bufferBytes(host), cudaMemcpyHostToDevice));
      field = it->second;
    }
    MV_CUDA_CHECK(cudaMemcpy(device_view_, &patched, sizeof(View), cudaMemcpyHostToDevice));
#ifdef MV_EMULATED_DEVICE
    // The device owns the world now: a kernel that follows an unpatched host pointer reads
    // poison. download() overwrites every host buffer.
    for (const auto& [host, dev] : to_device_) emu::poisonHost(host, world_.bufferBytes(host));
#endif
  }

  /// Copies the view and every buffer back to the host world.
  void download() {
    nvtx3::scoped_range range{"mv::DeviceWorld::download"};
    View back;
    MV_CUDA_CHECK(cudaMemcpy(&back, device_view_, sizeof(View), cudaMemcpyDeviceToHost));
    for (std::size_t off : world_.pointerFields()) {
      void*& field = fieldAt(back, off);
      void* host = to_host_.at(field);
      MV_CUDA_CHECK(cudaMemcpy(host, field, world_.bufferBytes(host), cudaMemcpyDeviceToHost));
      field = host;
    }
    world_.view() = back;
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
  void release() {
    for (auto& [host, dev] : to_device_) cudaFree(dev);
    to_device_.clear();
    to_host_.clear();
    cudaFree(device_view_);
    device_view_ = nullptr;
  }

  static void*& fieldAt(View& v, std::size_t offset) {
    return *reinterpret_cast<void**>(reinterpret_cast<std::byte*>(&v) + offset);
  }

  WorldT& world_;
  View* device_view_ = nullptr;
  std::unordered_map<void*, void*> to_device_;
  std::unordered_map<void*, void*> to_host_;
};

}  // namespace mv
