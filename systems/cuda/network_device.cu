/**
 * @file network_device.cu
 * Instantiates the CUDA executor for the packet-level network graph.
 */
#include "systems/cuda/network_device.hpp"

#include "kernels/cuda/cuda_executor.cuh"

namespace mv {

net::NetworkStepRunner cudaNetworkRunner(int device) {
  return [device](net::NetWorld& world, int64_t max_steps) {
    const CudaExecutor exec(device);
    return exec.run<net::NetGraph>(world, max_steps);
  };
}

}  // namespace mv
