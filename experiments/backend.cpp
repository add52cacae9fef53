#include "experiments/backend.hpp"

#include <algorithm>

#include "ecs/policy.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "systems/self_check.hpp"

#ifdef MV_HAVE_CUDA
#include "kernels/cuda/device_query.hpp"
#include "systems/cuda/network_device.hpp"
#include "systems/cuda/training_device.hpp"
#endif

namespace mv {

namespace {

/// "cpu (3 workers of 5 threads)", "(2 workers of 2-3 threads)", "(1 worker of 4 threads)";
/// one worker or none is just "cpu" unless `count_one`.
std::string describeCpuWorkers(const std::vector<int>& threads, bool count_one) {
  if (threads.empty() || (threads.size() == 1 && !count_one)) return "cpu";
  const bool even = std::all_of(threads.begin(), threads.end(), [&](int t) { return t == threads[0]; });
  std::string s = "cpu (" + std::to_string(threads.size()) + (threads.size() == 1 ? " worker of " : " workers of ");
  const std::string most = std::to_string(threads[0]);
  s += even ? most : std::to_string(threads.back()) + "-" + most;
  return s + (even && threads[0] == 1 ? " thread)" : " threads)");
}

}  // namespace

std::string BackendPlan::describe() const {
  if (!cuda) return describeCpuWorkers(cpu_threads, false);
  std::string s = "cuda (device";
  s += devices.size() == 1 ? " " : "s ";
  for (size_t i = 0; i < devices.size(); ++i) s += (i > 0 ? ", " : "") + std::to_string(devices[i]);
  s += ")";
  return cpu_threads.empty() ? s : s + ", flow level on " + describeCpuWorkers(cpu_threads, true);
}

int64_t BackendPlan::batchSize(int64_t requested, int w) const {
  if (requested >= 0) return requested;
  return onDevice(w) ? 0 : kCpuAutoBatchSize;
}

bool cudaBackendBuilt() {
#ifdef MV_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int usableCudaDevices() {
#ifdef MV_HAVE_CUDA
  return cudaDeviceCount();
#else
  return 0;
#endif
}

int64_t deviceMemoryBudget(const BackendPlan& plan, int worker) {
#ifdef MV_HAVE_CUDA
  if (!plan.onDevice(worker)) return 0;
  const int64_t free = cudaDeviceFreeBytes(plan.devices.at(static_cast<size_t>(worker)));
  return free > 0 ? static_cast<int64_t>(static_cast<double>(free) * kDeviceMemoryShare) : 0;
#else
  (void)plan;
  (void)worker;
  return 0;
#endif
}

BackendPlan planBackend(const std::string& backend, int devices, int available, bool built) {
  BackendPlan plan;
  if (devices < 0) {
    plan.error = "--devices must be 0 (every usable GPU) or a positive count";
    return plan;
  }
  if (backend == "cpu" || (backend == "auto" && (!built || available == 0))) {
    if (devices > 0 && backend == "cpu") plan.error = "--devices applies to the cuda backend only";
    return plan;
  }
  if (!built) {
    plan.error = "this multiverse was built without the CUDA backend (nvcc was not found at build time); use "
                 "--backend cpu or auto";
    return plan;
  }
  if (available == 0) {
    plan.error = "no usable CUDA device on this machine; use --backend cpu or auto";
    return plan;
  }
  const int n = devices == 0 ? available : devices;
  if (n > available) {
    plan.error = "--devices " + std::to_string(n) + " but only " + std::to_string(available) +
                 " CUDA device(s) are usable";
    return plan;
  }
  plan.cuda = true;
  for (int d = 0; d < n; ++d) plan.devices.push_back(d);
  return plan;
}

std::string confirmAutoBackend(BackendPlan& plan, const std::string& requested, CheckedWorlds worlds) {
  if (requested != "auto" || !plan.cuda) return "";
  for (int w = 0; w < static_cast<int>(plan.devices.size()); ++w) {
    const std::string problem = worlds == CheckedWorlds::kTraining ? compareTrainingWithCpu(stepRunner(plan, w))
                                                                   : compareBackendWithCpu(networkStepRunner(plan, w));
    if (problem.empty()) continue;
    const int device = plan.devices.at(static_cast<size_t>(w));
    plan = planBackend("cpu", 0, 0, false);
    return "the GPU self-check failed on CUDA device " + std::to_string(device) + " (" + problem +
           "); running on the CPU instead (--backend cuda skips the check)";
  }
  return "";
}

std::string placeFlowLevelOnCpu(BackendPlan& plan, const std::string& requested, int64_t flow_level,
                                int64_t experiments) {
  if (requested != "auto" || !plan.cuda || flow_level == 0) return "";
  const std::string why =
      " (their event loop keeps one GPU lane per experiment busy; on an H200 64 of them took "
      "15-40x the time of 16 CPU cores); --backend cuda runs them on the GPU";
  if (flow_level == experiments) {
    plan = planBackend("cpu", 0, 0, false);
    return "all " + std::to_string(experiments) + " experiments to run are flow-level, so they run on the CPU" + why;
  }
  plan.flow_on_cpu = true;
  return std::to_string(flow_level) + " of " + std::to_string(experiments) +
         " experiments to run are flow-level; they run on the CPU beside the GPU" + why;
}

void shareDevicesOnNode(BackendPlan& plan, int local_rank, int local_size) {
  if (!plan.cuda || local_size <= 1 || local_rank < 0 || local_rank >= local_size) return;
  const auto n = static_cast<int64_t>(plan.devices.size());
  if (local_size > n) {
    plan.devices = {plan.devices[static_cast<size_t>(local_rank % n)]};
    return;
  }
  plan.devices = std::vector<int>(plan.devices.begin() + partBegin(n, local_size, local_rank),
                                  plan.devices.begin() + partBegin(n, local_size, local_rank + 1));
}

void planCpuWorkers(BackendPlan& plan, int requested, int threads, int64_t experiments) {
  if (plan.cuda && !plan.flow_on_cpu) {
    if (requested > 0) plan.error = "--cpu-workers applies to CPU workers, but this run puts everything on the GPU";
    return;
  }
  int total = threads > 0 ? threads : defaultCpuThreads();
  if (plan.cuda) total = std::max(1, total - static_cast<int>(plan.devices.size()));
  if (requested > total) {
    plan.error = "--cpu-workers " + std::to_string(requested) + " needs at least as many CPU threads, but there are " +
                 std::to_string(total) + (plan.cuda ? " (--threads, less one per GPU)" : " (--threads)");
    return;
  }
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(total, experiments));
  const int workers = requested > 0 ? requested : static_cast<int>(most);
  plan.cpu_threads.assign(static_cast<size_t>(workers), total / workers);
  for (int w = 0; w < total % workers; ++w) plan.cpu_threads[static_cast<size_t>(w)] += 1;
}

int64_t deviceMemoryPart(int64_t total, int64_t device_memory, int64_t device_largest, int64_t cpu_memory,
                         int64_t cpu_largest) {
  if (cpu_memory <= 0) return total;
  if (device_memory <= 0) return 0;
  const double share = static_cast<double>(device_memory) / static_cast<double>(device_memory + cpu_memory);
  const int64_t least = std::min(device_largest, total);
  return std::clamp(static_cast<int64_t>(share * static_cast<double>(total)), least,
                    std::max(least, total - cpu_largest));
}

TrainingStepRunner stepRunner(const BackendPlan& plan, int worker) {
#ifdef MV_HAVE_CUDA
  if (plan.onDevice(worker)) return cudaTrainingRunner(plan.devices.at(static_cast<size_t>(worker)));
#else
  (void)worker;
  (void)plan;
#endif
  return {};
}

net::NetworkStepRunner networkStepRunner(const BackendPlan& plan, int worker) {
#ifdef MV_HAVE_CUDA
  if (plan.onDevice(worker)) return cudaNetworkRunner(plan.devices.at(static_cast<size_t>(worker)));
#else
  (void)worker;
  (void)plan;
#endif
  return {};
}

}  // namespace mv
