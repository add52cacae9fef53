/**
 * @file chakra_program.hpp
 * Stage programs to and from Chakra execution traces (docs/chakra.md, docs/training.md):
 * one trace per rank, a node per task. Compute nodes carry their exact time in the
 * attributes `mv_compute_ps` and `mv_tp_ps` (besides `duration_micros`), every node its
 * stream in `mv_stream`; a node's data dependencies are its cross-stream waits and its
 * control dependency the previous task of its stream. Reading accepts traces from other
 * tools too: streams then follow the node type, durations come from `duration_micros`.
 */
#pragma once

#include <string>
#include <vector>

#include "workloads/chakra.hpp"
#include "workloads/parallelism.hpp"
#include "workloads/task_graph.hpp"

namespace mv {

/// Rank attributes of a node (names of the attributes written and read).
namespace chakra_attr {
inline constexpr std::string_view kComputePs = "mv_compute_ps";
inline constexpr std::string_view kTpPs = "mv_tp_ps";
inline constexpr std::string_view kStream = "mv_stream";
}  // namespace chakra_attr

/// The traces of every rank (tp · pp · dp of `par`), rank r at index r (Megatron order).
std::vector<ChakraTrace> programToChakra(const TrainingProgram& program, const Parallelism& par);

/**
 * The stage programs of `traces` (one per rank, rank order). Every rank of a stage must run
 * the same program (same node types, sizes and times as the stage's first rank); pipeline
 * messages are matched by (source rank, tag). Throws WorkloadError naming the trace and
 * node for anything the simulator cannot run (a node type other than compute, send, receive
 * or collective; a collective other than all-reduce, all-gather, reduce-scatter or
 * all-to-all; a send to a rank outside the pipeline; a send or receive without its match, a
 * receive matched twice, a size that differs between the two; waits that loop across ranks,
 * so that some task could never start).
 */
TrainingProgram programFromChakra(const std::vector<ChakraTrace>& traces, const Parallelism& par);

}  // namespace mv
