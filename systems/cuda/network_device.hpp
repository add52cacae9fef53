/**
 * @file network_device.hpp
 * The packet-level network alone (netsim, the network benchmark) on a CUDA device: the
 * same NetGraph the CPU executor runs, as one cooperative megakernel.
 */
#pragma once

#include "network/network_sim.hpp"

namespace mv {

/// A step runner that runs the network graph on CUDA device `device` (0-based). Throws
/// std::runtime_error when the device cannot be used.
net::NetworkStepRunner cudaNetworkRunner(int device);

}  // namespace mv
