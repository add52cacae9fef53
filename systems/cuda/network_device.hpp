/**
 * @file network_device.hpp
 * The packet-level network alone (netsim, the network benchmark) on a CUDA device: the
 * same NetGraph the CPU executor runs, as one cooperative megakernel.
 */
#pragma once

#include "network/network_sim.hpp"

namespace mv {

/// A session factory that runs the network graph on CUDA device `device` (0-based), the
/// world kept on the device for the session. Throws DeviceFault when the device cannot be
/// used.
net::NetworkStepRunner cudaNetworkRunner(int device);

}  // namespace mv
