/**
 * @file simai.hpp
 * SimAI/AICB workload files (docs/simai.md): the text AICB writes for SimAI, read as a
 * workload source. Line 1 is the header (`HYBRID_TRANSFORMER_FWD_IN_BCKWD
 * model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 4 all_gpus: 64 checkpoints: 0
 * checkpoint_initiates: 0 pp_comm 0`), line 2 the number of layer lines, then one line per
 * layer of 12 fields: name, a reserved -1, the forward compute time (ns), its communication
 * type and size (bytes), the input-gradient compute time, type and size, the
 * weight-gradient compute time, type and size, and the weight-gradient update time (ns).
 * Host-only.
 */
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "workloads/task_graph.hpp"

namespace mv {

/// The group a SimAI collective runs over: its type's suffix (`_EP`, `_DP_EP`), else the
/// phase's (forward and input gradient: tensor parallel; weight gradient: data parallel).
enum class SimaiGroup : uint8_t { kTp, kDp, kEp, kExpertDp };

/// One communication of a layer phase; `none` when the type is NONE.
struct SimaiComm {
  bool none = true;
  CollectiveOp op = CollectiveOp::kAllReduce;
  SimaiGroup group = SimaiGroup::kTp;
  int64_t bytes = 0;
};

struct SimaiLayer {
  std::string name;
  int line = 0;  ///< in the file, 1-based
  int64_t forward_ns = 0;
  SimaiComm forward;
  int64_t input_grad_ns = 0;
  SimaiComm input_grad;
  int64_t weight_grad_ns = 0;
  SimaiComm weight_grad;
  int64_t update_ns = 0;
};

struct SimaiWorkload {
  std::string source;
  uint32_t tp = 1;  ///< model_parallel_NPU_group
  uint32_t ep = 1;
  uint32_t pp = 1;
  uint32_t vpp = 1;
  uint32_t ga = 1;
  uint32_t gpus = 1;  ///< all_gpus
  uint32_t checkpoints = 0;
  int64_t pp_comm = 0;
  std::vector<SimaiLayer> layers;
};

/**
 * Reads a SimAI workload file. Throws WorkloadError "file:line: what" for anything
 * malformed: another parallelism policy than HYBRID_TRANSFORMER_FWD_IN_BCKWD, a header value
 * out of range, a layer line without its 12 fields, an unknown communication type, a time
 * or size out of range, fewer or more layer lines than line 2 announces.
 */
SimaiWorkload readSimaiWorkload(const std::filesystem::path& path);

/// Parses the text of a workload file (`source` names it in errors).
SimaiWorkload parseSimaiWorkload(const std::string& text, const std::string& source);

/**
 * The program every rank runs, as SimAI's HYBRID_TRANSFORMER_FWD_IN_BCKWD loop does: the
 * layer lines' forward passes in file order (compute, then its communication, blocking),
 * then in reverse order each line's input gradient (compute, communication, blocking) and
 * weight gradient (compute, then its communication without blocking, on the collective
 * stream in issue order), and the iteration ends when the last of those has (the next
 * iteration's forward waits for them: a task of no time). Tensor-parallel communication is folded into the compute task
 * with the intra-server collective model (`tp_model`, times divided by
 * `tp_bandwidth_factor`), as for generated programs; EP all-to-alls run on the compute
 * stream, data-parallel and expert-data-parallel collectives on the collective stream.
 * Forward communication below 4 KiB is raised to 4 KiB, as SimAI does. Throws
 * WorkloadError for pipeline parallelism (pp > 1) and activation checkpoints, which are
 * not imported.
 */
TrainingProgram programFromSimai(const SimaiWorkload& w, const CollectiveModel& tp_model, double tp_bandwidth_factor);

}  // namespace mv
