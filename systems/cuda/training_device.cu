/**
 * @file training_device.cu
 * Instantiates the CUDA executor for the training graph.
 */
#include "systems/cuda/training_device.hpp"

#include "kernels/cuda/cuda_executor.cuh"
#include "systems/training_world.hpp"

namespace mv {

TrainingStepRunner cudaTrainingRunner(int device) {
  return [device](TrainWorld& world) -> std::unique_ptr<StepSession<TrainWorld>> {
    return std::make_unique<CudaStepSession<TrainGraph, TrainWorld>>(CudaExecutor(device), world);
  };
}

}  // namespace mv
