/**
 * @file task_graph.hpp
 * Per-rank task graphs of one training iteration (Megatron-LM 1F1B or interleaved 1F1B),
 * built once per pipeline stage: every rank of a stage runs the same program (a template),
 * and per-rank state stays a few bytes per task. docs/training.md describes the tasks.
 *
 * A program is a list of tasks in program order; each task runs on one stream, and a
 * stream runs its tasks in list order, one at a time (CUDA stream semantics). Edges
 * (`succ_*`) add the cross-stream dependencies (CUDA events). Host-side only.
 */
#pragma once

#include <compare>  // ecs/units.hpp uses <=> without including it
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analytical/collective_model.hpp"
#include "ecs/units.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/parallelism.hpp"

namespace mv {

enum class TaskKind : uint8_t {
  kCompute,     ///< GPU kernels for a fixed time (TP collectives of the block folded in)
  kSend,        ///< pipeline send to the peer stage (completes when the data arrived)
  kRecv,        ///< pipeline receive (completes when the data arrived and the task started)
  kCollective,  ///< DP, CP or EP collective over the rank's group (starts when the last member arrives)
  kCopy,        ///< activation offload: a copy between GPU and host memory for a fixed time (compute_ps)
};

/// Compute and copy tasks take a time known when they start; the others (communication)
/// end when whoever completes them writes their completion (TaskDef::comm_slot).
MV_HD constexpr bool isTimed(TaskKind kind) { return kind == TaskKind::kCompute || kind == TaskKind::kCopy; }

/// What the time a task occupies counts as in the iteration breakdown.
enum class CommKind : uint8_t {
  kNone,
  kTp,
  kPp,
  kDp,
  kEp,
  kExpertDp,  ///< expert gradients and parameters over the expert-data-parallel group (dp · cp / ep ranks)
  kCp,        ///< ring attention's keys and values over the context-parallel group (cp ranks)
  kOffload,   ///< activations copied to host memory and back (TaskKind::kCopy)
  kGroup,     ///< a communicator of a per-rank program (TrainingProgram::groups); seq is the collective's index there
};

/// Streams of a rank.
enum Stream : uint8_t {
  kComputeStream = 0,
  kSendStream = 1,
  kRecvStream = 2,
  kDpStream = 3,
  kCpStream = 4,
  kOffloadStream = 5,  ///< device to host copies (their own copy engine)
  kReloadStream = 6,   ///< host to device copies
};
inline constexpr int kStreams = 7;

inline constexpr uint32_t kNoTask = 0xffffffffu;
/// Tasks one program holds at most (pipeline sends carry the task index in 20 bits of their flow id).
inline constexpr uint32_t kMaxProgramTasks = 1u << 20;

/// One task of a stage's program. Plain data (copied into device tables).
struct TaskDef {
  TaskKind kind = TaskKind::kCompute;
  CommKind comm = CommKind::kNone;
  uint8_t stream = kComputeStream;
  CollectiveOp op = CollectiveOp::kAllReduce;
  /// Cross-stream dependencies that must finish before the task starts.
  uint32_t dep_count = 0;
  /// Successors: rows [succ_begin, succ_begin + succ_count) of the program's `succs`.
  uint32_t succ_begin = 0;
  uint32_t succ_count = 0;
  /// Compute tasks: kernel time without communication; copies: the copy's time.
  int64_t compute_ps = 0;
  /// Compute tasks: the block's exposed tensor-parallel collectives (intra-server model).
  int64_t tp_ps = 0;
  /// Communication and copy tasks: bytes per rank (collectives: the nccl-tests buffer convention).
  int64_t bytes = 0;
  /// P2P: the peer's pipeline stage and the index of the matching task in its program.
  uint32_t peer_stage = 0;
  uint32_t peer_task = kNoTask;
  /// Collectives: index among this program's collectives of the same CommKind (members of
  /// a group meet on equal indices); kGroup: index into TrainingProgram::group_collectives.
  uint32_t seq = 0;
  /// Micro-batch and model chunk (for traces); kNoTask for per-iteration tasks.
  uint32_t micro_batch = kNoTask;
  uint32_t chunk = 0;
  /// Forward pass (false: backward) of a per-micro-batch task.
  bool forward = true;
  /// The task's row among its rank's communication states (sends, receives and collectives)
  /// and among its send times (receives and their successors); kNoTask where it has none. Set
  /// when a world loads the program.
  uint32_t comm_slot = kNoTask;
  uint32_t sent_slot = kNoTask;
};

/// The program of every rank of one pipeline stage.
struct StageProgram {
  uint32_t stage = 0;
  std::vector<TaskDef> tasks;
  std::vector<uint32_t> succs;
  uint32_t dp_collectives = 0;
  uint32_t ep_collectives = 0;
  uint32_t expert_dp_collectives = 0;
  uint32_t cp_collectives = 0;

  /// Sum over compute tasks of compute_ps (one rank's busy compute time).
  int64_t computePs() const;
};

/// Knobs of program generation.
struct ProgramOptions {
  /// DP buckets of this many bytes (gradients reduced, parameters gathered, per bucket), when
  /// positive; 0: buckets of dpBucketParameters parameters, whose bytes follow from each
  /// family's element size (Megatron-core's buckets count parameters).
  Bytes dp_bucket{0};
  /// Intra-server collective model of the GPU, for the TP collectives folded into blocks.
  CollectiveModel tp_model;
  /// Bus bandwidth of the TP collectives relative to tp_model (its nccl-tests curve): their
  /// times are divided by this (both latency and bandwidth terms).
  double tp_bandwidth_factor = kMegatronTpBandwidthFactor;
  /// Bytes per second an activation offload copy moves in each direction (the GPU's host
  /// link × the copy efficiency).
  double host_copy_bytes_per_s = 0.8 * 63.015e9;
  /// How much slower a GEMM runs while a TP collective runs beside it (the backward's
  /// overlap, Parallelism::tp_comm_overlap): the GPU's overlap slowdown for GEMMs.
  double overlap_slowdown = 1.0;
};

/// Every stage's program of one iteration.
/// The counter of `program`'s collectives of kind `comm` (kDp, kEp, kExpertDp or kCp): the next
/// collective of that kind gets it as its seq.
uint32_t& collectiveCount(StageProgram& program, CommKind comm);

/// A collective of per-rank programs (CommKind::kGroup): the ranks that meet in it, in the
/// communicator's order, and each one's task index in its own program.
struct GroupCollective {
  std::vector<uint32_t> ranks;
  std::vector<uint32_t> tasks;
};

struct TrainingProgram {
  std::vector<StageProgram> stages;
  uint32_t micro_batches = 0;
  /// Every rank runs a program of its own (general Chakra traces): stage s is rank s's
  /// program, run as tp = dp = 1 and pp = ranks; P2P peers are ranks (peer_stage) and
  /// collectives are kGroup.
  bool per_rank = false;
  /// The kGroup collectives, indexed by TaskDef::seq.
  std::vector<GroupCollective> group_collectives;

  /// Tasks over all stage templates.
  int64_t templateTasks() const;
};

/**
 * Builds the programs. Per micro-batch and model chunk a stage runs a forward block and a
 * backward block (recomputation included) on the compute stream; with tp > 1 each block
 * carries its layers' TP collectives (2 all-reduces per layer and pass, or all-gather +
 * reduce-scatter with sequence parallelism; again for full recomputation); with ep > 1 each
 * block is followed by its layers' expert all-to-alls (dispatch + combine, lumped) on the
 * compute stream. Pipeline sends and receives run on their own streams. The gradients of a
 * chunk are reduced per bucket during the last micro-batch's backward (all-reduce, or
 * reduce-scatter from ZeRO-1 on, whose parameter all-gathers of the previous step overlap
 * the first micro-batch's forward per bucket; ZeRO-2 reduce-scatters after every
 * micro-batch's backward; ZeRO-3 gathers each layer's parameters before every forward and
 * backward, one layer ahead, and reduce-scatters each layer's gradients after every
 * backward): dense parameters over the DP group with CP (dp · cp ranks), expert parameters
 * (MoE) in buckets of their own over the expert-data-parallel group of dp · cp / ep ranks; the
 * optimizer step waits for every reduction. With context parallelism (cp > 1) each block
 * starts with its layers' attention kernels while the CP stream exchanges their keys and
 * values over the CP group (forward: an all-gather; backward: an all-gather, again for
 * recomputed attention, and a reduce-scatter of their gradients), and the rest of the block
 * waits for the exchange: a layer's ring attention costs the longer of the two. With
 * activation offload (n layers per chunk) the forward block's first n layers are a task of
 * their own whose stored activations the offload stream then copies to the host; the
 * backward block ends with three tasks, layer n + 1 (the last kept on the GPU), layers
 * n..2 and layer 1, and the reload stream copies the n layers back from the start of
 * layer n + 1 on, layer 1 waiting for it: the time of a reload one layer ahead of each
 * offloaded layer's backward.
 * `par` must be valid (validateParallelism).
 */
TrainingProgram buildTrainingProgram(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                                     const ComputeModel& compute, const ProgramOptions& options);

/**
 * The program of a collective benchmark (nccl-tests' `*_perf`): one stage whose ranks run
 * `iters` collectives of `op` on a per-rank buffer of `bytes` (nccl-tests' convention) over
 * their data-parallel group, one after another on the DP stream. Run with tp = pp = 1 and
 * dp = the GPUs, the group is every GPU.
 */
TrainingProgram collectiveBenchmarkProgram(CollectiveOp op, Bytes bytes, uint32_t iters);

/**
 * What a collective of `collective` ps adds to a GEMM of `gemm` ps that runs beside it while
 * GEMMs run `slowdown` times slower: the collective's excess over the GEMM, or, when the
 * slowed GEMM outlasts it, the work the GEMM lost during it, collective × (1 − 1/slowdown).
 */
int64_t overlapCost(int64_t collective, int64_t gemm, double slowdown);

/// One transformer layer's passes on one GPU for one micro-batch, as the blocks charge
/// them: compute (ComputeModel::layerTimes) plus the layer's TP collectives.
struct LayerPassTimes {
  Picoseconds forward_compute;
  Picoseconds backward_compute;  ///< with its recomputation
  Picoseconds tp_forward;        ///< two all-reduces, or with SP two all-gathers and reduce-scatters
  /// The backward's exposed TP time (Parallelism::tp_comm_overlap; docs/training.md), plus
  /// the forward's with full recomputation.
  Picoseconds tp_backward;

  Picoseconds forward() const { return forward_compute + tp_forward; }
  Picoseconds backward() const { return backward_compute + tp_backward; }
};
LayerPassTimes layerPassTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                              const ComputeModel& compute, const ProgramOptions& options);

/// A task of a program: its stage and its index in the stage's program.
struct TaskRef {
  uint32_t stage = 0;
  uint32_t task = 0;
};

/**
 * The first task (lowest stage, then lowest index) that can never start when every stage's
 * ranks run `program`: a task starts after its stream's previous task, its waits and, for a
 * receive, its matched send (peer_stage, peer_task), so such a task lies on or behind a
 * cycle of those across stages (a deadlock). nullopt when every task can run.
 * Collectives meet within a stage, whose ranks run one program, so they never block it; a
 * kGroup collective completes for every member once all of its members reached it.
 */
std::optional<TaskRef> firstStuckTask(const TrainingProgram& program);

/// A readable name: "compute fwd mb3 chunk0", "send bwd mb1 chunk0", "collective".
std::string taskName(const TaskDef& task);

/// Process-group name of a collective's group kind ("dp", "ep", "expert_dp", "cp", "group"), as
/// Chakra traces and Chrome traces name it.
const char* processGroupName(CommKind comm);

/// Adds the edges (from, to) to `program` (successor lists and dependency counts); each
/// edge is a cross-stream wait of `to` on `from`.
void linkProgram(StageProgram& program, std::vector<std::pair<uint32_t, uint32_t>> edges);

/// Order of (forward?, micro-batch, chunk) of stage `stage` under the 1F1B or interleaved schedule.
struct ScheduleItem {
  bool forward = true;
  uint32_t micro_batch = 0;
  uint32_t chunk = 0;
  /// A backward of the interleaved schedule's steady state: Megatron-LM runs it right after
  /// the forward before it and exchanges both blocks' pipeline messages in one step.
  bool paired = false;
};
std::vector<ScheduleItem> pipelineOrder(uint32_t stage, uint32_t stages, uint32_t micro_batches, uint32_t chunks);

}  // namespace mv
