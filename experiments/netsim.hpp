/**
 * @file netsim.hpp
 * `multiverse netsim`: runs a flow list on a topology at packet level, one experiment per
 * variant of the network configuration, in one batch per CPU worker (planCpuWorkers), and
 * writes per-flow and per-queue results.
 */
#pragma once

#include <filesystem>
#include <string>

#include "experiments/config_reader.hpp"

namespace mv {

struct NetsimOptions {
  std::filesystem::path out;  ///< results folder; empty = results/<name>
  int threads = 0;            ///< 0 = all cores
  int64_t cpu_block = -1;     ///< experiments advanced together per block (0 = all, -1 = auto: CpuExecutor::kAutoBlock)
  /// Batches side by side, sharing `threads` (-1 = auto: one per thread, at most the variants).
  int cpu_workers = -1;
  /// "auto" (CUDA when a GPU is usable, else the CPU), "cpu" or "cuda" (one batch per device).
  std::string backend = "auto";
  bool quiet = false;
  bool force = false;  ///< replace the results a folder already holds (else such a folder is refused)
  /// Bytes one variant's world may take (0: half the RAM); a variant whose packet storage
  /// needs more is refused before anything is built.
  int64_t max_memory = 0;
};

/// Runs the description in `yaml`; returns the process exit code (2 for bad input).
int runNetsim(const std::filesystem::path& yaml, const NetsimOptions& options);

/// Reads and checks `yaml` (and the files it names) as runNetsim does before it runs
/// anything, with `budget` bytes per variant; every problem goes to `diags`.
void checkNetsimFile(const std::filesystem::path& yaml, int64_t budget, Diagnostics& diags);

/// The packet-level network's step graph, printed (text or Graphviz DOT).
std::string describeNetworkGraph(bool dot);

}  // namespace mv
