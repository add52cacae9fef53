/**
 * @file training_components.hpp
 * The training side's ECS tables (DESIGN.md §4): per-experiment static tables filled by the
 * host — stage programs (task templates), ranks with their per-task state, collective
 * instances with their member lists and transfer state, collective transfer templates —
 * and the per-experiment configuration row. Flows and flow records are the network's.
 * docs/training.md describes how they interact.
 */
#pragma once

#include <cstdint>

#include "analytical/collective_model.hpp"
#include "ecs/atomic.hpp"
#include "ecs/table.hpp"
#include "ecs/type_list.hpp"
#include "network/components.hpp"
#include "systems/ring_schedule.hpp"
#include "systems/training_spec.hpp"
#include "workloads/task_graph.hpp"

namespace mv::train {

inline constexpr int64_t kNever = INT64_MAX;


/// How a collective instance moves its data.
enum class CollMode : uint8_t {
  kIntraServer,  ///< all members on one server: the calibrated intra-server model
  kAnalytical,   ///< inter-server, α-β closed form (analytical fidelity)
  kTransfers,    ///< inter-server, a DAG of transfers held in TransferShape rows (tree, halving-doubling, direct)
  kRing,         ///< inter-server, ring transfers generated step by step from RingShape rows (ring, hierarchical)
};

/// Per-experiment configuration row.
struct TrainConfig {
  NetworkFidelity fidelity = NetworkFidelity::kPacket;
  int64_t step_latency_ps = 0;   ///< delay from a chunk's arrival to the dependent send (≥ Δ)
  int64_t nic_rate_bps = 0;      ///< NIC goodput per GPU (line × payload / (data + ACK wire bytes) / GPUs per NIC)
  int64_t path_latency_ps = 0;   ///< idle round trip of the longest NIC-to-NIC path
  int64_t nvlink_bps = 0;        ///< NVLink bandwidth per GPU and direction (intra-server hops)
  uint32_t tp = 1, pp = 1, dp = 1, ep = 1;
  uint32_t cp = 1;  ///< context-parallel size; dp counts the CP ranks too (dp · cp replicas of the parameters)
  uint32_t gpus_per_server = 8;
  uint32_t nics_per_server = 8;
  uint32_t nics_per_gpu = 1;     ///< NICs of each GPU when a server has more NICs than GPUs (railOf), else 1
  uint32_t priority = 3;
  uint32_t qps = 1;              ///< QPs per connection (collectives.qps_per_connection)
  uint32_t trace = 0;            ///< 1: record every finished task (TaskSpan rows)
  uint32_t log_flows = 0;        ///< 1: keep a copy of every finished flow (FlowLog rows)
  uint32_t transfer_bits = 18;   ///< bits of a transfer's index in its flow id (transferFlowId)
  uint32_t overlap_ppm = 1000000; ///< compute slow-down while the DP stream communicates (ppm)
  uint32_t jitter_ppm = 0;        ///< compute jitter: each kernel × a seeded factor in 1 ± jitter_ppm/10^6
  uint64_t jitter_seed = 0;       ///< key of the jitter's random stream (from the experiment's seed and id)
  CollectiveModel intra;         ///< intra-server collective model of the GPU
};

// --- stage programs (templates) ----------------------------------------------------------
struct ProgramTask : Archetype<TaskDef> {
  static constexpr const char* kName = "ProgramTask";
  static constexpr bool kStatic = true;
};
struct Successor {
  uint32_t task = 0;
};
struct ProgramSucc : Archetype<Successor> {
  static constexpr const char* kName = "ProgramSucc";
  static constexpr bool kStatic = true;
};

// --- ranks ---------------------------------------------------------------------------------
struct RankInfo {
  uint32_t rank = 0;
  uint32_t stage = 0;
  uint32_t tp_index = 0;
  uint32_t dp_index = 0;
  uint32_t server = 0;
  uint32_t nic = 0;            ///< its (first) NIC; with nics_per_gpu > 1 it has nic .. nic + nics_per_gpu − 1
  uint32_t program_base = 0;   ///< first ProgramTask row of its stage (local to the experiment)
  uint32_t succ_base = 0;      ///< first ProgramSucc row of its stage
  uint32_t task_count = 0;
  uint32_t state_base = 0;     ///< first RankTask row of this rank
  uint32_t comm_base = 0;      ///< first RankComm row of this rank
  uint32_t sent_base = 0;      ///< first RankSent row of this rank
  uint32_t dp_coll_base = 0;   ///< Collective row of its DP group's collective 0
  uint32_t ep_coll_base = 0;   ///< Collective row of its EP group's collective 0
  uint32_t expert_dp_coll_base = 0;  ///< Collective row of its expert-DP group's collective 0
  uint32_t cp_coll_base = 0;         ///< Collective row of its CP group's collective 0

  /// Collective row of collective `seq` of this rank's group of kind `comm`.
  MV_HD uint32_t collective(CommKind comm, uint32_t seq) const {
    switch (comm) {
      case CommKind::kGroup:
        return seq;
      case CommKind::kEp:
        return ep_coll_base + seq;
      case CommKind::kExpertDp:
        return expert_dp_coll_base + seq;
      case CommKind::kCp:
        return cp_coll_base + seq;
      default:
        return dp_coll_base + seq;
    }
  }
};
/// Where each stream of a rank is.
struct RankStreams {
  uint32_t next[kStreams] = {};      ///< program index from which to look for the stream's next task
  uint32_t running[kStreams] = {kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask};
  int64_t busy_until[kStreams] = {};  ///< finish of the running compute or copy task; free time when idle
  int64_t start[kStreams] = {};      ///< start of the running task
  /// Running compute task: kernel time at full speed still to do as of `work_since` (0 when
  /// none, or when only its TP collectives are left); the overlap slow-down applies to it
  /// while the DP stream communicates.
  int64_t work_left = 0;
  int64_t work_since = 0;
  /// Earliest event the rank found when it last ran a full pass: a compute finish, a task
  /// start, or a completion of running communication already written.
  int64_t wake_self = 0;
  /// Earliest completion posted for one of the rank's communication tasks since the rank
  /// last took its completions (kNever: none); see postCompletion and takeCompletions.
  int64_t comm_wake = kNever;

  /// Whoever completes one of the rank's communication tasks at `t` calls this after writing
  /// the task's done_ps (it may run while the rank does). It lowers comm_wake with a write
  /// that publishes done_ps to the rank's next takeCompletions.
  MV_HD void postCompletion(int64_t t) { atomicLowerAcqRel<int64_t>(&comm_wake, t); }
  /// Earliest time at which the rank may have something to do: it need not run a full pass
  /// in a window that ends at or before it.
  MV_HD int64_t nextWake() {
    const int64_t posted = atomicLoad<int64_t>(&comm_wake);
    return posted < wake_self ? posted : wake_self;
  }
  /// The rank starts a full pass: it takes every completion posted so far, whose done_ps its
  /// loads now see. What is posted during the pass (at or after the window's end, as every
  /// communication lasts a step latency) stays for nextWake in the next window. Taken at the
  /// pass's end instead, a completion the pass has just consumed would hide a later one
  /// posted during the pass (the minimum keeps only the earlier).
  MV_HD void takeCompletions() { atomicExchangeAcqRel<int64_t>(&comm_wake, kNever); }
};
/// Where the rank's compute-stream time went (the iteration breakdown) and when it ended.
struct RankTimes {
  int64_t compute = 0;
  int64_t tp = 0;
  int64_t pp = 0;
  int64_t dp = 0;
  int64_t ep = 0;
  int64_t cp = 0;
  int64_t offload = 0;
  int64_t bubble = 0;
  int64_t finish = 0;
  int64_t compute_end = 0;  ///< when the compute stream's last task ended
  uint32_t tasks_done = 0;
  CommKind tail_kind = CommKind::kNone;  ///< of the communication task that ended last
  uint8_t pad[3] = {};
};
struct Rank : Archetype<RankInfo, RankStreams, RankTimes> {
  static constexpr const char* kName = "Rank";
  static constexpr bool kStatic = true;
};

/// Per-rank state of one task of its program.
struct TaskState {
  int32_t deps_left = 0;
  CommKind ready_kind = CommKind::kNone;  ///< kind of the dependency that set ready_ps
  uint8_t pad[3] = {};
  int64_t ready_ps = 0;  ///< latest finish among finished dependencies
};
struct RankTask : Archetype<TaskState> {
  static constexpr const char* kName = "RankTask";
  static constexpr bool kStatic = true;
};
/// Per-rank state of one communication task (send, receive, collective; TaskDef::comm_slot),
/// about half of a training program's tasks, kept apart so that the others do not carry it.
struct CommState {
  int64_t done_ps = kNever;  ///< completion, written by whoever completes the task
};
struct RankComm : Archetype<CommState> {
  static constexpr const char* kName = "RankComm";
  static constexpr bool kStatic = true;
};
/// Per-rank state of one receive or successor of a receive (TaskDef::sent_slot): a few tasks
/// per micro-batch.
struct SentState {
  int64_t sent_ps = 0;  ///< when the sender of the receive that made the task ready started sending
};
struct RankSent : Archetype<SentState> {
  static constexpr const char* kName = "RankSent";
  static constexpr bool kStatic = true;
};

// --- collectives -------------------------------------------------------------------------
struct CollInfo {
  CollMode mode = CollMode::kIntraServer;
  CollectiveOp op = CollectiveOp::kAllReduce;
  CommKind comm = CommKind::kDp;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  uint8_t protocol = 0xff;      ///< the protocol NCCL's tuner chose (collectives.<op>: auto), else 0xff
  uint16_t channels = 1;        ///< between servers: the ring's or the tree's channels (1 for the others)
  uint32_t members = 0;
  uint32_t member_base = 0;     ///< first GroupMember row
  uint32_t task = 0;            ///< program index of the collective's task (stage programs: the same for every member)
  uint32_t shape_base = 0;      ///< first TransferShape (kTransfers) or RingShape (kRing) row
  uint32_t shape_count = 0;     ///< its transfers (all chunks)
  uint32_t state_base = 0;      ///< first TransferState row (kTransfers)
  uint32_t phases = 0;          ///< kRing: RingShape rows
  uint32_t chunks = 1;          ///< kRing: chunks, each of chunk_transfers transfers
  uint32_t window = 0;          ///< kRing: a member's chunk u + window starts after its last receive of chunk u (0: all at once)
  uint32_t chunk_transfers = 0;
  uint32_t communicator = 0;    ///< its group's communicator (a connection belongs to one, with its channel)
  int64_t bytes = 0;            ///< per-rank buffer (nccl-tests convention)
  int64_t analytical_ps = 0;    ///< duration for kIntraServer / kAnalytical (floored at the step latency)
};
struct CollState {
  uint32_t arrived = 0;
  uint32_t transfers_done = 0;
  int64_t arrive_max = 0;
  int64_t done_max = 0;
};
struct Collective : Archetype<CollInfo, CollState> {
  static constexpr const char* kName = "Collective";
  static constexpr bool kStatic = true;
};
struct Member {
  uint32_t rank = 0;
  /// The collective's task in this member's program; kNoTask: CollInfo::task (stage programs).
  uint32_t task = kNoTask;
};
struct GroupMember : Archetype<Member> {
  static constexpr const char* kName = "GroupMember";
  static constexpr bool kStatic = true;
};

/// One transfer of a collective's decomposition (shared by instances of the same shape):
/// member `src` sends ⌈bytes/den⌉ to member `dst` once `dep_count` transfers finished.
struct TransferDef {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t den = 1;
  uint32_t dep_count = 0;
  uint32_t succ_begin = 0;   ///< first TransferSucc row (local)
  uint32_t succ_count = 0;
  uint32_t pair_index = 0;   ///< its index among the shape's transfers from src to dst on its channel (QPs take them in turn)
  uint16_t channel = 0;      ///< its channel (a connection per channel; NIC channel mod nics_per_gpu)
  uint16_t sharing = 1;      ///< hops inside a server: the streams its member's NVLink carries at once
};
struct TransferShape : Archetype<TransferDef> {
  static constexpr const char* kName = "TransferShape";
  static constexpr bool kStatic = true;
};
struct TransferNext {
  uint32_t transfer = 0;
};
struct TransferSucc : Archetype<TransferNext> {
  static constexpr const char* kName = "TransferSucc";
  static constexpr bool kStatic = true;
};
struct TransferCounter {
  int32_t deps_left = 0;
  uint32_t link = kNoTransfer;  ///< once released: the next transfer on its releasing thread's list
  int64_t ready_ps = 0;
};
struct TransferState : Archetype<TransferCounter> {
  static constexpr const char* kName = "TransferState";
  static constexpr bool kStatic = true;
};

/// Flow ids of training traffic (40 bits, unique per source NIC): bit 39 set for a collective
/// transfer (collective row above the transfer's index, which takes the experiment's
/// TrainConfig::transfer_bits: 18 unless a collective has more than 2^18 transfers), clear
/// for a pipeline message (sender rank: 19 bits, sender task: 20 bits).
MV_HD inline uint64_t p2pFlowId(uint32_t rank, uint32_t task) { return (uint64_t{rank} << 20) | task; }
/// Communicator of the pipeline messages' connections (collectives number theirs from 0).
inline constexpr uint32_t kP2pCommunicator = 0xFFFFFFFFu;
inline constexpr uint32_t kTransferIdBits = 39;
MV_HD inline uint64_t transferFlowId(uint32_t coll, uint32_t transfer, uint32_t transfer_bits) {
  return (uint64_t{1} << kTransferIdBits) | (uint64_t{coll} << transfer_bits) | transfer;
}
MV_HD inline uint32_t flowCollective(uint64_t id, uint32_t transfer_bits) {
  return static_cast<uint32_t>((id & ((uint64_t{1} << kTransferIdBits) - 1)) >> transfer_bits);
}
MV_HD inline uint32_t flowTransfer(uint64_t id, uint32_t transfer_bits) {
  return static_cast<uint32_t>(id & ((uint64_t{1} << transfer_bits) - 1));
}
MV_HD inline bool isTransferFlow(uint64_t id) { return (id >> kTransferIdBits) & 1; }
inline constexpr uint32_t kMaxFlowRanks = 1u << 19;
inline constexpr uint32_t kMaxFlowTasks = kMaxProgramTasks;
inline constexpr uint32_t kMinTransferBits = 18;
/// Transfers one explicit DAG (TransferShape rows) may hold.
inline constexpr uint32_t kMaxShapeTransfers = 1u << 24;

/// One finished task, for Chrome traces (recorded only when TrainConfig::trace is set).
struct TaskSpanData {
  uint32_t rank = 0;
  uint32_t task = 0;
  int64_t start_ps = 0;
  int64_t end_ps = 0;
};
struct TaskSpan : Archetype<TaskSpanData> {
  static constexpr const char* kName = "TaskSpan";
};

/// A finished network flow kept for flows.csv (`log_flows`); drained by the host between
/// runs. A component of its own: systems that take a FlowResult must not see these rows.
struct LoggedFlow {
  net::FlowResult flow;
};
struct FlowLog : Archetype<LoggedFlow> {
  static constexpr const char* kName = "FlowLog";
};

using TrainingArchetypes =
    TypeList<ProgramTask, ProgramSucc, Rank, RankTask, RankComm, RankSent, Collective, GroupMember, TransferShape,
             TransferSucc, TransferState, RingShape, TaskSpan, FlowLog>;

}  // namespace mv::train
