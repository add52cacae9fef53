/**
 * @file bench_workloads.hpp
 * Pieces the network benchmarks share: flow lists every experiment of a batch gets (all
 * starting at 0) and the machine's load, printed next to timings.
 */
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace mv::bench {

/// One flow of a workload.
struct FlowDef {
  uint32_t src = 0;
  uint32_t dst = 0;
  int64_t bytes = 0;
};

struct Workload {
  std::string name;
  std::vector<FlowDef> flows;
};

/// Every NIC to every other NIC.
inline std::vector<FlowDef> allToAll(uint32_t nics, int64_t bytes) {
  std::vector<FlowDef> flows;
  for (uint32_t s = 0; s < nics; ++s) {
    for (uint32_t d = 0; d < nics; ++d) {
      if (s != d) flows.push_back(FlowDef{s, d, bytes});
    }
  }
  return flows;
}

/// The 1-minute load average (Linux), or -1: other processes on the machine skew the timings.
inline double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return in ? load : -1.0;
}

}  // namespace mv::bench
