/**
 * @file backend.hpp
 * Which backend and which devices a sweep runs on (`--backend`, `--devices`).
 */
#pragma once

#include <string>
#include <vector>

#include "systems/training_spec.hpp"

namespace mv {

/// The resolved choice: CPU (one worker) or one worker per CUDA device.
struct BackendPlan {
  bool cuda = false;
  /// CUDA device indices, one worker each; empty for the CPU.
  std::vector<int> devices;
  /// Why the request cannot be met (empty when it can).
  std::string error;

  /// Workers that run batches side by side: one per device, or one CPU worker.
  int workers() const { return cuda ? static_cast<int>(devices.size()) : 1; }
  /// What to print: "cpu" or "cuda (devices 0, 1)".
  std::string describe() const;
};

/// CUDA devices this process can use: 0 when the build has no CUDA backend or the machine
/// no GPU.
int usableCudaDevices();

/// Resolves `backend` ("auto", "cpu", "cuda") and `devices` (0 = every usable device) given
/// `available` usable CUDA devices and whether the CUDA backend is built in.
BackendPlan planBackend(const std::string& backend, int devices, int available, bool built);

/// The step runner of worker `worker` of `plan` (empty = the CPU executor).
TrainingStepRunner stepRunner(const BackendPlan& plan, int worker);

/// Whether this binary has the CUDA backend.
bool cudaBackendBuilt();

}  // namespace mv
