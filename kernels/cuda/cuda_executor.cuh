/**
 * @file cuda_executor.cuh
 * The CUDA backend. Megakernel mode: one cooperative persistent kernel runs the whole
 * system graph for up to K steps, grid-wide sync between nodes, and leaves early when
 * every experiment is done; the host only starts the launch and reads the result.
 * Kernel-per-node mode (for the megakernel-versus-not ablation): one launch per graph
 * phase, done detection read back by the host after every step. Both run exactly the
 * single-source code the CPU backend runs (ecs/graph.hpp).
 */
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nvtx3/nvtx3.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "ecs/graph.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_policy.cuh"
#include "kernels/cuda/device_world.cuh"

namespace mv {

template <class G, class WV>
__global__ void megakernel(WV* world, int64_t max_steps, int64_t* steps_out, bool spread_rows, bool team_rows) {
  const CudaGridPolicy policy{spread_rows, team_rows};
#ifndef MV_EMULATED_DEVICE
  if (policy.rank() == 0) cuda_profile::startLaunch();
#endif
  const int64_t k = runSteps<G>(policy, *world, max_steps);
  if (policy.rank() == 0) *steps_out = k;
}

template <class Node, class WV>
__global__ void nodePhaseKernel(WV* world, int phase) {
  const CudaKernelPolicy policy;
  Node::runPhase(policy, *world, phase);
}

/// How the CUDA backend drives the graph.
enum class CudaMode { kMegakernel, kKernelPerNode };

/// Runs a world's graph on one GPU.
class CudaExecutor {
 public:
  explicit CudaExecutor(int device = 0, CudaMode mode = CudaMode::kMegakernel, int block_size = defaultBlockSize())
      : device_(device), mode_(mode), block_size_(block_size) {}

  /// Threads per block: 256, or MV_CUDA_BLOCK_SIZE (a multiple of 32 from 32 to 1024; a
  /// tuning variable for developers, docs/engine.md). The megakernel's grid is as many
  /// blocks of that size as fit on the device at once.
  static int defaultBlockSize() {
    static const int size = static_cast<int>(tuningVariable("MV_CUDA_BLOCK_SIZE", 256, 32, 1024, 32));
    return size;
  }

  /// Whether the megakernel spreads a system's rows over the warps (parallelForUnits):
  /// yes, unless MV_CUDA_SPREAD_ROWS=0 (a tuning variable, to time both on one build).
  static bool spreadRows() {
    static const bool spread = tuningVariable("MV_CUDA_SPREAD_ROWS", 1, 0, 1, 1) != 0;
    return spread;
  }

  /// Whether a team system's rows each take a warp (parallelForTeams): yes, unless
  /// MV_CUDA_TEAM_ROWS=0 (a tuning variable: one thread per row instead, to time both).
  static bool teamRows() {
    static const bool team = tuningVariable("MV_CUDA_TEAM_ROWS", 1, 0, 1, 1) != 0;
    return team;
  }

  /// The whole number in environment variable `name`, `fallback` when it is not set; one
  /// outside [lo, hi] or not a multiple of `step` is an error naming the variable.
  static long tuningVariable(const char* name, long fallback, long lo, long hi, long step) {
    const char* text = std::getenv(name);
    if (text == nullptr) return fallback;
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi || v % step != 0) {
      throw std::invalid_argument(std::string(name) + "='" + text + "': expected a whole number from " +
                                  std::to_string(lo) + " to " + std::to_string(hi) +
                                  (step > 1 ? ", a multiple of " + std::to_string(step) : std::string()));
    }
    return v;
  }

  int device() const { return device_; }

  /// Uploads `world`, runs up to `max_steps` steps on the device, downloads the whole
  /// result: one chunk. A loop over chunks keeps the world on the device with a session.
  template <class G, class WorldT>
  RunReport run(WorldT& world, int64_t max_steps) const;

  /// Runs up to `max_steps` steps of the world `dev` mirrors; `host_view` is its host view,
  /// current in its counters.
  template <class G, class WorldT>
  int64_t runOnDevice(DeviceWorld<WorldT>& dev, const typename WorldT::View& host_view, int64_t max_steps) const {
    nvtx3::scoped_range range{"mv::CudaExecutor::runOnDevice"};
    return mode_ == CudaMode::kMegakernel ? runMegakernel<G>(dev, max_steps)
                                          : runKernelPerNode<G>(dev, host_view, max_steps);
  }

 private:
  template <class G, class WorldT>
  int64_t runMegakernel(DeviceWorld<WorldT>& dev, int64_t max_steps) const {
    using WV = typename WorldT::View;
    nvtx3::scoped_range range{"mv::megakernel"};
    int sms = 0;
    int per_sm = 0;
    MV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    MV_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, megakernel<G, WV>, block_size_, 0));
    const dim3 grid(static_cast<unsigned>(sms * (per_sm > 0 ? per_sm : 1)));
    const dim3 block(static_cast<unsigned>(block_size_));
    int64_t* steps_dev = nullptr;
    MV_CUDA_CHECK(cudaMalloc(&steps_dev, sizeof(int64_t)));
    reserveStack(megakernel<G, WV>);
    WV* view = dev.deviceView();
    bool spread = spreadRows();
    bool team = teamRows();
    void* args[] = {&view, &max_steps, &steps_dev, &spread, &team};
#ifndef MV_EMULATED_DEVICE
    const bool profile = !cuda_profile::outputPath().empty();
    if (profile) cuda_profile::armDevice();
#endif
    const auto start = std::chrono::steady_clock::now();
    MV_CUDA_CHECK(cudaLaunchCooperativeKernel(megakernel<G, WV>, grid, block, args, 0, nullptr));
    MV_CUDA_CHECK(cudaDeviceSynchronize());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int64_t steps = 0;
    MV_CUDA_CHECK(cudaMemcpy(&steps, steps_dev, sizeof(int64_t), cudaMemcpyDeviceToHost));
    MV_CUDA_CHECK(cudaFree(steps_dev));
#ifndef MV_EMULATED_DEVICE
    if (profile) cuda_profile::collectDevice(steps, seconds);
#else
    (void)seconds;
#endif
    return steps;
  }

  template <class G, class WorldT, class... Nodes>
  void launchStep(DeviceWorld<WorldT>& dev, const typename WorldT::View& host_view, TypeList<Nodes...>) const {
    using WV = typename WorldT::View;
    int sms = 0;
    MV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    const dim3 grid(static_cast<unsigned>(sms * 4));
    const dim3 block(static_cast<unsigned>(block_size_));
    (
        [&] {
          // The host cannot see this step's counters: launch the worst-case phase count
          // (phases with nothing to do return at once on the device).
          const int phases = Nodes::maxPhaseCount(host_view);
          WV* view = dev.deviceView();
          for (int p = 0; p < phases; ++p) {
            void* args[] = {&view, &p};
            MV_CUDA_CHECK(cudaLaunchKernel(nodePhaseKernel<Nodes, WV>, grid, block, args, 0, nullptr));
          }
        }(),
        ...);
  }

  template <class G, class WorldT>
  int64_t runKernelPerNode(DeviceWorld<WorldT>& dev, const typename WorldT::View& host_view, int64_t max_steps) const {
    nvtx3::scoped_range range{"mv::kernel_per_node"};
    reserveNodeStacks<typename WorldT::View>(typename G::NodeList{});
    int64_t k = 0;
    while (k < max_steps) {
      launchStep<G>(dev, host_view, typename G::NodeList{});
      ++k;
      const auto steps_run = dev.template readField<int64_t>(offsetWithin(host_view, host_view.steps_run));
      const auto stop = dev.template readField<uint32_t>(offsetWithin(host_view, host_view.stop[(steps_run - 1) & 1]));
      if (stop != 0u) break;
    }
    MV_CUDA_CHECK(cudaDeviceSynchronize());
    return k;
  }

  /// Raises the device's per-thread stack limit, before `kernel` is launched, to twice the
  /// stack it needs (its local memory, cudaFuncGetAttributes) and at least 4 KiB. The driver
  /// is documented to grow the limit at launch as needed, yet on an H200 (driver 580.159,
  /// CUDA 13.0) the training megakernel, whose frame ptxas gave as 1,040 bytes, overflowed
  /// the 1,024 bytes a GPU thread starts with in every training world (compute-sanitizer:
  /// stack overflow; unchecked: cudaErrorIllegalAddress). Since the static figure alone did
  /// not protect it, the limit keeps a wide margin: 4 KiB for each thread the device can
  /// hold, about 1.1 GiB of an H200. The figure is the whole need only because device code
  /// never recurses (tests/kernels/check_no_recursion.py).
  template <class... P>
  static void reserveStack(void (*kernel)(P...)) {
    constexpr std::size_t kMinStackBytes = 4096;
    cudaFuncAttributes attr{};
    MV_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    std::size_t limit = 0;
    MV_CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitStackSize));
    const std::size_t need = std::max(2 * attr.localSizeBytes, kMinStackBytes);
    if (need > limit) MV_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, need));
  }

  /// `reserveStack` for every node's phase kernel, once per run of kernel-per-node steps.
  template <class WV, class... Nodes>
  static void reserveNodeStacks(TypeList<Nodes...>) {
    (reserveStack(nodePhaseKernel<Nodes, WV>), ...);
  }

  /// Byte offset of a member within the view (the view is not standard-layout).
  template <class WV, class T>
  static std::size_t offsetWithin(const WV& view, const T& member) {
    return static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&member) - reinterpret_cast<const std::byte*>(&view));
  }

  int device_;
  CudaMode mode_;
  int block_size_;
};

/**
 * A world kept on one GPU for a whole batch: uploaded once when the session opens; each
 * `run` copies the view's counters up, runs, and copies back the view, the clocks and the
 * configuration rows (a few KB, through pinned memory); tables come back only when the
 * host asks (StepSession).
 */
template <class G, class WorldT>
class CudaStepSession final : public StepSession<WorldT> {
 public:
  CudaStepSession(const CudaExecutor& exec, WorldT& world)
      : StepSession<WorldT>(world), exec_(exec), dev_((selectDevice(exec.device()), world)) {}

  RunReport run(int64_t max_steps) override {
    const auto start = std::chrono::steady_clock::now();
    selectDevice(exec_.device());
    WorldT& world = this->world();
    prepareRun(world.view());
    dev_.pushView();
    dev_.releaseHost();
    const int64_t steps = exec_.runOnDevice<G>(dev_, world.view(), max_steps);
    dev_.pullView();
    const auto [lo, hi] = world.clockAndConfigSpan();
    dev_.pullFields(lo, hi);
    return reportRun(world.view(), steps, start);
  }
  TransferStats transfers() const override { return dev_.transfers(); }

 protected:
  void syncFields(std::size_t lo, std::size_t hi) override { dev_.pullFields(lo, hi); }
  void pushFields(std::size_t lo, std::size_t hi) override { dev_.pushFields(lo, hi); }

 private:
  static void selectDevice(int device) { MV_CUDA_CHECK(cudaSetDevice(device)); }

  CudaExecutor exec_;
  DeviceWorld<WorldT> dev_;
};

template <class G, class WorldT>
RunReport CudaExecutor::run(WorldT& world, int64_t max_steps) const {
  nvtx3::scoped_range range{"mv::CudaExecutor::run"};
  CudaStepSession<G, WorldT> session(*this, world);
  const RunReport r = session.run(max_steps);
  session.syncHost();
  return r;
}

}  // namespace mv
