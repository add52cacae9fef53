#include "experiments/backend.hpp"

#ifdef MV_HAVE_CUDA
#include "kernels/cuda/device_query.hpp"
#include "systems/cuda/training_device.hpp"
#endif

namespace mv {

std::string BackendPlan::describe() const {
  if (!cuda) return "cpu";
  std::string s = "cuda (device";
  s += devices.size() == 1 ? " " : "s ";
  for (size_t i = 0; i < devices.size(); ++i) s += (i > 0 ? ", " : "") + std::to_string(devices[i]);
  return s + ")";
}

int64_t BackendPlan::batchSize(int64_t requested) const {
  if (requested >= 0) return requested;
  return cuda ? 0 : kCpuAutoBatchSize;
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

TrainingStepRunner stepRunner(const BackendPlan& plan, int worker) {
#ifdef MV_HAVE_CUDA
  if (plan.cuda) return cudaTrainingRunner(plan.devices.at(static_cast<size_t>(worker)));
#else
  (void)worker;
  (void)plan;
#endif
  return {};
}

}  // namespace mv
