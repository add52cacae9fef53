/**
 * @file run_sweep.hpp
 * `multiverse --experiments sweep.yaml`: expands and validates the sweep (everything wrong
 * is reported before anything runs), runs the experiments in batches as large as the
 * memory budget and the batch size allow, writes each result as it finishes
 * (experiments/results.hpp), and ends with a ranked table. Under `mpirun -np K` the
 * experiments are sharded over the ranks (longest first by estimated cost) and rank 0
 * writes every result. docs/sweep.md, docs/results.md.
 */
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace mv {

struct SweepOptions {
  /// Results folder; empty = results/<sweep file name without extension>.
  std::filesystem::path out;
  /// Keep the experiments an earlier run of the same folder finished; run only the rest.
  bool resume = false;
  /// Replace the results a folder already holds.
  bool force = false;
  /// Write experiments with problems (infeasible parallelism, a topology too small, memory
  /// above the budget, ...) as rows of status `invalid` and run the rest, instead of
  /// refusing the sweep; the sweep is still refused when every experiment has problems.
  bool skip_infeasible = false;
  /// Seconds between heartbeat lines while batches run (where each running batch stands);
  /// 0 = none.
  double heartbeat_s = 10;
  /// OpenMP threads per process; 0 = all cores.
  int threads = 0;
  /// CPU backend: experiments of a batch advanced together per block; 0 = all, -1
  /// (CpuExecutor::kAutoBlock) = chosen by measurement. docs/engine.md "Experiment blocking".
  int64_t cpu_block = -1;
  /// CPU backend: workers running batches side by side, sharing `threads`; -1 = auto (one
  /// per thread, no more than the experiments nor than copies of the largest experiment
  /// `max_memory` holds). See planCpuWorkers (backend.hpp).
  int cpu_workers = -1;
  /// "auto" (CUDA when a GPU is usable, else CPU), "cpu" or "cuda".
  std::string backend = "auto";
  /// CUDA devices to spread the experiments over (longest first by estimated cost);
  /// 0 = every usable device. CUDA backend only.
  int devices = 0;
  /// Memory budget of one batch's simulation state, bytes; 0 = half the machine's RAM.
  int64_t max_memory = 0;
  /// Most experiments in one batch; 0 = no cap but the memory budget, -1 = auto
  /// (BackendPlan::batchSize: kCpuAutoBatchSize on CPU workers, no cap on a device).
  int64_t batch_size = -1;
  /// Rows of the closing table (0 = all).
  int top = 10;
  /// Closing table order: "iteration", "mfu", "tokens", "memory".
  std::string rank_by = "iteration";
  /// Write a Chrome trace (trace.json) into each experiment's folder.
  bool trace = false;
  /// Write queues.csv (packet level), flows.csv and fct.txt (packet and flow level) into each
  /// experiment's folder (links.csv is written for those with network.link_bin whatever
  /// this says).
  bool network_detail = false;
  bool quiet = false;
};

/// Runs the sweep; returns the process exit code (0 done, 1 a run failed, 2 bad input).
int runSweep(const std::filesystem::path& file, const SweepOptions& options);

/// Starts MPI when the process was launched by mpirun (no-op otherwise or without MPI).
void startMpi(int* argc, char*** argv);
/// Ends MPI when startMpi started it.
void stopMpi();

}  // namespace mv
