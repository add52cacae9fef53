/**
 * @file training_device.hpp
 * The training simulation on a CUDA device: the same TrainGraph the CPU executor runs,
 * as one cooperative megakernel (kernels/cuda/cuda_executor.cuh).
 */
#pragma once

#include "systems/training_spec.hpp"

namespace mv {

/// A session factory for SimulationOptions::device_runner that runs the training graph on
/// CUDA device `device` (0-based), the world kept on the device for the session. Throws
/// DeviceFault when the device cannot be used.
TrainingStepRunner cudaTrainingRunner(int device);

}  // namespace mv
