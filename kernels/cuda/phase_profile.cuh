/**
 * @file phase_profile.cuh
 * Where a megakernel's time goes on a real GPU, per graph phase: with `MV_CUDA_PROFILE=FILE`
 * set, thread 0 of the grid reads the GPU's global timer after every named grid sync and
 * files the time since the previous sync (the round: the slowest thread's work plus the
 * sync) under the phase that sync ends. At exit the table (rounds, total ms, µs per round,
 * share) is written to FILE. Off (the default) it costs one load of a flag per sync on one
 * thread. The emulated device has its own profile (MV_EMU_PROFILE), so this one is compiled
 * for real devices only.
 *
 * The device table is a `static __device__` variable: each translation unit that launches
 * a megakernel has its own, read by the static helpers below in that same unit; the host
 * totals are one process-wide table.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"

namespace mv::cuda_profile {

inline constexpr int kSlots = 64;
inline constexpr int kNameChars = 24;

/// One phase's totals on the device.
struct Slot {
  const char* key;  ///< the node's name literal (device address): the slot's identity with `phase`
  int phase;
  char name[kNameChars];
  unsigned long long ns;
  unsigned long long rounds;
};

/// Everything thread 0 keeps between syncs.
struct DeviceTable {
  int on;
  int used;
  unsigned long long last_ns;
  Slot slots[kSlots];
};

#ifndef MV_EMULATED_DEVICE
static __device__ DeviceTable g_table;

__device__ inline unsigned long long globalNanoseconds() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Thread 0 at the start of a launch: the first round is timed from here.
__device__ inline void startLaunch() {
  if (g_table.on != 0) g_table.last_ns = globalNanoseconds();
}

/// Thread 0 just after the grid sync that ends phase `phase` of node `node`.
__device__ inline void endRound(const char* node, int phase) {
  if (g_table.on == 0) return;
  const unsigned long long now = globalNanoseconds();
  int s = 0;
  while (s < g_table.used && (g_table.slots[s].key != node || g_table.slots[s].phase != phase)) ++s;
  if (s == g_table.used) {
    if (s == kSlots) return;
    Slot& slot = g_table.slots[s];
    slot.key = node;
    slot.phase = phase;
    int c = 0;
    for (; c + 1 < kNameChars && node[c] != '\0'; ++c) slot.name[c] = node[c];
    slot.name[c] = '\0';
    ++g_table.used;
  }
  g_table.slots[s].ns += now - g_table.last_ns;
  ++g_table.slots[s].rounds;
  g_table.last_ns = now;
}
#endif

/// The file MV_CUDA_PROFILE names, or empty when profiling is off.
inline const std::string& outputPath() {
  static const std::string path = [] {
    const char* p = std::getenv("MV_CUDA_PROFILE");
    return std::string(p != nullptr ? p : "");
  }();
  return path;
}

/// The process-wide totals, written to outputPath() at exit.
class HostTotals {
 public:
  /// Never destroyed, so the exit handler that writes it finds it whole.
  static HostTotals& instance() {
    static HostTotals* const totals = new HostTotals;
    return *totals;
  }

  void add(const DeviceTable& t, int64_t steps, double kernel_seconds) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (launches_ == 0) std::atexit([] { instance().write(); });
    for (int s = 0; s < t.used && s < kSlots; ++s) {
      Entry& e = entries_[{std::string(t.slots[s].name), t.slots[s].phase}];
      e.ns += t.slots[s].ns;
      e.rounds += t.slots[s].rounds;
    }
    steps_ += steps;
    kernel_seconds_ += kernel_seconds;
    ++launches_;
  }

 private:
  struct Entry {
    unsigned long long ns = 0;
    unsigned long long rounds = 0;
  };

  HostTotals() = default;

  void write() const {
    std::FILE* f = std::fopen(outputPath().c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "multiverse: MV_CUDA_PROFILE: cannot write '%s'\n", outputPath().c_str());
      return;
    }
    unsigned long long total = 0;
    for (const auto& [key, e] : entries_) total += e.ns;
    std::fprintf(f, "# CUDA megakernel phase profile: %lld launches, %lld steps, %.6f s in kernels\n",
                 static_cast<long long>(launches_), static_cast<long long>(steps_), kernel_seconds_);
    std::fprintf(f, "# round = from the previous grid sync to the end of this phase's sync, on thread 0\n");
    std::fprintf(f, "%-24s %5s %12s %12s %12s %7s\n", "node", "phase", "rounds", "total ms", "us/round", "share");
    for (const auto& [key, e] : entries_) {
      std::fprintf(f, "%-24s %5d %12llu %12.3f %12.3f %6.1f%%\n", key.first.c_str(), key.second, e.rounds,
                   static_cast<double>(e.ns) * 1e-6,
                   e.rounds > 0 ? static_cast<double>(e.ns) * 1e-3 / static_cast<double>(e.rounds) : 0.0,
                   total > 0 ? 100.0 * static_cast<double>(e.ns) / static_cast<double>(total) : 0.0);
    }
    std::fclose(f);
  }

  std::mutex mutex_;
  std::map<std::pair<std::string, int>, Entry> entries_;
  int64_t steps_ = 0;
  double kernel_seconds_ = 0;
  int64_t launches_ = 0;
};

#ifndef MV_EMULATED_DEVICE
/// Before a launch: a clean device table, switched on when profiling.
[[maybe_unused]] static void armDevice() {
  DeviceTable t{};
  t.on = 1;
  MV_CUDA_CHECK(cudaMemcpyToSymbol(g_table, &t, sizeof t));
}

/// After a launch: its table into the process totals.
[[maybe_unused]] static void collectDevice(int64_t steps, double kernel_seconds) {
  DeviceTable t{};
  MV_CUDA_CHECK(cudaMemcpyFromSymbol(&t, g_table, sizeof t));
  HostTotals::instance().add(t, steps, kernel_seconds);
}
#endif

}  // namespace mv::cuda_profile
