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

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "workloads/chakra.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/parallelism.hpp"
#include "workloads/task_graph.hpp"

namespace mv {

/// Rank attributes of a node (names of the attributes written and read).
namespace chakra_attr {
inline constexpr std::string_view kComputePs = "mv_compute_ps";
inline constexpr std::string_view kTpPs = "mv_tp_ps";
inline constexpr std::string_view kStream = "mv_stream";
}  // namespace chakra_attr

/// The trace of rank r, read when asked for (readRankTrace): the importers hold one or two
/// traces at a time, not the job's.
using TraceSource = std::function<ChakraTrace(uint32_t rank)>;

/// The traces of every rank (tp · pp · dp of `par`), rank r at index r (Megatron order).
/// Throws WorkloadError for context-parallel programs (cp > 1), which it does not write.
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
/// The same, reading rank r's trace from `trace_of` when needed (`ranks` of them).
TrainingProgram programFromChakra(const TraceSource& trace_of, uint32_t ranks, const Parallelism& par);

/// Communicators of a job of per-rank programs: process-group name → its ranks, in ring
/// order (ASTRA-sim's --comm-group-configuration file).
using CommGroups = std::map<std::string, std::vector<uint32_t>, std::less<>>;

/// Reads a communicator-group file: a JSON object whose keys are process-group names (the
/// collectives' pg_name) and whose values are lists of distinct ranks below `ranks`.
/// Throws WorkloadError naming the file and the group.
CommGroups readCommGroups(const std::filesystem::path& path, uint32_t ranks);

/**
 * Gives every collective of `traces` (programToChakra's, one per rank of `par`) the name of
 * its own communicator instead of its group kind, and returns the communicators: "dp.S.T"
 * (the DP group of stage S and TP index T), "ep.S.T.G" (EP group G), "expert_dp.S.T.J"
 * (expert-DP group J), members in the order the simulator's rings take them. So the job runs
 * as per-rank programs, and tools that resolve pg_name through a group file (ASTRA-sim) see
 * the real groups.
 */
CommGroups nameCommunicators(std::vector<ChakraTrace>& traces, const Parallelism& par);

/// Writes `groups` as a communicator-group file (readCommGroups reads it back). Throws
/// WorkloadError when the file cannot be written.
void writeCommGroups(const std::filesystem::path& path, const CommGroups& groups);

/// Whether some collective of `trace` names a process group other than dp, ep or expert_dp:
/// such traces need per-rank programs (programFromRankTraces).
bool usesOtherGroups(const ChakraTrace& trace);

/**
 * Per-rank programs of `traces` (one per rank, any DAG each), as ASTRA-sim runs such traces:
 * - a compute node takes its duration_micros (or Multiverse's mv_compute_ps), else the
 *   roofline time of its num_ops and tensor_size on `compute` at `precision`; a host-side
 *   node (is_cpu_op), a metadata or invalid node, and a compute node with neither time nor
 *   work take no time and are left out (what waited for them waits for their dependencies);
 * - a send goes to rank comm_dst and meets the receive there whose comm_src and comm_tag
 *   match; any two ranks may exchange messages;
 * - a collective runs over the communicator its pg_name names in `groups`, or over every
 *   rank when it has no pg_name or `groups` is empty; the members of a communicator must run
 *   the same collectives (type and size) in the same order.
 * Compute nodes run on the compute stream, collectives on the collective stream, sends and
 * receives on their own, each stream in dependency order. Throws WorkloadError naming the
 * trace and node for anything that cannot run (including waits that loop across ranks).
 */
TrainingProgram programFromRankTraces(const std::vector<ChakraTrace>& traces, const CommGroups& groups,
                                      const ComputeModel& compute, TrainingPrecision precision);
/// The same, reading rank r's trace from `trace_of` when needed (`ranks` of them).
TrainingProgram programFromRankTraces(const TraceSource& trace_of, uint32_t ranks, const CommGroups& groups,
                                      const ComputeModel& compute, TrainingPrecision precision);

}  // namespace mv
