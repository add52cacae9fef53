/**
 * @file network_device.cu
 * Instantiates the CUDA executor for the packet-level network graph.
 */
#include "systems/cuda/network_device.hpp"

#include "kernels/cuda/cuda_executor.cuh"

namespace mv {

net::NetworkStepRunner cudaNetworkRunner(int device) {
  return [device](net::NetWorld& world) -> std::unique_ptr<StepSession<net::NetWorld>> {
    return std::make_unique<CudaStepSession<net::NetGraph, net::NetWorld>>(CudaExecutor(device), world);
  };
}

}  // namespace mv
