/**
 * @file self_check.hpp
 * The backend self-checks, each run on a device's step runner and on the CPU executor; the
 * two must agree bit for bit. The network check is a small packet-level world (an 8-to-1
 * incast on a star, one experiment per congestion control); the training check a small
 * training batch (one experiment per network fidelity). `--backend auto` runs the one of
 * the worlds it is about to run before it trusts a GPU: on an H200 the network world once
 * ran right while every training world failed.
 */
#pragma once

#include <string>

#include "kernels/cpu/cpu_executor.hpp"
#include "network/network_sim.hpp"
#include "systems/training_spec.hpp"

namespace mv {

/// Opens a session of `device` on `world` and runs it in chunks of `chunk` steps until the
/// world finishes, stops making progress or raises an error, leaving the host world
/// current; the steps add up, the rest is the last call's report.
RunReport runNetworkToEnd(const net::NetworkStepRunner& device, net::NetWorld& world, int64_t chunk);

/// Runs the check world on `device` and on the CPU; returns "" when every flow's result and
/// every counter agree, else what differed (or the device's error).
std::string compareBackendWithCpu(const net::NetworkStepRunner& device);

/// Simulates the check batch (a GPT of 4 layers on 8 GPUs in 2 servers, TP 2 PP 2 DP 2, at
/// packet, flow and analytical fidelity) with `device` and on the CPU; returns "" when
/// every result agrees (iteration, exposed communication, events, network counters), else
/// what differed (or the device's error).
std::string compareTrainingWithCpu(const TrainingStepRunner& device);

}  // namespace mv
