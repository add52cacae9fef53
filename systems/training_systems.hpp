/**
 * @file training_systems.hpp
 * The training side's systems (DESIGN.md §5 `schedule`): `flow_completion` turns finished
 * flows into pipeline-message and collective progress; `rank` advances each rank's streams
 * event by event at exact picoseconds inside the step window. Both create the network's
 * flows. Timing rules that keep every run exact for any thread count and any step
 * (docs/training.md): a network send starts `step_latency` (≥ 2Δ) after its cause, every
 * communication lasts at least `step_latency`, so whatever a system learns in one step
 * happens no earlier than the window in which its consumer runs.
 */
#pragma once

#include <cstdint>

#include "analytical/overlap.hpp"
#include "ecs/atomic.hpp"
#include "ecs/rng.hpp"
#include "ecs/system.hpp"
#include "ecs/units.hpp"
#include "network/components.hpp"
#include "network/flow_level.hpp"
#include "network/nic_system.hpp"
#include "network/switch_system.hpp"
#include "systems/training_components.hpp"

namespace mv::train {

/// Operations on one experiment's training tables, shared by both systems.
template <class Ctx>
struct TrainOps {
  const Ctx& ctx;

  MV_HD const TrainConfig& cfg() const { return ctx.config().train; }
  MV_HD int64_t base(const auto& table) const { return table.expBegin(ctx.exp); }

  MV_HD RankInfo& rankInfo(uint32_t rank) const {
    auto& t = ctx.template table<Rank>();
    return t.template get<RankInfo>(base(t) + rank);
  }
  MV_HD const TaskDef& task(const RankInfo& r, uint32_t index) const {
    auto& t = ctx.template table<ProgramTask>();
    return t.template get<TaskDef>(base(t) + r.program_base + index);
  }
  MV_HD uint32_t successor(const RankInfo& r, uint32_t k) const {
    auto& t = ctx.template table<ProgramSucc>();
    return t.template get<Successor>(base(t) + r.succ_base + k).task;
  }
  MV_HD TaskState& state(const RankInfo& r, uint32_t index) const {
    auto& t = ctx.template table<RankTask>();
    return t.template get<TaskState>(base(t) + r.state_base + index);
  }
  /// The communication state of task `d` of rank `r` (a task with a TaskDef::comm_slot).
  MV_HD CommState& commState(const RankInfo& r, const TaskDef& d) const {
    auto& t = ctx.template table<RankComm>();
    return t.template get<CommState>(base(t) + r.comm_base + d.comm_slot);
  }
  MV_HD CommState& commState(const RankInfo& r, uint32_t index) const { return commState(r, task(r, index)); }
  /// The send time of task `d` of rank `r` (a task with a TaskDef::sent_slot).
  MV_HD int64_t& sentPs(const RankInfo& r, const TaskDef& d) const {
    auto& t = ctx.template table<RankSent>();
    return t.template get<SentState>(base(t) + r.sent_base + d.sent_slot).sent_ps;
  }
  MV_HD int64_t& sentPs(const RankInfo& r, uint32_t index) const { return sentPs(r, task(r, index)); }
  MV_HD CollInfo& collInfo(uint32_t coll) const {
    auto& t = ctx.template table<Collective>();
    return t.template get<CollInfo>(base(t) + coll);
  }
  MV_HD CollState& collState(uint32_t coll) const {
    auto& t = ctx.template table<Collective>();
    return t.template get<CollState>(base(t) + coll);
  }
  MV_HD uint32_t member(const CollInfo& c, uint32_t k) const {
    auto& t = ctx.template table<GroupMember>();
    return t.template get<Member>(base(t) + c.member_base + k).rank;
  }
  /// The collective's task in member k's program.
  MV_HD uint32_t memberTask(const CollInfo& c, uint32_t k) const {
    auto& t = ctx.template table<GroupMember>();
    const uint32_t task = t.template get<Member>(base(t) + c.member_base + k).task;
    return task == kNoTask ? c.task : task;
  }
  MV_HD const TransferDef& shape(const CollInfo& c, uint32_t k) const {
    auto& t = ctx.template table<TransferShape>();
    return t.template get<TransferDef>(base(t) + c.shape_base + k);
  }
  MV_HD uint32_t nextTransfer(const TransferDef& d, uint32_t k) const {
    auto& t = ctx.template table<TransferSucc>();
    return t.template get<TransferNext>(base(t) + d.succ_begin + k).transfer;
  }
  MV_HD TransferCounter& counter(const CollInfo& c, uint32_t k) const {
    auto& t = ctx.template table<TransferState>();
    return t.template get<TransferCounter>(base(t) + c.state_base + k);
  }
  /// Phase p of a generated ring collective (kRing).
  MV_HD const RingPhaseDef& ringPhase(const CollInfo& c, uint32_t p) const {
    auto& t = ctx.template table<RingShape>();
    return t.template get<RingPhaseDef>(base(t) + c.shape_base + p);
  }
  /// Place in its connection's message order of a ring's transfer of `chunk` at `step`.
  MV_HD uint32_t ringOrdinal(const CollInfo& c, uint32_t chunk, uint32_t step) const {
    const uint32_t steps = ringPhase(c, 0).steps;
    if (c.window == 0) return chunk * steps + step;
    return (chunk / c.window * steps + step) * c.window + chunk % c.window;
  }
  /// Transfer k of a collective: generated (kRing) or read from its shape (kTransfers; the
  /// successors are then in TransferSucc, and `next` is unset).
  MV_HD RingTransfer transfer(const CollInfo& c, uint32_t k) const {
    if (c.mode == CollMode::kRing) {
      return ringTransfer(&ringPhase(c, 0), c.phases, c.chunks, c.window, c.chunk_transfers, k);
    }
    const TransferDef& d = shape(c, k);
    return RingTransfer{d.src, d.dst, d.den, kNoTransfer, d.channel, 0};
  }

  /// Megatron rank order: TP fastest, then DP, then PP.
  MV_HD uint32_t rankAt(uint32_t stage, uint32_t tp_index, uint32_t dp_index) const {
    return megatronRank(cfg().tp, cfg().dp, stage, tp_index, dp_index);
  }
  MV_HD uint32_t serverOf(uint32_t rank) const { return rank / cfg().gpus_per_server; }

  /// Marks a communication task of `rank` complete at `t` (atomic: its rank may be running;
  /// it acts on the value only in a later window, as t ≥ the next window's start).
  MV_HD void complete(uint32_t rank, uint32_t index, int64_t t) const {
    atomicStore<int64_t>(&commState(rankInfo(rank), index).done_ps, t);
    auto& ranks = ctx.template table<Rank>();
    ranks.template get<RankStreams>(base(ranks) + rank).postCompletion(t);
    ctx.wakeAt(Picoseconds{t});
  }

  /// Time to move `bytes` over NVLink between two GPUs of a server.
  MV_HD int64_t nvlinkTime(int64_t bytes) const {
    return serializationTime(Bytes{bytes}, BitsPerSecond{cfg().nvlink_bps}).ps;
  }
  /// Analytical time of a point-to-point message between servers, as the packet network
  /// would deliver it: at goodput, acknowledged a round trip later, noticed a step latency after.
  MV_HD int64_t nicTime(int64_t bytes) const {
    return serializationTime(Bytes{bytes}, BitsPerSecond{cfg().nic_rate_bps}).ps + cfg().path_latency_ps +
           cfg().step_latency_ps;
  }

  /// Creates a network flow starting at `start`: a packet-level or a fluid one.
  MV_HD void createFlow(uint32_t src_nic, uint32_t dst_nic, int64_t bytes, int64_t start, uint64_t id) const {
    const net::FlowSpec spec{src_nic, dst_nic, bytes, start, id, cfg().priority, 0};
    if (cfg().fidelity == NetworkFidelity::kFlow) {
      net::createFluidFlow(ctx.template table<net::FluidFlow>(), ctx.exp, spec);
    } else {
      ctx.template table<net::Flow>().create(ctx.exp, net::flowKey(src_nic, id), spec, net::FlowSend{}, net::FlowCc{},
                                             net::FlowRecv{});
    }
    ctx.wakeAt(Picoseconds{start});
  }
  /// NIC `rail` of `rank`'s (0 .. nics_per_gpu − 1; railOf).
  MV_HD uint32_t nicOf(uint32_t rank, uint32_t rail = 0) const { return rankInfo(rank).nic + rail; }

  /**
   * Sends `bytes` from rank `src`'s NIC `rail` to rank `dst`'s (on another server) from
   * `start`, with flow id `id`. At packet level they are a message posted to the persistent connection of
   * (src, dst, comm, channel) (docs/training.md "Connections"), on its QP `ordinal` mod the
   * QPs per connection (its messages in turn), which keeps its CC state and path from
   * message to message; at flow level a message of the connection's fluid flow, which keeps
   * its path and drains its messages one after another.
   */
  MV_HD void sendBetween(uint32_t src, uint32_t dst, uint32_t comm, uint32_t channel, uint32_t rail, uint32_t ordinal,
                         int64_t bytes, int64_t start, uint64_t id) const {
    const uint32_t src_nic = nicOf(src, rail);
    if (cfg().fidelity != NetworkFidelity::kAnalytical) {
      const Entity conn = connectionOf(net::ConnectionKey{src, dst, comm, channel, ordinal % cfg().qps});
      if (conn != Entity::none()) {
        ctx.template table<net::Message>().create(ctx.exp, net::flowKey(src_nic, id),
                                                  net::MessageSpec{conn, id, bytes, start, -1, 0});
        ctx.wakeAt(Picoseconds{start});
        return;
      }
    }
    createFlow(src_nic, nicOf(dst, rail), bytes, start, id);
  }
  /// The Flow row of the connection with `key` (ConnectionIndex, filled by the host for
  /// every pair of ranks on different servers that the experiment's programs connect), or
  /// none.
  MV_HD Entity connectionOf(const net::ConnectionKey& key) const {
    auto& index = ctx.template table<net::ConnectionIndex>();
    int64_t a = index.expBegin(ctx.exp);
    int64_t b = index.expEnd(ctx.exp);
    while (a < b) {
      const int64_t m = (a + b) / 2;
      if (index.template get<net::ConnectionRef>(m).key < key) a = m + 1; else b = m;
    }
    if (a < index.expEnd(ctx.exp) && index.template get<net::ConnectionRef>(a).key == key) {
      return index.template get<net::ConnectionRef>(a).flow;
    }
    return Entity::none();
  }

  // --- pipeline messages -----------------------------------------------------------------

  /// The receive matching send `index` of `sender`.
  MV_HD uint32_t receiverOf(const RankInfo& sender, const TaskDef& send) const {
    return rankAt(send.peer_stage, sender.tp_index, sender.dp_index);
  }
  /// A send of `sender` starts at `t`: over NVLink (or analytically) its arrival is known
  /// now; otherwise it becomes a flow.
  MV_HD void startSend(const RankInfo& sender, uint32_t index, const TaskDef& send, int64_t t) const {
    const uint32_t peer = receiverOf(sender, send);
    const int64_t start = t + cfg().step_latency_ps;
    const bool same_server = serverOf(peer) == serverOf(sender.rank);
    if (same_server || cfg().fidelity == NetworkFidelity::kAnalytical) {
      const int64_t done = start + (same_server ? nvlinkTime(send.bytes) : nicTime(send.bytes));
      deliver(sender, index, send, peer, t, done);
      return;
    }
    // A pair's messages in turn over its QPs: one per micro-batch (and model chunk).
    const uint32_t ordinal = send.micro_batch != kNoTask ? send.micro_batch + send.chunk : index;
    sendBetween(sender.rank, peer, kP2pCommunicator, 0, 0, ordinal, send.bytes, start, p2pFlowId(sender.rank, index));
  }
  /// The message of send `index` arrived at `done`: completes the send and the receive.
  MV_HD void deliver(const RankInfo& sender, uint32_t index, const TaskDef& send, uint32_t peer, int64_t sent,
                     int64_t done) const {
    complete(sender.rank, index, done);
    sentPs(rankInfo(peer), send.peer_task) = sent;
    complete(peer, send.peer_task, done);
  }

  // --- collectives -----------------------------------------------------------------------

  /// Rank `rank` reaches collective `coll` at `t`; the last member starts it.
  MV_HD void arrive(uint32_t coll, int64_t t) const {
    CollInfo& c = collInfo(coll);
    CollState& s = collState(coll);
    atomicFetchMax<int64_t>(&s.arrive_max, t);
    if (atomicFetchAddAcqRel<uint32_t>(&s.arrived, 1u) + 1 != c.members) return;
    const int64_t t0 = atomicLoad<int64_t>(&s.arrive_max);
    const int64_t t1 = t0 + cfg().step_latency_ps;
    if (c.mode == CollMode::kRing) {
      // The first step of every ring of the first phase, chunk by chunk: every chunk, or
      // with a window the first loop's (the others follow their members' receives).
      const RingPhaseDef& p = ringPhase(c, 0);
      for (uint32_t chunk = 0; chunk < ringChunksAtOnce(c.chunks, c.window); ++chunk) {
        for (uint32_t q = 0; q < p.rings; ++q) {
          for (uint32_t i = 0; i < p.size; ++i) {
            startTransfer(coll, c, chunk * c.chunk_transfers + ringStepTransfer(p, q, 0, i), t1);
          }
        }
      }
      return;
    }
    if (c.mode != CollMode::kTransfers) {
      finishCollective(c, t0 + c.analytical_ps);
      return;
    }
    for (uint32_t k = 0; k < c.shape_count; ++k) {
      if (shape(c, k).dep_count == 0) startTransfer(coll, c, k, t1);
    }
  }
  MV_HD void finishCollective(const CollInfo& c, int64_t done) const {
    for (uint32_t k = 0; k < c.members; ++k) complete(member(c, k), memberTask(c, k), done);
  }
  /// Transfer `k` of `coll` starts at `t`, with what follows from it at once.
  MV_HD void startTransfer(uint32_t coll, const CollInfo& c, uint32_t k, int64_t t) const {
    runTransfers(coll, c, k, t, false);
  }
  /// Transfer `k` of `coll` arrived at `t` (its flow finished), with what follows from it at once.
  MV_HD void finishTransfer(uint32_t coll, uint32_t k, int64_t t) const {
    runTransfers(coll, collInfo(coll), k, t, true);
  }

  /**
   * Transfer `k` starts at `t` (or, `arrived`, arrives at `t`), and so does everything that
   * follows at once: a hop inside a server arrives as it starts, and an arrival may release
   * other transfers. A loop, not recursion (one level per NVLink hop, on a GPU thread's stack
   * of a few kB; tests/kernels/check_no_recursion.py). A DAG's released transfers wait on a
   * list linked through their counters (each is released once, by one thread), a ring's one
   * successor goes next.
   */
  MV_HD void runTransfers(uint32_t coll, const CollInfo& c, uint32_t k, int64_t t, bool arrived) const {
    uint32_t waiting = kNoTransfer;
    for (;;) {
      if (!arrived) {
        t = launchTransfer(coll, c, k, t);
        arrived = t != kNever;
      }
      if (arrived) {
        const uint32_t next = transferArrived(coll, c, k, t, waiting);
        if (next != kNoTransfer) {
          k = next;
          t += cfg().step_latency_ps;
          arrived = false;
          continue;
        }
      }
      if (waiting == kNoTransfer) return;
      k = waiting;
      TransferCounter& n = counter(c, k);
      waiting = n.link;
      t = atomicLoad<int64_t>(&n.ready_ps);
      arrived = false;
    }
  }
  /// Starts transfer `k` at `t`: a flow between servers (returns kNever), or an NVLink hop
  /// inside one (returns its arrival).
  MV_HD int64_t launchTransfer(uint32_t coll, const CollInfo& c, uint32_t k, int64_t t) const {
    const RingTransfer d = transfer(c, k);
    const uint32_t src = member(c, d.src);
    const uint32_t dst = member(c, d.dst);
    const int64_t bytes = (c.bytes + d.den - 1) / d.den;
    if (serverOf(src) == serverOf(dst) || bytes == 0) {
      const uint32_t sharing = c.mode == CollMode::kRing ? nvlinkSharing(ringPhase(c, 0)) : shape(c, k).sharing;
      return t + nvlinkTime(bytes * sharing);
    }
    // A connection's messages in turn, in the order its member posts them: a ring's chunk by
    // chunk and step by step, with NCCL's loops loop by loop, step by step and slice by
    // slice; a DAG's in the order of the pair's transfers.
    const bool ring = c.mode == CollMode::kRing;
    const uint32_t ordinal = ring ? ringOrdinal(c, k / c.chunk_transfers, d.step) : shape(c, k).pair_index;
    const uint32_t rail = !ring                ? d.channel % cfg().nics_per_gpu
                          : c.phases == 1 ? railOf(ringPhase(c, 0), d.channel, cfg().nics_per_gpu)
                                          : 0;
    sendBetween(src, dst, c.communicator, d.channel, rail, ordinal, bytes, t,
                transferFlowId(coll, k, cfg().transfer_bits));
    return kNever;
  }
  /**
   * Transfer `k` arrived at `t`: the last transfer completes the collective, and what it
   * releases is ready a step latency later. In a generated ring that is its one successor
   * (whose only predecessor it is), returned; in a DAG each successor whose counter it brings
   * to zero, at the latest of its predecessors' ready times, put on `waiting`.
   */
  MV_HD uint32_t transferArrived(uint32_t coll, const CollInfo& c, uint32_t k, int64_t t, uint32_t& waiting) const {
    CollState& s = collState(coll);
    const int64_t ready = t + cfg().step_latency_ps;
    uint32_t next = kNoTransfer;
    if (c.mode == CollMode::kRing) {
      next = transfer(c, k).next;
    } else {
      const TransferDef& d = shape(c, k);
      for (uint32_t j = 0; j < d.succ_count; ++j) {
        const uint32_t succ = nextTransfer(d, j);
        TransferCounter& n = counter(c, succ);
        atomicFetchMax<int64_t>(&n.ready_ps, ready);
        if (atomicFetchAddAcqRel<int32_t>(&n.deps_left, -1) == 1) {
          n.link = waiting;
          waiting = succ;
        }
      }
    }
    atomicFetchMax<int64_t>(&s.done_max, ready);
    if (atomicFetchAddAcqRel<uint32_t>(&s.transfers_done, 1u) + 1 == c.shape_count) {
      finishCollective(c, atomicLoad<int64_t>(&s.done_max));
    }
    return next;
  }
};

/// Consumes the flow records of finished training flows (one row each). The records it sees
/// were committed in earlier steps and it touches no fluid state, so it runs beside the fluid
/// event loop, which follows fluid_prepare (a level after the NIC and switch systems).
template <class WV>
struct FlowCompletionSystem {
  static constexpr const char* kName = "flow_completion";
  static constexpr const char* kWhy =
      "turn finished flows into delivered pipeline messages and collective progress (next transfers, completion)";
  using After = TypeList<net::NicSystem<WV>, net::SwitchSystem<WV>>;
  using Ctx = RowContext<WV>;

  MV_HD static void run(const Ctx& ctx, const net::FlowResult& r) {
    if (r.finish_ps >= ctx.window_end.ps) {  // a fluid connection's message records its finish ahead
      ctx.wakeAt(Picoseconds{r.finish_ps});
      return;
    }
    const TrainOps<Ctx> ops{ctx};
    if (ops.cfg().log_flows != 0) {
      // Keyed by (the experiment's step, the record's row in it), 32 bits each: a flow key
      // recurs once its flow ends (ring transfers reuse theirs).
      auto& records = ctx.template table<net::FlowRecord>();
      const uint64_t key = (static_cast<uint64_t>(ctx.world->clocks[ctx.exp].steps) << 32) |
                           static_cast<uint64_t>(ctx.row - records.expBegin(ctx.exp));
      ctx.template table<FlowLog>().create(ctx.exp, key, LoggedFlow{r});
    }
    if (isTransferFlow(r.id)) {
      const uint32_t bits = ops.cfg().transfer_bits;
      ops.finishTransfer(flowCollective(r.id, bits), flowTransfer(r.id, bits), r.finish_ps);
    } else {
      const uint32_t rank = static_cast<uint32_t>(r.id >> 20);
      const uint32_t index = static_cast<uint32_t>(r.id & (kMaxFlowTasks - 1));
      const RankInfo& sender = ops.rankInfo(rank);
      const TaskDef& send = ops.task(sender, index);
      ops.deliver(sender, index, send, ops.receiverOf(sender, send), r.start_ps,
                  r.finish_ps + ops.cfg().step_latency_ps);
    }
    ctx.template table<net::FlowRecord>().destroyRow(ctx.row);
  }
};

/// Advances one rank: its streams run their tasks in program order at exact times.
template <class WV>
struct RankSystem {
  static constexpr const char* kName = "rank";
  static constexpr const char* kWhy =
      "start ready tasks on each stream of each rank, finish compute at exact times, arrive at collectives, send pipeline messages";
  using After = TypeList<FlowCompletionSystem<WV>>;
  using Ctx = RowContext<WV>;

  MV_HD static void run(const Ctx& ctx, const RankInfo& info, RankStreams& st, RankTimes& times) {
    const TrainOps<Ctx> ops{ctx};
    const int64_t end = ctx.window_end.ps;
    // Nothing happens to this rank in the window: report its next event and stop.
    const int64_t earliest = st.nextWake();
    if (earliest >= end) {
      if (earliest != kNever) ctx.wakeAt(Picoseconds{earliest});
      return;
    }
    st.takeCompletions();
    for (;;) {
      int64_t best = kNever;
      int best_stream = -1;
      bool best_finish = false;
      for (int s = 0; s < kStreams; ++s) {
        if (st.running[s] == kNoTask) continue;
        const int64_t t = finishTime(ops, info, st, s);
        if (t < best) {
          best = t;
          best_stream = s;
          best_finish = true;
        }
      }
      for (int s = 0; s < kStreams; ++s) {
        if (st.running[s] != kNoTask) continue;
        const uint32_t next = headOf(ops, info, st, s);
        if (next == kNoTask) continue;
        const TaskState& ts = ops.state(info, next);
        if (ts.deps_left != 0) continue;
        const int64_t t = ts.ready_ps > st.busy_until[s] ? ts.ready_ps : st.busy_until[s];
        if (t < best) {
          best = t;
          best_stream = s;
          best_finish = false;
        }
      }
      if (best >= end) {
        st.wake_self = best;
        if (best != kNever) ctx.wakeAt(Picoseconds{best});
        return;
      }
      if (best_finish) {
        finish(ops, info, st, times, best_stream, best);
      } else {
        start(ops, info, st, times, best_stream, best);
      }
      if (best_stream == kDpStream) restretch(ops, info, st, best, !best_finish);
    }
  }

 private:
  /// The stream's next task in program order (kNoTask when it has none left).
  MV_HD static uint32_t headOf(const TrainOps<Ctx>& ops, const RankInfo& info, RankStreams& st, int s) {
    while (st.next[s] < info.task_count && ops.task(info, st.next[s]).stream != s) ++st.next[s];
    return st.next[s] < info.task_count ? st.next[s] : kNoTask;
  }
  MV_HD static int64_t finishTime(const TrainOps<Ctx>& ops, const RankInfo& info, const RankStreams& st, int s) {
    const TaskDef& d = ops.task(info, st.running[s]);
    if (isTimed(d.kind)) return st.busy_until[s];
    const int64_t done = atomicLoad<int64_t>(&ops.commState(info, d).done_ps);
    if (done == kNever) return kNever;
    return done > st.start[s] ? done : st.start[s];
  }

  MV_HD static void start(const TrainOps<Ctx>& ops, const RankInfo& info, RankStreams& st, RankTimes& times, int s,
                          int64_t t) {
    const uint32_t index = st.next[s];
    const TaskDef& d = ops.task(info, index);
    if (s == kComputeStream) {
      const int64_t sent = d.sent_slot == kNoTask ? 0 : ops.sentPs(info, d);
      chargeGap(ops.state(info, index).ready_kind, sent, st.busy_until[s], t, times);
    }
    st.running[s] = index;
    st.start[s] = t;
    st.next[s] = index + 1;
    switch (d.kind) {
      case TaskKind::kCompute: {
        st.work_left = jittered(ops.cfg(), info.rank, index, d.compute_ps);
        st.work_since = t;
        st.busy_until[s] = t + atRate(ops, st.work_left, st.running[kDpStream] != kNoTask) + d.tp_ps;
        break;
      }
      case TaskKind::kSend:
        ops.startSend(info, index, d, t);
        break;
      case TaskKind::kRecv:
        break;
      case TaskKind::kCollective:
        ops.arrive(info.collective(d.comm, d.seq), t);
        break;
      case TaskKind::kCopy:
        st.busy_until[s] = t + d.compute_ps;
        break;
    }
  }

  /// Time `work` ps of kernel time at full speed take: stretched by the overlap factor while
  /// the DP stream communicates (`slowed`).
  MV_HD static int64_t atRate(const TrainOps<Ctx>& ops, int64_t work, bool slowed) {
    const uint32_t ppm = ops.cfg().overlap_ppm;
    if (!slowed || ppm == kSlowdownOne) return work;
    return static_cast<int64_t>((static_cast<Int128>(work) * ppm + kSlowdownOne - 1) / kSlowdownOne);
  }

  /**
   * The DP stream started (`now_slowed`) or finished a collective at `t`: the running compute
   * task's kernels run at the other speed from `t` on. Its kernel time left is what it had
   * at `work_since` less what the elapsed time did at the old speed; its TP collectives
   * follow its kernels and are never slowed. Events are handled in time order and a DP
   * completion before the window's end is known when the window starts, so the overlap is
   * exact to the picosecond on every backend.
   */
  MV_HD static void restretch(const TrainOps<Ctx>& ops, const RankInfo& info, RankStreams& st, int64_t t,
                              bool now_slowed) {
    const uint32_t running = st.running[kComputeStream];
    if (running == kNoTask || st.work_left == 0 || ops.cfg().overlap_ppm == kSlowdownOne) return;
    const TaskDef& d = ops.task(info, running);
    if (d.kind != TaskKind::kCompute) return;
    const int64_t elapsed = t - st.work_since;
    const int64_t done =
        now_slowed ? elapsed
                   : static_cast<int64_t>(static_cast<Int128>(elapsed) * kSlowdownOne / ops.cfg().overlap_ppm);
    st.work_since = t;
    if (done >= st.work_left) {  // only its TP collectives are left
      st.work_left = 0;
      return;
    }
    st.work_left -= done;
    st.busy_until[kComputeStream] = t + atRate(ops, st.work_left, now_slowed) + d.tp_ps;
  }

  /// Kernel time `ps` of task `index` of rank `rank` with the experiment's compute jitter: a
  /// factor uniform in [1 − j, 1 + j] (j = jitter_ppm / 10^6) drawn from the seeded stream of
  /// the rank, so the same on every backend, thread count and batch. Synchronous collectives
  /// wait for their slowest member: the jitter costs more the larger the group.
  MV_HD static int64_t jittered(const TrainConfig& c, uint32_t rank, uint32_t index, int64_t ps) {
    if (c.jitter_ppm == 0) return ps;
    const RandomStream stream{c.jitter_seed, 0, rank};
    const int64_t offset =
        static_cast<int64_t>(stream.below(index, 2 * uint64_t{c.jitter_ppm} + 1)) - int64_t{c.jitter_ppm};
    return static_cast<int64_t>((static_cast<Int128>(ps) * (kSlowdownOne + offset) + kSlowdownOne - 1) / kSlowdownOne);
  }

  /// Idle time of the compute stream before a task, by what it waited for: a pipeline
  /// message's time in flight is exposed PP communication, waiting before it was sent is
  /// the bubble; DP/EP/CP collectives are exposed DP/EP/CP communication, a reload of offloaded
  /// activations is exposed offload, and the collectives of per-rank programs count as DP
  /// (kGroup: their process groups carry no parallelism).
  MV_HD static void chargeGap(CommKind ready_kind, int64_t sent_ps, int64_t idle_since, int64_t t, RankTimes& times) {
    const int64_t gap = t - idle_since;
    if (gap <= 0) return;
    switch (ready_kind) {
      case CommKind::kPp: {
        const int64_t from = sent_ps > idle_since ? sent_ps : idle_since;
        const int64_t in_flight = t - from < 0 ? 0 : (t - from > gap ? gap : t - from);
        times.pp += in_flight;
        times.bubble += gap - in_flight;
        break;
      }
      case CommKind::kDp:
      case CommKind::kExpertDp:
      case CommKind::kGroup:
        times.dp += gap;
        break;
      case CommKind::kEp:
        times.ep += gap;
        break;
      case CommKind::kCp:
        times.cp += gap;
        break;
      case CommKind::kOffload:
        times.offload += gap;
        break;
      default:
        times.bubble += gap;
        break;
    }
  }

  MV_HD static void finish(const TrainOps<Ctx>& ops, const RankInfo& info, RankStreams& st, RankTimes& times, int s,
                           int64_t t) {
    const uint32_t index = st.running[s];
    const TaskDef& d = ops.task(info, index);
    if (s == kComputeStream && d.kind == TaskKind::kCollective) times.ep += t - st.start[s];
    if (s == kComputeStream && d.kind == TaskKind::kCompute) {  // a task cut off by a time limit counts nothing
      times.compute += t - st.start[s] - d.tp_ps;
      times.tp += d.tp_ps;
      st.work_left = 0;
    }
    for (uint32_t k = 0; k < d.succ_count; ++k) {
      const uint32_t succ = ops.successor(info, d.succ_begin + k);
      TaskState& n = ops.state(info, succ);
      n.deps_left -= 1;
      if (t >= n.ready_ps) {
        n.ready_ps = t;
        n.ready_kind = d.comm;
        if (d.kind == TaskKind::kRecv) ops.sentPs(info, succ) = ops.sentPs(info, d);
      }
    }
    if (ops.cfg().trace != 0) {
      ops.ctx.template table<TaskSpan>().create(ops.ctx.exp, (uint64_t{info.rank} << 32) | index,
                                                TaskSpanData{info.rank, index, st.start[s], t});
    }
    st.running[s] = kNoTask;
    st.busy_until[s] = t;
    if (s == kComputeStream) {
      times.compute_end = t;
    } else if (t >= times.finish) {
      times.tail_kind = d.comm;
    }
    times.finish = t > times.finish ? t : times.finish;
    times.tasks_done += 1;
  }
};

}  // namespace mv::train
