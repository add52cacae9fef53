/**
 * @file self_check.hpp
 * The backend self-check: a small packet-level world (an 8-to-1 incast on a star, one
 * experiment per congestion control) run on a device's step runner and on the CPU
 * executor; the two must agree bit for bit. `--backend auto` runs it before it trusts a GPU.
 */
#pragma once

#include <string>

#include "kernels/cpu/cpu_executor.hpp"
#include "network/network_sim.hpp"

namespace mv {

/// Opens a session of `device` on `world` and runs it in chunks of `chunk` steps until the
/// world finishes, stops making progress or raises an error, leaving the host world
/// current; the steps add up, the rest is the last call's report.
RunReport runNetworkToEnd(const net::NetworkStepRunner& device, net::NetWorld& world, int64_t chunk);

/// Runs the check world on `device` and on the CPU; returns "" when every flow's result and
/// every counter agree, else what differed (or the device's error).
std::string compareBackendWithCpu(const net::NetworkStepRunner& device);

}  // namespace mv
