/**
 * @file training_device.cu
 * Instantiates the CUDA executor for the training graph.
 */
#include "systems/cuda/training_device.hpp"

#include "kernels/cuda/cuda_executor.cuh"
#include "systems/training_world.hpp"

namespace mv {

TrainingStepRunner cudaTrainingRunner(int device) {
  return [device](TrainWorld& world, int64_t max_steps) {
    const CudaExecutor exec(device);
    return exec.run<TrainGraph>(world, max_steps);
  };
}

}  // namespace mv
