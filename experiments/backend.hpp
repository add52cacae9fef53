/**
 * @file backend.hpp
 * Which backend and which devices a sweep runs on (`--backend`, `--devices`).
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "network/network_sim.hpp"
#include "systems/training_spec.hpp"

namespace mv {

/// Most experiments in one batch on the CPU backend when `--batch-size` is auto. On 2 cores a
/// packet-level training experiment of 128 GPUs already keeps both busy: per experiment, a
/// batch of 8 takes 0.79x the time of one alone, 16 take 0.96x and 64 took 1.24-1.38x
/// (bench/README.md "Batch size on the CPU"), so larger sweeps run as several batches.
inline constexpr int64_t kCpuAutoBatchSize = 8;

/// The resolved choice: CPU workers, or one worker per CUDA device, with CPU workers beside
/// the devices for flow-level experiments when `--backend auto` placed them there
/// (placeFlowLevelOnCpu).
struct BackendPlan {
  bool cuda = false;
  /// CUDA device indices, one worker each (workers 0 to devices.size() - 1); empty for the CPU.
  std::vector<int> devices;
  /// On the CPU: OpenMP threads of each worker, one entry per worker (set by planCpuWorkers;
  /// empty: one worker with the default threads). On CUDA: the CPU workers after the
  /// devices' workers, which run the flow-level experiments (empty unless flow_on_cpu).
  std::vector<int> cpu_threads;
  /// CUDA only: flow-level experiments run on CPU workers beside the devices.
  bool flow_on_cpu = false;
  /// Why the request cannot be met (empty when it can).
  std::string error;

  /// Workers that run batches side by side: one per device, then the CPU workers.
  int workers() const {
    const auto cpu = static_cast<int>(cpu_threads.size());
    return cuda ? static_cast<int>(devices.size()) + cpu : std::max(cpu, 1);
  }
  /// Whether worker `w` runs on a CUDA device (else on the CPU).
  bool onDevice(int w) const { return cuda && w < static_cast<int>(devices.size()); }
  /// Whether an experiment of `fidelity` runs on the CPU workers of this plan.
  bool onCpu(NetworkFidelity fidelity) const { return !cuda || (flow_on_cpu && fidelity == NetworkFidelity::kFlow); }
  /// OpenMP threads of worker `w` on the CPU, or `threads` (the --threads request) on a device.
  int threadsOf(int w, int threads) const {
    if (onDevice(w) || cpu_threads.empty()) return threads;
    return cpu_threads.at(static_cast<size_t>(w - (cuda ? static_cast<int>(devices.size()) : 0)));
  }
  /// Worker w as the heartbeat names it: "GPU 1" for a device's, "worker 3" for a CPU worker.
  std::string workerName(int w) const {
    return onDevice(w) ? "GPU " + std::to_string(devices[static_cast<size_t>(w)]) : "worker " + std::to_string(w);
  }
  /// What to print: "cpu", "cpu (2 workers of 1 thread)", "cuda (devices 0, 1)" or
  /// "cuda (device 0), flow level on cpu (3 workers of 5 threads)".
  std::string describe() const;
  /// Most experiments per batch of worker `w` for `--batch-size requested` (-1 = auto, 0 =
  /// no cap): auto is kCpuAutoBatchSize on the CPU and no cap on a device, where one batch
  /// fills a GPU. The memory budget (`--max-memory`) splits batches further either way.
  int64_t batchSize(int64_t requested, int w) const;
};

/// Share of a device's free memory one batch's world may take on the CUDA backend; the rest
/// is left to the CUDA context, the megakernel's stacks and the transfer staging buffer.
inline constexpr double kDeviceMemoryShare = 0.9;

/**
 * Memory one batch of worker `worker` may hold on its device: kDeviceMemoryShare of the
 * device's free memory when asked, so a CUDA batch is cut to fit its GPU as a CPU batch
 * is cut to fit the RAM. 0 (no limit) on the CPU or when the device cannot be asked.
 */
int64_t deviceMemoryBudget(const BackendPlan& plan, int worker);

/// CUDA devices this process can use: 0 when the build has no CUDA backend or the machine
/// no GPU.
int usableCudaDevices();

/// Resolves `backend` ("auto", "cpu", "cuda") and `devices` (0 = every usable device) given
/// `available` usable CUDA devices and whether the CUDA backend is built in.
BackendPlan planBackend(const std::string& backend, int devices, int available, bool built);

/**
 * Gives each of the `local_size` processes (MPI ranks) on one node its own share of the
 * plan's CUDA devices: process `local_rank` keeps a contiguous part of them, or, with more
 * processes than devices, device local_rank mod count alone (shared with other ranks). Does
 * nothing on the CPU or for one process.
 */
void shareDevicesOnNode(BackendPlan& plan, int local_rank, int local_size);

/**
 * Splits the CPU into workers that run batches side by side, each with its own threads:
 * `requested` workers (-1 = auto: one per thread, but no more than `experiments`) sharing
 * `threads` threads (0 = all cores) as evenly as possible. A worker's experiments never
 * wait at a barrier for another worker's, so on the CPU several one-thread workers beat
 * one worker whose threads split each step (bench/README.md "CPU workers"). Sets
 * plan.error when more workers than threads are requested. On CUDA it plans the CPU
 * workers of the flow-level experiments when plan.flow_on_cpu, over the threads less one
 * per device (each device's worker keeps a host thread busy), at least one; otherwise it
 * refuses a requested count and leaves the plan as it is.
 */
void planCpuWorkers(BackendPlan& plan, int requested, int threads, int64_t experiments);

/**
 * With `requested` "auto" and a CUDA plan, places flow-level experiments on the CPU: their
 * event loop keeps one GPU lane busy per experiment, and on an H200 64 of them took 15-40x
 * the time of 16 CPU cores (bench/README.md "The flow level on a GPU"). Of `experiments`,
 * `flow_level` are flow-level. All of them: the plan becomes the CPU's. Some: the plan
 * keeps its devices for the rest and sets flow_on_cpu. Returns the note to print ("" when
 * nothing moved); `--backend cuda` keeps every experiment on the GPU.
 */
std::string placeFlowLevelOnCpu(BackendPlan& plan, const std::string& requested, int64_t flow_level,
                                int64_t experiments);

/**
 * The part of the memory budget `total` (bytes) for the devices' workers of a plan whose
 * experiments need `device_memory` bytes in all (the largest `device_largest`) on devices
 * and `cpu_memory` (the largest `cpu_largest`) on CPU workers beside them; the CPU workers
 * get the rest. Both sides' batches are in memory at once, so the budget is shared in
 * proportion to the memory each side runs, each side at least its largest experiment where
 * the budget allows. All of it when nothing runs on the CPU; none when nothing runs on a
 * device.
 */
int64_t deviceMemoryPart(int64_t total, int64_t device_memory, int64_t device_largest, int64_t cpu_memory,
                         int64_t cpu_largest);

/// The step runner of worker `worker` of `plan` (empty = the CPU executor).
TrainingStepRunner stepRunner(const BackendPlan& plan, int worker);

/// The worlds a run will put on its devices, hence the self-check it needs.
enum class CheckedWorlds { kNetwork, kTraining };

/**
 * With `requested` "auto" and a CUDA plan, runs the backend self-check of `worlds`
 * (systems/self_check.hpp) on every device of the plan; if one fails or differs from the
 * CPU, replaces the plan by the CPU's and returns the warning to print (else ""). A request
 * for "cuda" is kept as asked.
 */
std::string confirmAutoBackend(BackendPlan& plan, const std::string& requested, CheckedWorlds worlds);

/// The network-world step runner of worker `worker` of `plan` (empty = the CPU executor).
net::NetworkStepRunner networkStepRunner(const BackendPlan& plan, int worker);

/// Whether this binary has the CUDA backend.
bool cudaBackendBuilt();

}  // namespace mv
