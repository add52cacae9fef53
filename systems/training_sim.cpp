#include "systems/training_sim.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analytical/gpu.hpp"
#include "analytical/nccl_tuner.hpp"
#include "analytical/overlap.hpp"
#include "ecs/engine.hpp"
#include "ecs/graph.hpp"
#include "ecs/quantity.hpp"
#include "ecs/world.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "network/builder.hpp"
#include "network/detail_csv.hpp"
#include "network/flow_builder.hpp"
#include "systems/collective_shapes.hpp"
#include "systems/connections.hpp"
#include "systems/flow_files.hpp"
#include "systems/network_layout.hpp"
#include "systems/training_world.hpp"
#include "topologies/routing.hpp"
#include "workloads/chakra_program.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/flops.hpp"
#include "workloads/simai.hpp"
#include "workloads/task_graph.hpp"

namespace mv {

namespace {

using namespace train;

/// HBM per GPU of the experiment's cluster.
Bytes hbmOf(const TrainingExperiment& x) {
  return clusterGpu(x.cluster).hbm_capacity;
}

/// Algorithm used for `op` by this experiment.
CollectiveAlgorithm algorithmFor(const CollectiveAlgorithms& a, CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return a.all_gather;
    case CollectiveOp::kReduceScatter:
      return a.reduce_scatter;
    case CollectiveOp::kAllToAll:
      return a.all_to_all;
    default:
      return a.all_reduce;
  }
}

/// Host-side plan of one experiment.
struct Plan {
  TrainingProgram program;
  net::NetworkLayout layout;
  TrainConfig cfg;
  int64_t lookahead_ps = 0;
};

/// The program of experiment x's Chakra traces, in the layout it asks for (docs/chakra.md).
TrainingProgram chakraProgram(const TrainingExperiment& x, const ComputeModel& compute) {
  // Traces are read one (or, for a stage's comparison, two) at a time, as they are imported.
  const uint32_t ranks = x.cluster.gpus;
  const TraceSource trace_of = [&](uint32_t r) { return readRankTrace(x.chakra, r, ranks); };
  // auto: per rank with a group file, or when rank 0's collectives name other groups.
  const bool per_rank = x.chakra_layout == ChakraLayout::kRanks ||
                        (x.chakra_layout == ChakraLayout::kAuto &&
                         (!x.chakra_groups.empty() || usesOtherGroups(readRankTrace(x.chakra, 0, ranks))));
  if (!per_rank) return programFromChakra(trace_of, ranks, x.parallelism);
  const CommGroups groups = x.chakra_groups.empty() ? CommGroups{} : readCommGroups(x.chakra_groups, ranks);
  return programFromRankTraces(trace_of, ranks, groups, compute, x.training.precision);
}

/// The program of experiment x generated with `po` or read from its traces.
TrainingProgram programOf(const TrainingExperiment& x, const GpuSpec& gpu, const ProgramOptions& po) {
  if (x.collective.enabled) return collectiveBenchmarkProgram(x.collective.op, x.collective.bytes, x.collective.iters);
  const ComputeModel compute(computeSpecOf(gpu), x.cluster.compute, x.operator_times);
  if (!x.simai.empty()) return programFromSimai(readSimaiWorkload(x.simai), po.tp_model, po.tp_bandwidth_factor);
  return x.chakra.empty() ? buildTrainingProgram(x.model, x.training, x.parallelism, compute, po)
                          : chakraProgram(x, compute);
}

}  // namespace

TrainingProgram trainingProgramOf(const TrainingExperiment& x) {
  const GpuSpec gpu = clusterGpu(x.cluster);
  return programOf(x, gpu, programOptionsOf(x, gpu));
}

ProgramOptions programOptionsOf(const TrainingExperiment& x, const GpuSpec& gpu) {
  ProgramOptions po;
  po.dp_bucket = x.collectives.dp_bucket;
  po.tp_model = makeCollectiveModel(gpu, x.cluster.intra);
  po.tp_bandwidth_factor = x.cluster.tp_bandwidth_factor;
  po.host_copy_bytes_per_s = static_cast<double>(gpu.host_link.bps) / 8 * x.cluster.host_copy_efficiency;
  po.overlap_slowdown = gemmOverlapSlowdown(x.cluster, gpu).toDouble();
  return po;
}


namespace {

Plan makePlan(const TrainingExperiment& x) {
  Plan p;
  const GpuSpec gpu = clusterGpu(x.cluster);
  const ProgramOptions po = programOptionsOf(x, gpu);
  p.program = programOf(x, gpu, po);
  const Routing routing = computeRouting(x.topology);
  p.layout = makeNetworkLayout(x.topology, routing, x.network.payload_bytes);
  TrainConfig& c = p.cfg;
  c.fidelity = x.fidelity;
  c.step_latency_ps = x.collectives.step_latency.ps;
  // Analytical goodput: payload share of the data packets and of the ACKs that share the
  // links with them in bidirectional collective traffic.
  int64_t line = 0;
  for (const net::LayoutNic& n : p.layout.nics) line = std::max(line, n.rate_bps);
  const int64_t payload = x.network.payload_bytes;
  const int64_t wire = net::dataWireBytes(x.network.payload_bytes, x.network.cc, x.network.wire) +
                       net::ackWireBytes(net::CcKind::kNone, x.network.wire) / std::max<int32_t>(x.network.ack_interval, 1);
  // GPUs sharing a NIC communicate at once (the TP ranks of a server move in lockstep), so
  // each gets its share.
  const int64_t sharing = std::max<int64_t>(1, x.cluster.gpus_per_server / std::max<uint32_t>(x.cluster.nics_per_server, 1));
  c.nic_rate_bps = static_cast<int64_t>(static_cast<Int128>(line) * payload / (wire * sharing));
  // A transfer completes at its sender when the last byte is acknowledged: a round trip.
  c.path_latency_ps = p.layout.max_rtt_ps;
  c.nvlink_bps = gpu.nvlink_bandwidth.bps / 2;
  // Per-rank programs run as one rank per stage.
  const bool per_rank = p.program.per_rank;
  c.tp = per_rank ? 1 : x.parallelism.tp;
  c.pp = per_rank ? static_cast<uint32_t>(p.program.stages.size()) : x.parallelism.pp;
  c.dp = per_rank ? 1 : dataParallelRanks(x.parallelism);  // the CP ranks of a replica are consecutive
  c.cp = per_rank ? 1 : x.parallelism.cp;
  c.ep = per_rank ? 1 : x.parallelism.ep;
  c.gpus_per_server = x.cluster.gpus_per_server;
  c.nics_per_server = x.cluster.nics_per_server;
  c.nics_per_gpu = std::max<uint32_t>(1, x.cluster.nics_per_server / std::max<uint32_t>(x.cluster.gpus_per_server, 1));
  c.priority = x.collectives.priority;
  c.qps = std::max<uint32_t>(x.collectives.qps_per_connection, 1);
  c.intra = po.tp_model;
  c.overlap_ppm = gemmOverlapSlowdown(x.cluster, gpu).ppm;
  c.jitter_ppm = static_cast<uint32_t>(std::llround(x.cluster.compute_jitter * kSlowdownOne));
  c.jitter_seed = mix64(x.seed ^ mix64(x.id));
  // Sends start step_latency after their cause and are seen by the NICs one step later:
  // a step of at most half the step latency keeps every send in the future (training.md).
  p.lookahead_ps = std::min(p.layout.min_delay_ps, c.step_latency_ps / 2);
  return p;
}

/// Appends the rows of `table` for experiment e from `values` and returns the first row.
template <class A, class T, class F>
int64_t appendRows(TrainWorld& world, ExpId e, const std::vector<T>& values, F&& set) {
  const int64_t first = world.appendStatic<A>(e, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) set(world.table<A>(), first + static_cast<int64_t>(i), values[i]);
  return first;
}

/// Builds the collectives of experiment e: DP groups (stage, tp index), expert-DP groups
/// (stage, tp index, dp mod ep), CP groups (stage, tp index, dp / cp) and EP groups (stage,
/// tp index, dp / ep), with dp the data-parallel index with CP; fills each rank's collective
/// bases.
class CollectiveBuilder {
 public:
  CollectiveBuilder(TrainWorld& world, ExpId e, const TrainingExperiment& x, const Plan& plan)
      : world_(world), e_(e), x_(x), plan_(plan) {}

  void build(std::vector<RankInfo>& ranks) {
    if (plan_.program.per_rank) {
      buildGroupCollectives();
      return;
    }
    const TrainConfig& c = plan_.cfg;
    for (uint32_t s = 0; s < c.pp; ++s) {
      const StageProgram& prog = plan_.program.stages[s];
      for (uint32_t t = 0; t < c.tp; ++t) {
        if (prog.dp_collectives > 0) {
          const auto base = static_cast<uint32_t>(infos_.size());
          std::vector<uint32_t> members;
          for (uint32_t d = 0; d < c.dp; ++d) members.push_back(rankAt(s, t, d));
          for (uint32_t d = 0; d < c.dp; ++d) ranks[rankAt(s, t, d)].dp_coll_base = base;
          addGroup(prog, CommKind::kDp, members);
        }
        if (prog.expert_dp_collectives > 0) {
          // Expert-data-parallel groups: the ranks holding the same experts, dp index j,
          // j + ep, j + 2·ep, ...
          for (uint32_t j = 0; j < c.ep; ++j) {
            const auto base = static_cast<uint32_t>(infos_.size());
            std::vector<uint32_t> members;
            for (uint32_t d = j; d < c.dp; d += c.ep) members.push_back(rankAt(s, t, d));
            for (uint32_t r : members) ranks[r].expert_dp_coll_base = base;
            addGroup(prog, CommKind::kExpertDp, members);
          }
        }
        // Context-parallel groups: the cp consecutive data-parallel indices of one replica.
        if (prog.cp_collectives > 0)
          addConsecutiveGroups(prog, CommKind::kCp, s, t, c.cp, ranks, &RankInfo::cp_coll_base);
        if (prog.ep_collectives > 0)
          addConsecutiveGroups(prog, CommKind::kEp, s, t, c.ep, ranks, &RankInfo::ep_coll_base);
      }
    }
  }

  /// Writes the collected rows (after the rank tables of experiment e).
  void commit() {
    appendRows<Collective>(world_, e_, infos_, [](auto& t, int64_t r, const CollInfo& v) { t.template get<CollInfo>(r) = v; });
    appendRows<GroupMember>(world_, e_, members_,
                            [](auto& t, int64_t r, const Member& v) { t.template get<Member>(r) = v; });
    appendRows<TransferShape>(world_, e_, shapes_, [](auto& t, int64_t r, const TransferDef& v) { t.template get<TransferDef>(r) = v; });
    appendRows<TransferSucc>(world_, e_, succs_, [](auto& t, int64_t r, uint32_t v) { t.template get<TransferNext>(r) = TransferNext{v}; });
    appendRows<TransferState>(world_, e_, counters_, [](auto& t, int64_t r, const TransferCounter& v) { t.template get<TransferCounter>(r) = v; });
    appendRows<RingShape>(world_, e_, ring_phases_,
                          [](auto& t, int64_t r, const RingPhaseDef& v) { t.template get<RingPhaseDef>(r) = v; });
  }

  /// Bits a transfer's index takes in its flow id (TrainConfig::transfer_bits): 18, or
  /// more when a collective has more transfers; the collective rows must fit the rest.
  uint32_t transferBits() const {
    uint32_t bits = kMinTransferBits;
    while (bits < kTransferIdBits && (uint64_t{1} << bits) < max_transfers_) ++bits;
    if ((uint64_t{1} << (kTransferIdBits - bits)) < infos_.size()) {
      throw TrainingError("collectives.chunk: " + std::to_string(infos_.size()) + " collectives of up to " +
                          std::to_string(max_transfers_) +
                          " transfers each cannot be numbered in 39-bit flow ids; "
                          "raise collectives.buffer (the ring's and the tree's chunks), the chunk size or "
                          "dp_bucket, or lower collectives.channels (with "
                          "parallelism.zero 3: one gather per layer, pass and micro-batch, so fewer micro-batches "
                          "or layers per stage)");
    }
    return bits;
  }

  /// Flows the collectives may have at once: per group and stream, the most transfers one
  /// of its collectives has in flight (members run a stream's collectives one after another).
  int64_t liveFlows() const { return live_flows_; }
  size_t collectives() const { return infos_.size(); }

  /// Appends the connections the collectives' transfers between servers use: per group and
  /// shape, the pairs a ring's first step joins in each of its phases and channels (every
  /// step joins the same ones), or every pair of a DAG on its channel. NICs from `ranks`, the
  /// channel's rail of each (railOf).
  void collectConnections(const std::vector<RankInfo>& ranks, std::vector<ConnectionEnds>& out) const {
    std::set<std::pair<uint32_t, uint32_t>> seen;  // (member_base, shape_base) of a ring; DAGs by shape too
    for (const CollInfo& c : infos_) {
      if (c.mode != CollMode::kRing && c.mode != CollMode::kTransfers) continue;
      if (!seen.insert({c.member_base, c.shape_base * 2 + (c.mode == CollMode::kRing ? 1u : 0u)}).second) continue;
      auto add = [&](uint32_t src_member, uint32_t dst_member, uint32_t channel, uint32_t rail) {
        const uint32_t src = members_[c.member_base + src_member].rank;
        const uint32_t dst = members_[c.member_base + dst_member].rank;
        if (serverOf(src) == serverOf(dst)) return;
        out.push_back(ConnectionEnds{net::ConnectionKey{src, dst, c.communicator, channel}, ranks[src].nic + rail,
                                     ranks[dst].nic + rail});
      };
      if (c.mode == CollMode::kTransfers) {
        for (uint32_t k = 0; k < c.shape_count; ++k) {
          const TransferDef& d = shapes_[c.shape_base + k];
          add(d.src, d.dst, d.channel, d.channel % plan_.cfg.nics_per_gpu);
        }
        continue;
      }
      for (uint32_t p = 0; p < c.phases; ++p) {
        const RingPhaseDef& ph = ring_phases_[c.shape_base + p];
        for (uint32_t q = 0; q < ph.rings; ++q) {
          for (uint32_t i = 0; i < ph.size; ++i) {
            const RingTransfer t =
                ringTransfer(&ring_phases_[c.shape_base], c.phases, c.chunks, c.window, c.chunk_transfers,
                             ringStepTransfer(ph, q, 0, i));
            add(t.src, t.dst, t.channel, c.phases == 1 ? railOf(ph, q, plan_.cfg.nics_per_gpu) : 0);
          }
        }
      }
    }
  }

 private:
  uint32_t rankAt(uint32_t s, uint32_t t, uint32_t d) const { return megatronRank(plan_.cfg.tp, plan_.cfg.dp, s, t, d); }
  uint32_t serverOf(uint32_t r) const { return r / plan_.cfg.gpus_per_server; }

  /// The groups of `size` consecutive data-parallel indices of stage `s` and TP index `t`,
  /// with the collectives of kind `kind`; each member's `base` is its group's first row.
  void addConsecutiveGroups(const StageProgram& prog, CommKind kind, uint32_t s, uint32_t t, uint32_t size,
                            std::vector<RankInfo>& ranks, uint32_t RankInfo::*base) {
    for (uint32_t g = 0; g < plan_.cfg.dp / size; ++g) {
      const auto first = static_cast<uint32_t>(infos_.size());
      std::vector<uint32_t> members;
      for (uint32_t j = 0; j < size; ++j) members.push_back(rankAt(s, t, g * size + j));
      for (uint32_t r : members) ranks[r].*base = first;
      addGroup(prog, kind, members);
    }
  }

  /// The id of the communicator of `members` and `kind` (a new one the first time).
  uint32_t communicatorOf(const std::vector<uint32_t>& members, uint32_t kind) {
    const auto next = static_cast<uint32_t>(communicators_.size());
    return communicators_.try_emplace({members, kind}, next).first->second;
  }

  /// The collectives of stage program `prog` of kind `kind`, over `members` (one row each,
  /// shared by the group's collectives).
  void addGroup(const StageProgram& prog, CommKind kind, const std::vector<uint32_t>& members) {
    const auto member_base = static_cast<uint32_t>(members_.size());
    for (const uint32_t r : members) members_.push_back(Member{r});
    const uint32_t communicator = communicatorOf(members, static_cast<uint32_t>(kind));
    std::array<int64_t, kStreams> live{};
    for (uint32_t i = 0; i < prog.tasks.size(); ++i) {
      const TaskDef& d = prog.tasks[i];
      if (d.kind != TaskKind::kCollective || d.comm != kind) continue;
      live[d.stream] = std::max(live[d.stream], addCollective(d, i, member_base, members, communicator));
    }
    for (const int64_t l : live) live_flows_ += l;
  }

  /// The collectives of per-rank programs, in their seq order, each with member rows of its
  /// own (a member's task differs by rank). Flows in flight are bounded per collective
  /// stream of each communicator, as for stage programs.
  void buildGroupCollectives() {
    std::map<std::pair<std::vector<uint32_t>, uint8_t>, int64_t> live;
    for (const GroupCollective& g : plan_.program.group_collectives) {
      const auto member_base = static_cast<uint32_t>(members_.size());
      for (size_t m = 0; m < g.ranks.size(); ++m) members_.push_back(Member{g.ranks[m], g.tasks[m]});
      const TaskDef& d = plan_.program.stages[g.ranks[0]].tasks[g.tasks[0]];
      int64_t& l = live[{g.ranks, d.stream}];
      // One communicator per member list (its collectives share its connections).
      l = std::max(l, addCollective(d, g.tasks[0], member_base, g.ranks, communicatorOf(g.ranks, 0)));
    }
    for (const auto& [key, l] : live) live_flows_ += l;
  }

  /// One collective of task `d` (program index `task`) over `members`, whose rows start at
  /// `member_base`; returns the most transfers it has in flight.
  int64_t addCollective(const TaskDef& d, uint32_t task, uint32_t member_base, const std::vector<uint32_t>& members,
                        uint32_t communicator) {
    const bool one_server = std::all_of(members.begin(), members.end(),
                                        [&](uint32_t r) { return serverOf(r) == serverOf(members.front()); });
    CollInfo info;
    info.op = d.op;
    info.comm = d.comm;
    info.algorithm = algorithmFor(x_.collectives, d.op);
    info.members = static_cast<uint32_t>(members.size());
    info.member_base = member_base;
    info.task = task;
    info.communicator = communicator;
    info.bytes = d.bytes;
    if (info.algorithm == CollectiveAlgorithm::kAuto) {
      info.algorithm = CollectiveAlgorithm::kRing;  // inside one server: the intra-server model
      if (!one_server) chooseAlgorithm(info, members);
    }
    if (plan_.program.per_rank && !one_server &&
        !algorithmSupports(info.algorithm, d.op, info.members, membersPerServer(info))) {
      // Stage programs' groups are checked from the parallelism (checkTrainingExperiment).
      throw TrainingError("collectives: " + std::string(algorithmName(info.algorithm)) + " cannot run " +
                          collectiveOpName(d.op) + " over " + std::to_string(info.members) + " ranks, " +
                          std::to_string(membersPerServer(info)) + " on the first one's server");
    }
    if (!one_server) info.channels = static_cast<uint16_t>(channelsOf(info));
    int64_t live = 0;
    const int64_t floor = plan_.cfg.step_latency_ps;
    if (one_server) {
      info.mode = CollMode::kIntraServer;
      info.analytical_ps = std::max(
          floor, collectiveTime(plan_.cfg.intra, d.op, static_cast<int32_t>(members.size()), Bytes{d.bytes}).ps);
    } else if (x_.fidelity == NetworkFidelity::kAnalytical) {
      info.mode = CollMode::kAnalytical;
      // As the transfers would: the first sends start one step latency after the last
      // arrival, and every step costs a step latency and a round trip.
      AnalyticalPath path;
      path.nic_rate_bps = plan_.cfg.nic_rate_bps;
      // Rings stay on their rails (RingPhaseDef): their hops take the longest same-rail round trip.
      const bool rails = generatedRing(info.algorithm) || info.algorithm == CollectiveAlgorithm::kTree;
      path.step_ps = floor + (rails ? plan_.layout.rail_rtt_ps : plan_.cfg.path_latency_ps);
      path.per_server = serverBlock(info);
      path.nvlink_bps = plan_.cfg.nvlink_bps;
      path.nvlink_step_ps = floor;
      path.channels = info.channels;
      path.nics_per_member = plan_.cfg.nics_per_gpu;
      const RingChunking chunking = chunksOf(info, path.channels);
      path.chunks = chunking.chunks;
      path.window = chunking.window;
      info.analytical_ps = floor + analyticalTime(d.op, info.algorithm, info.members, d.bytes, path);
    } else {
      info.mode = CollMode::kTransfers;
      live = addTransfers(info);
    }
    infos_.push_back(info);
    return live;
  }

  /// collectives.<op>: auto. What NCCL's tuner would run `info` with between servers
  /// (analytical/nccl_tuner.hpp): the ring or, for all-reduce, the tree, each in its auto
  /// channels, and the protocol it picked. The graph's per-channel bandwidths come from the
  /// cluster: the ring's the NIC goodput shared by the channels on a NIC; the tree's on 2
  /// servers of several members (where NCCL's tuner takes the bandwidth inside a server) the
  /// NVLink bandwidth over its channels, else the NIC goodput shared as the ring's.
  void chooseAlgorithm(CollInfo& info, const std::vector<uint32_t>& members) {
    NcclTunerShape s;
    s.op = info.op;
    s.ranks = info.members;
    std::set<uint32_t> servers;
    for (uint32_t r : members) servers.insert(serverOf(r));
    s.nodes = static_cast<uint32_t>(servers.size());
    const TrainConfig& c = plan_.cfg;
    const double nics = static_cast<double>(membersPerServer(info)) * c.nics_per_gpu;
    CollInfo ring = info;
    ring.algorithm = CollectiveAlgorithm::kRing;
    s.ring_channels = channelsOf(ring);
    CollInfo tree = info;
    tree.algorithm = CollectiveAlgorithm::kTree;
    s.tree_channels = channelsOf(tree);
    const uint32_t chain = treeBlock(info.members, serverBlock(tree));
    const double nic_gbs = static_cast<double>(c.nic_rate_bps) / 8e9;
    s.ring_bw_gbs = nic_gbs * std::min(1.0, nics / s.ring_channels);
    s.tree_bw_gbs = chain > 1 && s.nodes <= 2 ? static_cast<double>(c.nvlink_bps) / 8e9 / s.tree_channels
                                              : nic_gbs * std::min(1.0, nics / s.tree_channels);
    s.arch = clusterGpu(x_.cluster).architecture;
    const NcclChoice choice = ncclTunerChoice(s, info.bytes);
    info.algorithm = choice.algorithm == NcclAlgorithm::kTree ? CollectiveAlgorithm::kTree : CollectiveAlgorithm::kRing;
    info.protocol = static_cast<uint8_t>(choice.protocol);
  }

  /// Consecutive members of a collective's group on one server (groups are laid out in
  /// rank order, so a server holds a contiguous run of them).
  uint32_t membersPerServer(const CollInfo& info) const {
    const uint32_t first = serverOf(members_[info.member_base].rank);
    uint32_t k = 0;
    while (k < info.members && serverOf(members_[info.member_base + k].rank) == first) ++k;
    return k;
  }

  /// The members per server an algorithm arranges `info`'s group by: the hierarchical
  /// algorithm the first server's (membersPerServer); the ring's channels and the tree's
  /// chains g only when the group is whole servers of g consecutive members each, else 1
  /// (no rotation, no chains).
  uint32_t serverBlock(const CollInfo& info) const {
    const uint32_t g = membersPerServer(info);
    if (info.algorithm != CollectiveAlgorithm::kRing && info.algorithm != CollectiveAlgorithm::kTree) return g;
    if (info.members % g != 0) return 1;
    auto server = [&](uint32_t i) { return serverOf(members_[info.member_base + i].rank); };
    for (uint32_t i = g; i < info.members; ++i) {
      const bool same = server(i) == server(i - 1);
      if (same == (i % g == 0)) return 1;
    }
    return g;
  }

  /// Channels of `info`'s algorithm (collectives.channels; auto: one per NIC its members
  /// have on a server when the group is whole servers, serverBlock, else one per NIC of a
  /// member, and for the tree at least its two trees); 1 for the other algorithms.
  uint32_t channelsOf(const CollInfo& info) const {
    const bool tree = info.algorithm == CollectiveAlgorithm::kTree;
    if (info.algorithm != CollectiveAlgorithm::kRing && !tree) return 1;
    if (x_.collectives.channels != 0) return x_.collectives.channels;
    const uint32_t g = serverBlock(info);
    const uint32_t per_nic = tree ? std::max(2u, treeBlock(info.members, g)) : ringRotation(info.members, g, g);
    return std::min(kMaxRingChannels, per_nic * plan_.cfg.nics_per_gpu);
  }

  /// The pipelined chunks (1..64) of `info` in `channels` channels, and for the ring its window
  /// (NCCL's loops: ncclRingChunking); the tree's are NCCL's tree chunks, the other
  /// algorithms' per-peer transfers split at collectives.chunk (window 0: all at once).
  RingChunking chunksOf(const CollInfo& info, uint32_t channels) const {
    const int64_t buffer = x_.collectives.buffer.count;
    const int64_t per_peer = info.bytes / info.members / channels;
    if (info.algorithm == CollectiveAlgorithm::kTree) {
      return RingChunking{ncclTreeChunks(info.bytes / channels, treeDepth(info.members, serverBlock(info)), buffer), 0};
    }
    if (info.algorithm == CollectiveAlgorithm::kRing) return ncclRingChunking(per_peer, buffer);
    const int64_t chunk = std::max<int64_t>(x_.collectives.chunk.count, 1);
    return RingChunking{static_cast<uint32_t>(std::clamp<int64_t>((per_peer + chunk - 1) / chunk, 1, 64)), 0};
  }

  /// Decomposes `info` into transfers; returns the most it has in flight at once.
  int64_t addTransfers(CollInfo& info) {
    const uint32_t channels = info.channels;
    const RingChunking chunking = chunksOf(info, channels);
    const uint32_t chunks = chunking.chunks;
    const uint32_t per_server = serverBlock(info);
    if (generatedRing(info.algorithm)) {
      addRing(info, chunks, per_server, channels);
      info.window = chunking.window;  // 0 but for the ring, whose one phase it loops
    } else {
      addShape(info, chunks, per_server, channels);
    }
    max_transfers_ = std::max<uint64_t>(max_transfers_, info.shape_count);
    // A ring chunk is n chains of transfers per channel, one in flight each, and a member
    // has `window` chunks in flight (all without one); a DAG is bounded by its size.
    const uint32_t live = ringChunksAtOnce(chunks, info.window);
    return info.mode == CollMode::kRing ? int64_t{live} * info.members * channels : int64_t{info.shape_count};
  }

  /// A ring or hierarchical collective: its phases (shared by instances of one shape), no
  /// per-transfer rows.
  void addRing(CollInfo& info, uint32_t chunks, uint32_t per_server, uint32_t channels) {
    const auto key = std::make_tuple(info.op, info.algorithm, info.members, per_server, channels);
    auto it = ring_index_.find(key);
    if (it == ring_index_.end()) {
      std::vector<RingPhaseDef> phases;
      try {
        phases = ringPhases(info.op, info.algorithm, info.members, per_server, channels);
      } catch (const std::length_error& e) {
        throw TrainingError(std::string(channels > 1 ? "collectives.channels: " : "parallelism: ") + e.what());
      }
      const auto base = static_cast<uint32_t>(ring_phases_.size());
      ring_phases_.insert(ring_phases_.end(), phases.begin(), phases.end());
      it = ring_index_.emplace(key, std::make_pair(base, static_cast<uint32_t>(phases.size()))).first;
    }
    info.mode = CollMode::kRing;
    info.shape_base = it->second.first;
    info.phases = it->second.second;
    const RingPhaseDef& last = ring_phases_[info.shape_base + info.phases - 1];
    info.chunk_transfers = last.first + last.count;
    const uint64_t total = uint64_t{info.chunk_transfers} * chunks;
    if (total >= (uint64_t{1} << 32)) {
      const bool ring = info.algorithm == CollectiveAlgorithm::kRing;
      throw TrainingError(std::string(ring ? "collectives.buffer" : "collectives.chunk") + ": a collective over " +
                          std::to_string(info.members) + " ranks in " + std::to_string(chunks) +
                          " chunks would have 2^32 transfers or more; raise " + (ring ? "the buffer" : "the chunk size") +
                          (channels > 1 ? " or lower collectives.channels" : ""));
    }
    info.chunks = chunks;
    info.shape_count = static_cast<uint32_t>(total);
  }

  /// Any other algorithm: its DAG (shared by instances of one shape) and a counter per
  /// transfer and instance.
  void addShape(CollInfo& info, uint32_t chunks, uint32_t per_server, uint32_t channels) {
    const auto key = std::make_tuple(info.op, info.algorithm, info.members, chunks, per_server, channels);
    auto it = shape_index_.find(key);
    if (it == shape_index_.end()) {
      const CollectiveShape shape =
          makeShape(info.op, info.algorithm, info.members, chunks, per_server, channels, plan_.cfg.nics_per_gpu);
      if (shape.transfers.size() > kMaxShapeTransfers) {
        throw TrainingError("collectives: the " + std::string(algorithmName(info.algorithm)) + " algorithm over " +
                            std::to_string(info.members) + " ranks in " + std::to_string(chunks) +
                            " chunks would hold " + std::to_string(shape.transfers.size()) +
                            " transfers (at most 2^24); use ring or hierarchical, or raise the chunk size");
      }
      const auto base = static_cast<uint32_t>(shapes_.size());
      const auto succ_base = static_cast<uint32_t>(succs_.size());
      std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> per_pair;
      for (TransferDef d : shape.transfers) {
        d.succ_begin += succ_base;
        d.pair_index = per_pair[{d.src, d.dst, d.channel}]++;
        shapes_.push_back(d);
      }
      succs_.insert(succs_.end(), shape.succs.begin(), shape.succs.end());
      it = shape_index_.emplace(key, std::make_pair(base, static_cast<uint32_t>(shape.transfers.size()))).first;
    }
    info.shape_base = it->second.first;
    info.shape_count = it->second.second;
    info.state_base = static_cast<uint32_t>(counters_.size());
    for (uint32_t k = 0; k < info.shape_count; ++k) {
      const TransferDef& d = shapes_[info.shape_base + k];
      counters_.push_back(TransferCounter{static_cast<int32_t>(d.dep_count), kNoTransfer, 0});
    }
  }

  TrainWorld& world_;
  ExpId e_;
  const TrainingExperiment& x_;
  const Plan& plan_;
  std::vector<CollInfo> infos_;
  std::vector<Member> members_;
  std::vector<TransferDef> shapes_;
  std::vector<uint32_t> succs_;
  std::vector<TransferCounter> counters_;
  std::vector<RingPhaseDef> ring_phases_;
  std::map<std::tuple<CollectiveOp, CollectiveAlgorithm, uint32_t, uint32_t, uint32_t, uint32_t>,
           std::pair<uint32_t, uint32_t>>
      shape_index_;
  std::map<std::tuple<CollectiveOp, CollectiveAlgorithm, uint32_t, uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>>
      ring_index_;
  /// Communicator ids by (members, CommKind of a stage program's group; 0 for per-rank ones).
  std::map<std::pair<std::vector<uint32_t>, uint32_t>, uint32_t> communicators_;
  int64_t live_flows_ = 0;
  uint64_t max_transfers_ = 0;
};

/// What filling an experiment gives: the most flows it may create in one step, and its
/// ranks' task states (rows of RankTask), communication states (RankComm) and send times
/// (RankSent), filled or counted.
struct Filled {
  int64_t flows = 0;
  int64_t rank_tasks = 0;
  int64_t rank_comms = 0;
  int64_t rank_sents = 0;
  std::vector<ConnectionEnds> connections;  ///< packet and flow level: the connections its messages use
};

/// Rows per rank of a stage's RankComm and RankSent.
struct StateSlots {
  uint32_t comm = 0;
  uint32_t sent = 0;
};

/// Numbers the tasks of one stage's program (`tasks`, `succs` its successor lists) that keep
/// a communication state (sends, receives, collectives: TaskDef::comm_slot) or a send time
/// (receives and their successors: TaskDef::sent_slot).
StateSlots assignStateSlots(std::span<TaskDef> tasks, std::span<const uint32_t> succs) {
  std::vector<bool> sent(tasks.size());
  for (size_t k = 0; k < tasks.size(); ++k) {
    const TaskDef& d = tasks[k];
    if (d.kind != TaskKind::kRecv) continue;
    sent[k] = true;
    for (uint32_t j = 0; j < d.succ_count; ++j) sent[succs[d.succ_begin + j]] = true;
  }
  StateSlots n;
  for (size_t k = 0; k < tasks.size(); ++k) {
    TaskDef& d = tasks[k];
    d.comm_slot = isTimed(d.kind) ? kNoTask : n.comm++;
    d.sent_slot = sent[k] ? n.sent++ : kNoTask;
  }
  return n;
}

/// Which tables fillExperiment fills.
enum class Fill {
  kAll,      ///< every table (a run, FootprintMethod::kBuild)
  kCounted,  ///< all but the ones that grow with the cluster, counted instead (FootprintMethod::kCount):
             ///< the ranks' task states and the packet pools
};

/// Fills every training table of experiment e (all but the task states unless `states_too`).
Filled buildTraining(TrainWorld& world, ExpId e, const TrainingExperiment& x, const Plan& plan, bool states_too) {
  const TrainConfig& c = plan.cfg;
  std::vector<TaskDef> tasks;
  std::vector<uint32_t> succs;
  std::vector<uint32_t> program_base;
  std::vector<uint32_t> succ_base;
  std::vector<StateSlots> slots;
  for (const StageProgram& s : plan.program.stages) {
    program_base.push_back(static_cast<uint32_t>(tasks.size()));
    succ_base.push_back(static_cast<uint32_t>(succs.size()));
    tasks.insert(tasks.end(), s.tasks.begin(), s.tasks.end());
    succs.insert(succs.end(), s.succs.begin(), s.succs.end());
    slots.push_back(assignStateSlots(std::span(tasks).subspan(program_base.back()), s.succs));
  }
  appendRows<ProgramTask>(world, e, tasks, [](auto& t, int64_t r, const TaskDef& v) { t.template get<TaskDef>(r) = v; });
  appendRows<ProgramSucc>(world, e, succs, [](auto& t, int64_t r, uint32_t v) { t.template get<Successor>(r) = Successor{v}; });

  const uint32_t gpus = c.tp * c.pp * c.dp;
  std::vector<RankInfo> ranks(gpus);
  int64_t states = 0;
  int64_t comms = 0;
  int64_t sents = 0;
  for (uint32_t r = 0; r < gpus; ++r) {
    RankInfo& ri = ranks[r];
    ri.rank = r;
    ri.tp_index = r % c.tp;
    ri.dp_index = (r / c.tp) % c.dp;
    ri.stage = r / (c.tp * c.dp);
    ri.server = r / c.gpus_per_server;
    ri.nic = ri.server * c.nics_per_server + (r % c.gpus_per_server) * c.nics_per_server / c.gpus_per_server;
    const StageProgram& prog = plan.program.stages[ri.stage];
    ri.program_base = program_base[ri.stage];
    ri.succ_base = succ_base[ri.stage];
    ri.task_count = static_cast<uint32_t>(prog.tasks.size());
    ri.state_base = static_cast<uint32_t>(states);
    ri.comm_base = static_cast<uint32_t>(comms);
    ri.sent_base = static_cast<uint32_t>(sents);
    states += ri.task_count;
    comms += slots[ri.stage].comm;
    sents += slots[ri.stage].sent;
    if (states >= (int64_t{1} << 32)) throw TrainingError("parallelism: more than 2^32 task states over the ranks");
  }
  CollectiveBuilder colls(world, e, x, plan);
  colls.build(ranks);
  world.config(e).train.transfer_bits = colls.transferBits();
  appendRows<Rank>(world, e, ranks, [](auto& t, int64_t r, const RankInfo& v) {
    t.template get<RankInfo>(r) = v;
    t.template get<RankStreams>(r) = RankStreams{};
    t.template get<RankTimes>(r) = RankTimes{};
  });
  // The ranks' task and communication states and send times (the largest tables of a big
  // experiment), written in place.
  if (states_too) {
    const int64_t state0 = world.appendStatic<RankTask>(e, states);
    auto& state_table = world.table<RankTask>();
    for (const RankInfo& ri : ranks) {
      const StageProgram& prog = plan.program.stages[ri.stage];
      for (uint32_t k = 0; k < ri.task_count; ++k) {
        state_table.get<TaskState>(state0 + ri.state_base + k).deps_left = static_cast<int32_t>(prog.tasks[k].dep_count);
      }
    }
    world.appendStatic<RankComm>(e, comms);
    world.appendStatic<RankSent>(e, sents);
  }
  colls.commit();
  Filled filled{colls.liveFlows() + 2 * int64_t{gpus}, states, comms, sents, {}};
  if (x.fidelity != NetworkFidelity::kAnalytical) {
    colls.collectConnections(ranks, filled.connections);
    // Pipeline messages: a connection per sender and receiver on different servers.
    for (const RankInfo& ri : ranks) {
      for (const TaskDef& t : plan.program.stages[ri.stage].tasks) {
        if (t.kind != TaskKind::kSend) continue;
        const uint32_t peer = megatronRank(c.tp, c.dp, t.peer_stage, ri.tp_index, ri.dp_index);
        if (ranks[peer].server == ri.server) continue;
        filled.connections.push_back(
            ConnectionEnds{net::ConnectionKey{ri.rank, peer, kP2pCommunicator, 0}, ri.nic, ranks[peer].nic});
      }
    }
  }
  return filled;
}

/// The "args" object of a task's trace event: what it computed or moved (a collective: and
/// how, from its row `coll`).
std::string traceArgs(const TaskDef& t, const CollInfo* coll) {
  char buf[240];
  if (t.kind == TaskKind::kCompute) {
    std::snprintf(buf, sizeof(buf), "{\"compute_us\":%.3f,\"tp_us\":%.3f}", static_cast<double>(t.compute_ps) * 1e-6,
                  static_cast<double>(t.tp_ps) * 1e-6);
  } else if (t.kind == TaskKind::kCopy) {
    std::snprintf(buf, sizeof(buf), "{\"bytes\":%lld,\"copy_us\":%.3f}", static_cast<long long>(t.bytes),
                  static_cast<double>(t.compute_ps) * 1e-6);
  } else if (t.kind == TaskKind::kCollective) {
    const bool between = coll != nullptr && coll->mode != CollMode::kIntraServer;
    const char* protocol = between && coll->protocol != CollectiveChoice::kNoProtocol
                               ? ncclProtocolName(static_cast<NcclProtocol>(coll->protocol))
                               : "";
    std::snprintf(buf, sizeof(buf), "{\"bytes\":%lld,\"group\":\"%s\",\"seq\":%u,\"algorithm\":\"%s\",\"protocol\":\"%s\","
                  "\"channels\":%u}",
                  static_cast<long long>(t.bytes), processGroupName(t.comm), t.seq,
                  between ? algorithmName(coll->algorithm) : "intra-server", protocol,
                  between ? unsigned{coll->channels} : 0u);
  } else {
    std::snprintf(buf, sizeof(buf), "{\"bytes\":%lld,\"peer_stage\":%u}", static_cast<long long>(t.bytes), t.peer_stage);
  }
  return buf;
}

/**
 * Flow events of experiment e's trace: an arrow from each pipeline send (at its start) to
 * its receive on the peer rank (at its end, when the data has arrived), id'd by the send's
 * span, category "pp".
 */
void appendMessageArrows(TrainWorld& world, ExpId e, std::string& out) {
  auto& spans = world.table<TaskSpan>();
  auto& ranks = world.table<Rank>();
  auto& tasks = world.table<ProgramTask>();
  const TrainConfig& c = world.config(e).train;
  auto key = [](uint32_t rank, uint32_t task) { return (uint64_t{rank} << 32) | task; };
  std::unordered_map<uint64_t, int64_t> span_of;
  for (int64_t row = spans.expBegin(e); row < spans.expEnd(e); ++row) {
    const TaskSpanData& d = spans.get<TaskSpanData>(row);
    span_of.emplace(key(d.rank, d.task), row);
  }
  char buf[320];
  for (int64_t row = spans.expBegin(e); row < spans.expEnd(e); ++row) {
    const TaskSpanData& d = spans.get<TaskSpanData>(row);
    const RankInfo& info = ranks.get<RankInfo>(ranks.expBegin(e) + d.rank);
    const TaskDef& t = tasks.get<TaskDef>(tasks.expBegin(e) + info.program_base + d.task);
    if (t.kind != TaskKind::kSend || t.peer_task == kNoTask) continue;
    const uint32_t peer = megatronRank(c.tp, c.dp, t.peer_stage, info.tp_index, info.dp_index);
    const auto it = span_of.find(key(peer, t.peer_task));
    if (it == span_of.end()) continue;
    const TaskSpanData& r = spans.get<TaskSpanData>(it->second);
    const RankInfo& peer_info = ranks.get<RankInfo>(ranks.expBegin(e) + r.rank);
    const TaskDef& recv = tasks.get<TaskDef>(tasks.expBegin(e) + peer_info.program_base + r.task);
    // Inside the receive's slice ("bp":"e" binds to the enclosing slice): 1 ns before its end.
    const int64_t arrive = std::max(r.start_ps, r.end_ps - 1000);
    const auto id = static_cast<long long>(row - spans.expBegin(e));
    std::snprintf(buf, sizeof(buf),
                  ",\n{\"name\":\"pp\",\"cat\":\"pp\",\"ph\":\"s\",\"id\":%lld,\"pid\":%u,\"tid\":%u,\"ts\":%.6f}"
                  ",\n{\"name\":\"pp\",\"cat\":\"pp\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%lld,\"pid\":%u,\"tid\":%u,"
                  "\"ts\":%.6f}",
                  id, d.rank + 1, unsigned{t.stream}, static_cast<double>(d.start_ps) * 1e-6, id, r.rank + 1,
                  unsigned{recv.stream}, static_cast<double>(arrive) * 1e-6);
    out += buf;
  }
}

/**
 * Chrome trace JSON of experiment e's recorded tasks: a process per rank (pid rank + 1:
 * Perfetto treats pid 0 as the idle process), named with its stage, TP and DP indices; a
 * thread per stream; each task a complete event whose args say what it computed or moved;
 * an arrow from each pipeline send to its receive (appendMessageArrows).
 */
std::string chromeTrace(TrainWorld& world, ExpId e) {
  static const char* const kStreamNames[kStreams] = {"compute", "pp send", "pp recv", "dp", "cp", "offload", "reload"};
  auto& spans = world.table<TaskSpan>();
  auto& ranks = world.table<Rank>();
  auto& tasks = world.table<ProgramTask>();
  auto& colls = world.table<Collective>();
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buf[480];
  bool first = true;
  for (int64_t r = ranks.expBegin(e); r < ranks.expEnd(e); ++r) {
    const RankInfo& info = ranks.get<RankInfo>(r);
    const uint32_t pid = info.rank + 1;
    std::snprintf(buf, sizeof(buf),
                  "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"rank %u (stage %u, tp %u, "
                  "dp %u)\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"sort_index\":%u}}",
                  first ? "" : ",\n", pid, info.rank, info.stage, info.tp_index, info.dp_index, pid, info.rank);
    out += buf;
    first = false;
    for (int s = 0; s < kStreams; ++s) {
      std::snprintf(buf, sizeof(buf), ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                    pid, s, kStreamNames[s]);
      out += buf;
    }
  }
  for (int64_t row = spans.expBegin(e); row < spans.expEnd(e); ++row) {
    const TaskSpanData& d = spans.get<TaskSpanData>(row);
    const RankInfo& info = ranks.get<RankInfo>(ranks.expBegin(e) + d.rank);
    const TaskDef& t = tasks.get<TaskDef>(tasks.expBegin(e) + info.program_base + d.task);
    const CollInfo* coll = t.kind == TaskKind::kCollective
                               ? &colls.get<CollInfo>(colls.expBegin(e) + info.collective(t.comm, t.seq))
                               : nullptr;
    std::snprintf(buf, sizeof(buf), ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%.6f,\"dur\":%.6f,\"args\":%s}",
                  taskName(t).c_str(), d.rank + 1, unsigned{t.stream}, static_cast<double>(d.start_ps) * 1e-6,
                  static_cast<double>(d.end_ps - d.start_ps) * 1e-6, traceArgs(t, coll).c_str());
    out += buf;
  }
  appendMessageArrows(world, e, out);
  out += "\n]}\n";
  return out;
}

/**
 * flows.csv and fct.txt of experiment x's finished network flows into `r`, in the order they
 * started (then id). fct.txt numbers each host's source ports from 10000 in that order, and
 * gives every flow destination port 100, as netsim does for CSV flow lists.
 */
void writeFlowFiles(const TrainingExperiment& x, std::vector<net::FlowResult>& flows, TrainingResult& r) {
  std::sort(flows.begin(), flows.end(), [](const net::FlowResult& a, const net::FlowResult& b) {
    return std::tie(a.start_ps, a.id) < std::tie(b.start_ps, b.id);
  });
  std::vector<uint32_t> next_port(x.topology.nicCount(), 10000);
  std::vector<uint32_t> sport(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) sport[i] = next_port[flows[i].src_nic]++;
  const Routing routing = computeRouting(x.topology);
  FlowFiles files =
      flowFiles(x.topology, routing, x.network, flows, [&](size_t i) { return std::make_pair(sport[i], 100u); });
  r.flows_csv = std::move(files.csv);
  r.fct_txt = std::move(files.fct_txt);
}

/// The kinds of collective between servers experiment e ran, with their algorithms
/// (TrainingResult::collective_choices).
std::vector<CollectiveChoice> collectiveChoices(TrainWorld& world, ExpId e) {
  std::vector<CollectiveChoice> out;
  auto& colls = world.table<Collective>();
  for (int64_t row = colls.expBegin(e); row < colls.expEnd(e); ++row) {
    const CollInfo& c = colls.get<CollInfo>(row);
    if (c.mode == CollMode::kIntraServer) continue;
    auto same = [&](const CollectiveChoice& k) {
      return k.op == c.op && k.ranks == c.members && k.bytes == c.bytes && k.algorithm == c.algorithm &&
             k.protocol == c.protocol && k.channels == c.channels;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) {
      out.push_back(CollectiveChoice{c.op, c.members, c.bytes, c.algorithm, c.protocol, c.channels, 0});
      it = out.end() - 1;
    }
    ++it->count;
  }
  return out;
}

/// The result of a finished experiment from its rank rows and counters (and its switch
/// queues, with `queues`).
TrainingResult collectResult(TrainWorld& world, ExpId e, const TrainingExperiment& x, bool queues) {
  TrainingResult res;
  res.collective_choices = collectiveChoices(world, e);
  auto& ranks = world.table<Rank>();
  int64_t critical = -1;
  int64_t tasks = 0;
  for (int64_t row = ranks.expBegin(e); row < ranks.expEnd(e); ++row) {
    const RankTimes& t = ranks.get<RankTimes>(row);
    const RankInfo& info = ranks.get<RankInfo>(row);
    tasks += t.tasks_done;
    if (t.tasks_done != info.task_count && res.error.empty()) {
      res.error = "rank " + std::to_string(info.rank) + " stopped after " + std::to_string(t.tasks_done) + " of " +
                  std::to_string(info.task_count) + " tasks (time limit reached)";
    }
    if (critical < 0 || t.finish > ranks.get<RankTimes>(critical).finish) critical = row;
  }
  const RankTimes& t = ranks.get<RankTimes>(critical);
  // Communication still running after the compute stream's last task (a trace that ends in a
  // collective nothing waits for) is exposed, as a wait for it would be. A run cut off by a
  // time limit counts only finished tasks, and no tail.
  const int64_t tail = res.error.empty() ? std::max<int64_t>(0, t.finish - t.compute_end) : 0;
  const bool dp_tail =
      t.tail_kind == CommKind::kDp || t.tail_kind == CommKind::kExpertDp || t.tail_kind == CommKind::kGroup;
  res.iteration = Picoseconds{t.finish};
  res.compute = Picoseconds{t.compute};
  res.exposed_tp = Picoseconds{t.tp};
  res.exposed_pp = Picoseconds{t.pp + (t.tail_kind == CommKind::kPp ? tail : 0)};
  res.exposed_dp = Picoseconds{t.dp + (dp_tail ? tail : 0)};
  res.exposed_ep = Picoseconds{t.ep + (t.tail_kind == CommKind::kEp ? tail : 0)};
  res.exposed_cp = Picoseconds{t.cp + (t.tail_kind == CommKind::kCp ? tail : 0)};
  res.exposed_offload = Picoseconds{t.offload + (t.tail_kind == CommKind::kOffload ? tail : 0)};
  res.bubble = Picoseconds{t.finish - res.compute.ps - res.exposed_tp.ps - res.exposed_pp.ps - res.exposed_dp.ps -
                           res.exposed_ep.ps - res.exposed_cp.ps - res.exposed_offload.ps};
  res.peak_memory = peakStageMemory(x);
  const double seconds = static_cast<double>(t.finish) * 1e-12;
  if (seconds > 0 && !x.collective.enabled) {
    const double flops = iterationFlops(x.model, x.training, x.parallelism.recompute).model;
    const double peak = computeSpecOf(clusterGpu(x.cluster)).peakFlops(x.training.precision);
    res.mfu = flops / (static_cast<double>(x.cluster.gpus) * peak * seconds);
    res.tokens_per_second =
        static_cast<double>(x.training.global_batch) * sequenceLength(x.model, x.training) / seconds;
  }
  if (seconds > 0 && x.collective.enabled) {
    const CollectiveBenchmark& b = x.collective;
    res.collective_time = Picoseconds{t.finish / b.iters};
    res.collective_bytes = b.bytes.count;
    res.algbw_gbps = static_cast<double>(b.bytes.count) * b.iters / seconds * 1e-9;
    const Fraction bus = busBandwidthFactor(b.op, static_cast<int32_t>(x.cluster.gpus));
    res.busbw_gbps = res.algbw_gbps * static_cast<double>(bus.num) / static_cast<double>(bus.den);
  }
  res.network = net::experimentCounters(world, e);
  res.pool_knobs = net::poolKnobs(x.network);
  auto& fluid = world.table<net::FluidNet>();  // flow level: its flows, overflows and events count too
  int64_t fluid_events = 0;
  for (int64_t r = fluid.expBegin(e); r < fluid.expEnd(e); ++r) {
    res.network.flows_done += fluid.get<net::FluidNetState>(r).flows_done;
    res.network.overflow += fluid.get<net::FluidNetState>(r).overflow;
    fluid_events += fluid.get<net::FluidNetState>(r).events;
  }
  if (world.config(e).train.trace != 0) res.chrome_trace = chromeTrace(world, e);
  if (queues && x.fidelity == NetworkFidelity::kPacket) res.queues_csv = net::queuesCsv(world, e, 0, t.finish);
  res.events = tasks + res.network.packet_hops + fluid_events;
  return res;
}

/// Steps per run of a batch that records link samples or logs its flows: they are drained
/// after each run, so their tables hold at most this many steps' worth.
constexpr int64_t kDetailSteps = 256;

/// Most rows a batch's experiments may create in one step in the tables filled during the
/// run: packet-level flows, and the records of packet- and flow-level ones.
struct RunRows {
  int64_t packet_flows = 0;
  int64_t fluid_flows = 0;
  int64_t records = 0;
  int64_t logged = 0;  ///< records of the experiments that log their flows

  RunRows& operator+=(const RunRows& o) {
    packet_flows += o.packet_flows;
    fluid_flows += o.fluid_flows;
    records += o.records;
    logged += o.logged;
    return *this;
  }
};

/// Throws when experiment x's packet storage cannot be held: more link-ring slots than
/// 32-bit chunk numbers reach, or more bytes than `budget` (when positive); or when it runs
/// HPCC on a route longer than its INT record (net::intHopProblem), a PFC buffer that holds no
/// packet per port, or link bins shorter than the step.
void checkPacketStorage(const TrainingExperiment& x, const net::NetworkLayout& layout, int64_t lookahead, int64_t budget) {
  const net::PacketStorage st = net::packetStorage(layout, x.network, lookahead);
  std::string problem = net::layoutProblem(layout, x.network);
  // Each step closes lookahead / link_bin bins per link, all sized for up front: a 1 ps bin
  // under a 1 µs step took gigabytes before the memory budget was checked.
  constexpr int64_t kMaxBinsPerStep = 64;
  if (problem.empty() && x.network.link_bin_ps > 0 && x.network.link_bin_ps * kMaxBinsPerStep < lookahead) {
    problem = "network.link_bin: " + formatDuration(x.network.link_bin_ps) + " is shorter than 1/" +
              std::to_string(kMaxBinsPerStep) + " of the step (" + formatDuration(lookahead) +
              ": the shortest link delay, or half the step latency); a step closes at most " +
              std::to_string(kMaxBinsPerStep) + " bins per link";
  }
  if (problem.empty()) {
    problem = net::packetStorageProblem(st, net::packetStorageBytes<TrainWorld>(st, x.network), budget, x.network);
  }
  if (!problem.empty()) throw TrainingError("experiment '" + x.name + "': " + problem);
}

/// The step of experiment x under `plan` (options.lookahead when smaller).
int64_t lookaheadOf(const Plan& plan, const SimulationOptions& options) {
  return options.lookahead.ps > 0 ? std::min(options.lookahead.ps, plan.lookahead_ps) : plan.lookahead_ps;
}

/// Grows the packet storage of `world` once for every packet-level experiment of `plans`
/// (so filling them does not double the tables, whose peak would then be three times the
/// storage when they are fitted); checks each against `options.memory_budget` first.
void reserveBatchStorage(TrainWorld& world, const std::vector<const TrainingExperiment*>& xs,
                         const std::vector<Plan>& plans, const SimulationOptions& options) {
  net::PacketStorage all;
  net::PacketStorage hpcc;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i]->fidelity != NetworkFidelity::kPacket) continue;
    const int64_t lookahead = lookaheadOf(plans[i], options);
    checkPacketStorage(*xs[i], plans[i].layout, lookahead, options.memory_budget);
    const net::PacketStorage st = net::packetStorage(plans[i].layout, xs[i]->network, lookahead);
    all += st;
    if (xs[i]->network.cc == net::CcKind::kHpcc) hpcc += st;
  }
  net::reservePacketStorage(world, all, false);
  net::reservePacketStorage(world, hpcc, true);
}

/// Fills experiment e of a batch under its `plan` (the tables `fill` names).
Filled fillExperiment(TrainWorld& world, ExpId e, const TrainingExperiment& x, const Plan& plan,
                      const SimulationOptions& options, Fill fill) {
  for (const StageProgram& s : plan.program.stages) {
    if (s.tasks.size() >= kMaxFlowTasks)
      throw TrainingError("experiment '" + x.name + "': more than 2^20 tasks per stage");
    for (const TaskDef& t : s.tasks) {
      if ((t.kind == TaskKind::kSend || t.kind == TaskKind::kCollective) && t.bytes > kMaxInputBytes) {
        throw TrainingError("experiment '" + x.name + "': a " +
                            (t.kind == TaskKind::kSend ? "pipeline message" : "collective") + " of " +
                            formatBytes(t.bytes) + " per rank is more than 16 TiB, the most one flow carries");
      }
    }
  }
  if (plan.program.templateTasks() >= (int64_t{1} << 32)) {
    throw TrainingError("experiment '" + x.name + "': more than 2^32 tasks over its programs");
  }
  world.config(e).net = net::pathQuantities(plan.layout, x.network);
  world.config(e).train = plan.cfg;
  world.config(e).train.trace = options.trace ? 1u : 0u;
  world.config(e).train.log_flows = options.network_detail && x.fidelity != NetworkFidelity::kAnalytical ? 1u : 0u;
  ExperimentClock& clock = world.clock(e);
  const int64_t lookahead = lookaheadOf(plan, options);
  if (lookahead < 1) {  // the limits of step_latency and link delays rule it out; never loop
    throw TrainingError("experiment '" + x.name + "': a step of " + std::to_string(lookahead) +
                        " ps would never advance the clock");
  }
  clock.lookahead_ps = lookahead;
  clock.seed = x.seed;
  clock.stable_id = static_cast<uint32_t>(x.id ^ (x.id >> 32));
  if (options.time_limit.ps > 0) clock.end_ps = options.time_limit.ps;
  Filled filled = buildTraining(world, e, x, plan, fill == Fill::kAll);
  // Each experiment has rows only in the tables of its fidelity (none at analytical).
  if (x.fidelity == NetworkFidelity::kPacket) {
    net::buildNetwork(world, e, plan.layout, x.network, lookahead, fill == Fill::kAll);
  }
  if (x.fidelity == NetworkFidelity::kFlow) {
    const auto active = static_cast<uint32_t>(std::min<int64_t>(std::max<int64_t>(4 * filled.flows, 4096), 1 << 24));
    net::buildFluidNetwork(world, e, plan.layout, x.network, active);
  }
  if (x.fidelity != NetworkFidelity::kAnalytical) {
    addConnections(world, e, std::move(filled.connections), plan.cfg.priority, plan.cfg.qps,
                   x.fidelity == NetworkFidelity::kFlow);
    filled.connections.clear();
  }
  return filled;
}

/// The run rows of an experiment that may create `flows` flows in one step.
RunRows runRows(const TrainingExperiment& x, int64_t flows, bool log_flows) {
  const int64_t records = x.fidelity == NetworkFidelity::kAnalytical ? 0 : flows;
  return RunRows{x.fidelity == NetworkFidelity::kPacket ? flows : 0, x.fidelity == NetworkFidelity::kFlow ? flows : 0,
                 records, log_flows ? records : 0};
}

/// Sizes the tables rows are created in during a run (packet and fluid flows, flow records,
/// trace spans, one per task state of `trace_tasks`, link samples of the experiments with a
/// link_bin and logged flows for kDetailSteps steps) for a batch that may create `rows` in one step, and
/// fits the static tables to their rows.
void sizeForRun(TrainWorld& world, const RunRows& rows, int64_t trace_tasks) {
  world.commitAllHost();
  world.fitStaticTables();
  int64_t samples_per_step = 0;
  for (ExpId e = 0; e < world.numExperiments(); ++e) {
    const int64_t bin = world.config(e).net.network.link_bin_ps;
    if (bin <= 0) continue;
    // Bins closed per link in one step: those its lookahead spans, plus the one it enters.
    const int64_t per_link = (world.clock(e).lookahead_ps + bin - 1) / bin + 1;
    samples_per_step += world.table<net::Link>().expRows(e) * per_link;
  }
  if (samples_per_step > 0) {
    world.grow<net::LinkSample>(TableCapacity{samples_per_step * (kDetailSteps + 1), samples_per_step});
  }
  if (rows.logged > 0)
    world.grow<FlowLog>(TableCapacity{(rows.logged + 1024) * (kDetailSteps + 1), rows.logged + 1024});
  if (rows.packet_flows > 0) {
    world.grow<net::Flow>(TableCapacity{2 * rows.packet_flows + 1024, rows.packet_flows + 1024});
    world.grow<net::Message>(TableCapacity{2 * rows.packet_flows + 1024, rows.packet_flows + 1024});
  }
  if (rows.fluid_flows > 0) {
    world.grow<net::FluidFlow>(TableCapacity{2 * rows.fluid_flows + 1024, rows.fluid_flows + 1024});
    world.grow<net::Message>(TableCapacity{2 * rows.fluid_flows + 1024, rows.fluid_flows + 1024});
  }
  world.grow<net::FlowRecord>(TableCapacity{rows.records + 1024, rows.records + 1024});
  if (trace_tasks > 0) world.grow<TaskSpan>(TableCapacity{trace_tasks + 1024, trace_tasks + 1024});
}

/// Bytes static table A adds when fitted to `rows` rows instead of being left empty.
template <class A>
std::size_t countedBytes(const TrainWorld& world, int64_t rows) {
  return rows > 0 ? world.tableBytesAt<A>(TableCapacity{rows, 0}) - world.tableBytes<A>() : 0;
}

/// Bytes experiment x's packet pools (packetStorage) add to a world that lacks them.
std::size_t countedPoolBytes(const TrainWorld& world, const TrainingExperiment& x, const Plan& plan,
                             const SimulationOptions& options) {
  if (x.fidelity != NetworkFidelity::kPacket) return 0;
  const net::PacketStorage st = net::packetStorage(plan.layout, x.network, lookaheadOf(plan, options));
  return static_cast<std::size_t>(net::addedPacketStorageBytes(world, st, x.network.cc == net::CcKind::kHpcc));
}

template <class... As>
std::size_t bytesOf(const TrainWorld& world, TypeList<As...>) {
  return (std::size_t{0} + ... + world.tableBytes<As>());
}
template <class... As>
int64_t rowsOf(const TrainWorld& world, TypeList<As...>) {
  return (int64_t{0} + ... + world.view().template table<As>().rows);
}

}  // namespace

TrainingFootprint measureFootprint(const TrainingExperiment& x, const SimulationOptions& options, FootprintMethod how) {
  const std::vector<std::string> problems = checkTrainingExperiment(x);
  if (!problems.empty()) throw TrainingError("experiment '" + x.name + "': " + problems.front());
  const auto start = std::chrono::steady_clock::now();
  const bool count = how == FootprintMethod::kCount;
  TrainWorld world(1, TableCapacity{1, 1});
  TrainingFootprint f;
  std::vector<Plan> plans;
  plans.push_back(makePlan(x));
  const Plan& plan = plans.front();
  if (count && x.fidelity == NetworkFidelity::kPacket) {
    checkPacketStorage(x, plan.layout, lookaheadOf(plan, options), options.memory_budget);
  } else if (!count) {
    reserveBatchStorage(world, {&x}, plans, options);
  }
  const Filled filled = fillExperiment(world, 0, x, plan, options, count ? Fill::kCounted : Fill::kAll);
  f.flows_per_step = filled.flows;
  sizeForRun(world, runRows(x, filled.flows, options.network_detail), options.trace ? filled.rank_tasks : 0);
  const std::size_t counted_states = count ? countedBytes<RankTask>(world, filled.rank_tasks) +
                                                 countedBytes<RankComm>(world, filled.rank_comms) +
                                                 countedBytes<RankSent>(world, filled.rank_sents)
                                           : 0;
  const std::size_t counted_pools = count ? countedPoolBytes(world, x, plan, options) : 0;
  f.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const TrainView& v = world.view();
  f.ranks = v.table<Rank>().rows;
  f.template_tasks = v.table<ProgramTask>().rows;
  f.rank_tasks = filled.rank_tasks;
  f.rank_comms = filled.rank_comms;
  f.rank_sents = filled.rank_sents;
  f.collectives = v.table<Collective>().rows;
  f.transfer_states = v.table<TransferState>().rows;
  f.program_bytes = bytesOf(world, TypeList<ProgramTask, ProgramSucc>{});
  f.rank_bytes = bytesOf(world, TypeList<Rank, RankTask, RankComm, RankSent>{}) + counted_states;
  f.collective_bytes =
      bytesOf(world, TypeList<Collective, GroupMember, TransferShape, TransferSucc, TransferState, RingShape>{});
  const std::size_t flow_tables = bytesOf(world, TypeList<net::Flow, net::Message, net::FluidFlow, net::FlowRecord>{});
  f.run_bytes = flow_tables + bytesOf(world, TypeList<TaskSpan, FlowLog>{});
  f.network_bytes =
      bytesOf(world, ConcatT<net::NetworkArchetypes, net::FluidArchetypes>{}) - flow_tables + counted_pools;
  f.network_rows = rowsOf(world, ConcatT<net::NetworkArchetypes, net::FluidArchetypes>{});
  f.total_bytes = world.totalBytes() + counted_states + counted_pools;
  f.structure_bytes =
      f.program_bytes +
      bytesOf(world, TypeList<GroupMember, TransferShape, TransferSucc, RingShape, net::RouteIndexTable,
                              net::RouteSetTable, net::RoutePortTable, net::NicRouteTable, net::FluidRouteIndex,
                              net::FluidRouteSet, net::FluidRoutePort, net::FluidNicRoute>{});
  return f;
}

MemoryBreakdown peakStageMemory(const TrainingExperiment& x) {
  if (x.collective.enabled) {
    // nccl-tests' out-of-place buffers: the input and the output of one rank.
    const CollectiveBenchmark& b = x.collective;
    const int64_t share = b.bytes.count / std::max<uint32_t>(x.cluster.gpus, 1);
    MemoryBreakdown m;
    m.workspace = Bytes{b.op == CollectiveOp::kAllGather      ? share + b.bytes.count
                        : b.op == CollectiveOp::kReduceScatter ? b.bytes.count + share
                                                               : 2 * b.bytes.count};
    return m;
  }
  return peakMemory(x.model, x.training, x.parallelism, x.memory);
}

bool fitsGpuMemory(const TrainingExperiment& x) { return peakStageMemory(x).fits(hbmOf(x)); }

namespace {

/// `v` to three significant digits.
std::string threeDigits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

/**
 * Why the generated program of `x` cannot be built ("" when it can): a tensor-parallel
 * collective beyond what one flow carries, or an iteration whose compute, TP collectives and
 * offload copies would pass the engine's horizon, where their sums would no longer fit
 * 64-bit picoseconds. Estimated in floating point before anything is summed: the compute
 * model's bound (ComputeModel::iterationComputePs), plus each layer's TP and copy time over
 * as many passes of the largest stage.
 */
std::string programLimitProblem(const TrainingExperiment& x, const GpuSpec& gpu) {
  const Parallelism& par = x.parallelism;
  const double tp_bytes = boundaryActivationBytes(x.model, x.training, par);
  if (par.tp > 1 && tp_bytes > static_cast<double>(kMaxInputBytes)) {
    return "workload: a tensor-parallel collective would move " +
           threeDigits(tp_bytes / static_cast<double>(int64_t{1} << 40)) +
           " TiB per rank (micro_batch × seq / cp × hidden × element bytes), more than 16 TiB, the most one flow "
           "carries";
  }
  const ComputeModel compute(computeSpecOf(gpu), x.cluster.compute, x.operator_times);
  double ps = compute.iterationComputePs(x.model, x.training, par);
  const auto horizon = static_cast<double>(kTimeHorizonPs);
  if (ps < horizon) {
    const ProgramOptions po = programOptionsOf(x, gpu);
    const LayerPassTimes layer = layerPassTimes(x.model, x.training, par, compute, po);
    double per_layer = static_cast<double>(layer.tp_forward.ps) + static_cast<double>(layer.tp_backward.ps);
    if (par.offload_layers > 0 && po.host_copy_bytes_per_s > 0) {  // no host link: the copies take no time
      const auto stored = static_cast<double>(layerActivationBytes(x.model, x.training, par, par.recompute).count);
      per_layer += 2 * stored / po.host_copy_bytes_per_s * 1e12;  // out and back
    }
    const double passes = microBatchCount(x.training, par) + std::max<uint32_t>(par.pp, 1);
    ps += per_layer * stageLayers(x.model, par, 0) * passes;
  }
  if (ps < horizon) return "";
  return "workload: one iteration's compute and tensor-parallel communication would take longer than the engine's "
         "horizon of " +
         std::to_string(kTimeHorizonPs / 1'000'000'000'000) + " s of simulated time (estimated " +
         threeDigits(ps * 1e-12) + " s): a smaller model, sequence or batch, or more GPUs";
}

}  // namespace

std::vector<std::string> checkTrainingExperiment(const TrainingExperiment& x) {
  std::vector<std::string> out;
  if (!x.collective.enabled) {
    for (const ConfigProblem& p : validateParallelism(x.model, x.training, x.parallelism, x.cluster.gpus)) {
      out.push_back(p.key + ": " + p.message);
    }
  }
  const ClusterSpec& c = x.cluster;
  try {
    const GpuSpec gpu = clusterGpu(c);
    if (!(gpu.bf16_tflops > 0 && gpu.tf32_tflops > 0 && gpu.fp8_tflops >= 0)) {
      out.push_back("cluster.gpu: peak TFLOP/s must be positive (fp8: 0 or more)");
    }
    if (gpu.hbm_capacity.count <= 0 || gpu.hbm_bandwidth.bps <= 0 || gpu.nvlink_bandwidth.bps <= 0 || gpu.sms == 0) {
      out.push_back("cluster.gpu: HBM capacity and bandwidth, NVLink bandwidth and SMs must be positive");
    }
  } catch (const std::exception& err) {
    out.push_back(std::string("cluster.gpu: ") + err.what());
  }
  if (c.gpus_per_server == 0 || c.gpus_per_server > static_cast<uint32_t>(kMaxServerGpus)) {
    out.push_back("cluster.gpus_per_server: must be 1.." + std::to_string(kMaxServerGpus));
    return out;
  }
  if (c.gpus % c.gpus_per_server != 0) out.push_back("cluster.gpus: must be a multiple of cluster.gpus_per_server");
  if (x.collectives.qps_per_connection < 1 || x.collectives.qps_per_connection > 16)
    out.push_back("collectives.qps_per_connection: must be 1..16");
  if (c.gpus_per_server % std::max<uint32_t>(x.parallelism.tp, 1) != 0) {
    out.push_back("parallelism.tp: tensor parallelism must stay inside a server (tp must divide gpus_per_server)");
  }
  if (c.nics_per_server == 0 ||
      (c.gpus_per_server % c.nics_per_server != 0 && c.nics_per_server % c.gpus_per_server != 0)) {
    out.push_back("cluster.nics_per_server: must divide gpus_per_server or be a multiple of it");
  } else {
    const uint64_t needed = uint64_t{c.gpus / c.gpus_per_server} * c.nics_per_server;
    if (x.topology.nicCount() < needed) {
      out.push_back("topology: has " + std::to_string(x.topology.nicCount()) + " NICs, the job needs " +
                    std::to_string(needed) + " (" + std::to_string(c.gpus / c.gpus_per_server) + " servers × " +
                    std::to_string(c.nics_per_server) + " NICs)");
    }
  }
  if (c.gpus >= kMaxFlowRanks) out.push_back("cluster.gpus: at most 2^19 GPUs");
  if (x.network.link_bin_ps > 0 && x.fidelity != NetworkFidelity::kPacket) {
    out.push_back("network.link_bin: links are recorded at packet fidelity only (network.fidelity: packet)");
  }
  if (x.collectives.step_latency.ps < kMinStepLatencyPs) {
    out.push_back("collectives.step_latency: must be at least " + formatDuration(kMinStepLatencyPs) +
                  " (the step is half of it, and at least 1 ns)");
  }
  if (x.collectives.channels > kMaxRingChannels) {
    out.push_back("collectives.channels: must be 1.." + std::to_string(kMaxRingChannels) + " (0 = auto)");
  }
  if (x.cluster.overlap_slowdown != 0 && (x.cluster.overlap_slowdown < 1 || x.cluster.overlap_slowdown > 4)) {
    out.push_back("cluster.overlap_slowdown: must be 1..4 (0 = the GPU's default)");
  }
  if (!(x.cluster.compute_jitter >= 0 && x.cluster.compute_jitter <= 0.5)) {
    out.push_back("cluster.compute_jitter: must be 0..0.5");
  }
  if (!(c.tp_bandwidth_factor >= 0.25 && c.tp_bandwidth_factor <= 4)) {
    out.push_back("cluster.tp_bandwidth_factor: must be 0.25..4");
  }
  const ComputeModelParams& cp = c.compute;
  if (!(cp.gemm.ceiling > 0 && cp.gemm.ceiling <= 1)) out.push_back("cluster.compute.gemm_ceiling: must be in (0, 1]");
  if (!(cp.gemm.small_tile > 0 && cp.gemm.small_tile <= 1)) {
    out.push_back("cluster.compute.gemm_small_tile: must be in (0, 1]");
  }
  if (!(cp.gemm.gradient > 0 && cp.gemm.gradient <= 1))
    out.push_back("cluster.compute.gemm_gradient: must be in (0, 1]");
  if (!(cp.memory_efficiency > 0 && cp.memory_efficiency <= 1)) {
    out.push_back("cluster.compute.memory_efficiency: must be in (0, 1]");
  }
  if (cp.kernel_overhead < Picoseconds{0}) out.push_back("cluster.compute.kernel_overhead: must not be negative");
  const Parallelism& par = x.parallelism;
  const uint32_t per_server = c.gpus_per_server / std::max<uint32_t>(par.tp, 1);
  // n ranks with `local` of them on one server.
  auto checkAlgo = [&](const char* key, CollectiveAlgorithm a, CollectiveOp op, uint32_t n, uint32_t local) {
    if (n > 1 && !algorithmSupports(a, op, n, std::min(n, local))) {
      out.push_back(std::string("collectives.") + key + ": " + algorithmName(a) + " cannot run " + collectiveOpName(op) +
                    " over " + std::to_string(n) + " ranks");
    }
  };
  auto checkGradients = [&](uint32_t n, uint32_t local) {
    if (par.zero >= Zero::kOptimizer) {
      checkAlgo("reduce_scatter", x.collectives.reduce_scatter, CollectiveOp::kReduceScatter, n, local);
      checkAlgo("all_gather", x.collectives.all_gather, CollectiveOp::kAllGather, n, local);
    } else {
      checkAlgo("all_reduce", x.collectives.all_reduce, CollectiveOp::kAllReduce, n, local);
    }
  };
  if (x.collective.enabled) {
    const CollectiveOp op = x.collective.op;
    checkAlgo(collectiveOpName(op), algorithmFor(x.collectives, op), op, c.gpus, c.gpus_per_server);
    return out;
  }
  const uint32_t data_ranks = dataParallelRanks(par);
  checkGradients(data_ranks, per_server);
  const uint32_t ep = std::max<uint32_t>(par.ep, 1);
  // Expert-DP groups take every ep-th dp index: per_server / ep of them share a server.
  if (x.model.isMoe() && ep > 1) checkGradients(data_ranks / ep, std::max<uint32_t>(1, per_server / ep));
  // Ring attention's exchanges over the CP group (consecutive data-parallel indices).
  checkAlgo("all_gather", x.collectives.all_gather, CollectiveOp::kAllGather, par.cp, per_server);
  checkAlgo("reduce_scatter", x.collectives.reduce_scatter, CollectiveOp::kReduceScatter, par.cp, per_server);
  if (x.model.isMoe()) checkAlgo("all_to_all", x.collectives.all_to_all, CollectiveOp::kAllToAll, par.ep, per_server);
  if (out.empty() && x.chakra.empty() && x.simai.empty()) {
    const std::string problem = programLimitProblem(x, clusterGpu(c));
    if (!problem.empty()) out.push_back(problem);
  }
  return out;
}

namespace {

/// What each table of `world` with status bits set reports ("" when none does).
template <class... As>
std::string tableProblems(TrainWorld& world, TypeList<As...>) {
  std::string m;
  auto add = [&](uint32_t status, const char* name) {
    if (status == 0u) return;
    if (!m.empty()) m += ' ';
    m += TrainWorld::statusMessage(status, name);
  };
  (add(world.view().template table<As>().status, As::kName), ...);
  return m;
}

/**
 * A batch stopped with `status`. When only pooled packet storage ran out, the experiments of
 * `batch` not yet reported run again from the start in a batch of their own, those that
 * ran out (`ran_out`) with that storage doubled (net::growPooledStorage). Their results are
 * those of a run that fitted from the start; their wall time includes the failed attempt.
 * Otherwise, or at the knobs' limits, throws with what ran out (`tables`: the tables that
 * overflowed, as tableProblems says).
 */
std::vector<TrainingResult> retryWithMoreStorage(std::span<const TrainingExperiment> experiments,
                                                 const SimulationOptions& options, const ResultCallback& on_result,
                                                 const std::vector<size_t>& batch, const std::vector<bool>& reported,
                                                 const std::vector<bool>& ran_out, double wall, uint32_t status,
                                                 const std::string& tables, std::vector<TrainingResult>& results) {
  const uint32_t other = status & ~net::kStatusPacketPool;
  if (other != 0u) {
    std::string why = net::pooledStorageMessage(status);
    if ((other & net::kStatusFluidPaths) != 0u) {
      why += std::string(why.empty() ? "" : "; ") + "more flows were active at once than the flow-level model holds";
    }
    if (!tables.empty()) why += (why.empty() ? "" : "; ") + tables;
    throw std::runtime_error("the simulation stopped: " + why);
  }
  std::vector<TrainingExperiment> again;
  std::vector<size_t> index;  // again[i] is experiments[index[i]]
  for (size_t e = 0; e < batch.size(); ++e) {
    if (reported[e]) continue;
    again.push_back(experiments[batch[e]]);
    index.push_back(batch[e]);
    if (ran_out[e] && !net::growPooledStorage(status, again.back().network)) {
      throw std::runtime_error("the simulation stopped: " + net::pooledStorageMessage(status) +
                               " (the largest value is reached)");
    }
  }
  // Every experiment of the new batch is reported through the callback, which stores its
  // final result here.
  simulateTraining(again, options, [&](size_t i, const TrainingResult& r) {
    TrainingResult& out = results[index[i]];
    out = r;
    out.wall_seconds += wall;
    out.storage_retries += 1;
    if (on_result) on_result(index[i], out);
  });
  return results;
}

}  // namespace

std::vector<TrainingResult> simulateTraining(std::span<const TrainingExperiment> experiments,
                                             const SimulationOptions& options, const ResultCallback& on_result) {
  std::vector<TrainingResult> results(experiments.size());
  std::vector<size_t> batch;  // experiments that fit, in input order
  for (size_t i = 0; i < experiments.size(); ++i) {
    const TrainingExperiment& x = experiments[i];
    const std::vector<std::string> problems = checkTrainingExperiment(x);
    if (!problems.empty()) throw TrainingError("experiment '" + x.name + "': " + problems.front());
    results[i].peak_memory = peakStageMemory(x);
    if (!results[i].peak_memory.fits(hbmOf(x))) {
      results[i].oom = true;
      if (on_result) on_result(i, results[i]);
    } else {
      batch.push_back(i);
    }
  }
  if (batch.empty()) return results;

  // Tables start empty, as measureFootprint's do: static tables grow to their rows and
  // sizeForRun sizes the ones filled during the run, so the batch holds the sum of its
  // experiments' estimates and no idle capacity (4.9 MB when every table started at 1,024
  // rows, which a device budget cut to the estimates did not have).
  const auto n = static_cast<uint32_t>(batch.size());
  // Owned through a pointer so that a restart with more storage frees it first: otherwise
  // every restart would hold all the worlds before it.
  auto owned = std::make_unique<TrainWorld>(n, TableCapacity{1, 1});
  TrainWorld& world = *owned;
  RunRows rows;
  std::vector<const TrainingExperiment*> xs;
  std::vector<Plan> plans;
  for (ExpId e = 0; e < n; ++e) {
    xs.push_back(&experiments[batch[e]]);
    plans.push_back(makePlan(*xs.back()));
  }
  reserveBatchStorage(world, xs, plans, options);
  int64_t tasks = 0;
  for (ExpId e = 0; e < n; ++e) {
    const Filled filled = fillExperiment(world, e, *xs[e], plans[e], options, Fill::kAll);
    rows += runRows(*xs[e], filled.flows, options.network_detail);
    tasks += filled.rank_tasks;
    plans[e] = Plan{};  // its program is in the world now
  }
  sizeForRun(world, rows, options.trace ? tasks : 0);

  const CpuExecutor exec(options.threads, options.cpu_block, options.yield_to_load);
  std::unique_ptr<StepSession<TrainWorld>> session = openStepSession<TrainGraph>(options.device_runner, exec, world);
  std::vector<bool> reported(n, false);
  double wall = 0;
  const std::vector<bool> none(n, false);
  std::vector<Picoseconds> expected(n);
  if (options.on_progress) {
    for (ExpId e = 0; e < n; ++e) expected[e] = computeOnlyIteration(experiments[batch[e]]);
  }
  bool link_bins = false;
  bool log_flows = false;
  for (ExpId e = 0; e < n; ++e) {
    link_bins = link_bins || world.config(e).net.network.link_bin_ps > 0;
    log_flows = log_flows || world.config(e).train.log_flows != 0;
  }
  std::vector<std::string> link_rows(n);
  std::vector<std::vector<net::FlowResult>> flow_logs(n);
  // Drains the link samples (closing the open bins of the experiments about to be reported)
  // and the logged flows.
  // A detail table that overflowed (its sizing was wrong) has lost rows: the experiments
  // reported after that get no file from it, rather than an incomplete one.
  bool links_lost = false;
  bool flows_lost = false;
  auto drain = [&](bool all, const std::vector<bool>& hold) {
    links_lost = links_lost || world.table<net::LinkSample>().status != kStatusOk;
    flows_lost = flows_lost || world.table<FlowLog>().status != kStatusOk;
    if (link_bins && !links_lost) {
      std::vector<char> closing(n, 0);
      for (ExpId e = 0; e < n; ++e) closing[e] = !reported[e] && !hold[e] && (all || world.clock(e).done()) ? 1 : 0;
      session->syncTable<net::LinkSample>();
      session->syncTable<net::Link>();
      net::drainLinkSamples(world, link_rows, closing);
      session->pushTable<net::LinkSample>();
    }
    if (log_flows && !flows_lost) {
      session->syncTable<FlowLog>();
      auto& log = world.table<FlowLog>();
      for (ExpId e = 0; e < n; ++e) {
        for (int64_t r = log.expBegin(e); r < log.expEnd(e); ++r) flow_logs[e].push_back(log.get<LoggedFlow>(r).flow);
      }
      for (int64_t r = 0; r < log.rows; ++r) log.destroyRow(r);
      world.commitHost<FlowLog>();
      session->pushTable<FlowLog>();
    }
  };
  // Reports the experiments done (all, with `all`), except those in `hold`. The clocks are
  // current after every run; the rest of the world is fetched only when one is reported.
  auto report = [&](bool all, const std::vector<bool>& hold) {
    const auto due = [&](ExpId e) { return !reported[e] && !hold[e] && (all || world.clock(e).done()); };
    bool any = false;
    for (ExpId e = 0; e < n; ++e) any = any || due(e);
    if (any) session->syncHost();
    for (ExpId e = 0; e < n; ++e) {
      if (!due(e)) continue;
      reported[e] = true;
      TrainingResult& r = results[batch[e]];
      r = collectResult(world, e, experiments[batch[e]], options.network_detail);
      if (world.config(e).net.network.link_bin_ps > 0 && !links_lost) r.links_csv = net::kLinksCsvHeader + link_rows[e];
      std::string().swap(link_rows[e]);
      if (world.config(e).train.log_flows != 0 && !flows_lost) writeFlowFiles(experiments[batch[e]], flow_logs[e], r);
      std::vector<net::FlowResult>().swap(flow_logs[e]);
      r.wall_seconds = wall;
      if (on_result) on_result(batch[e], r);
    }
  };
  for (;;) {
    const RunReport r = session->run(link_bins || log_flows ? kDetailSteps : kTrainingStepsPerRun);
    wall += r.wall_seconds;
    if (r.status != 0u) {
      // Experiments done before the error keep their results; one whose storage ran out
      // lost a packet, so it runs again even if its clock says done.
      session->syncHost();
      std::vector<bool> ran_out(n);
      for (ExpId e = 0; e < n; ++e) ran_out[e] = net::experimentCounters(world, e).overflow > 0;
      drain(false, ran_out);
      report(false, ran_out);
      const std::string tables = tableProblems(world, TrainWorld::Archetypes{});
      session.reset();  // neither the device's copy of this world nor the world is needed again
      owned.reset();
      return retryWithMoreStorage(experiments, options, on_result, batch, reported, ran_out, wall, r.status, tables,
                                  results);
    }
    drain(r.finished || r.steps == 0, none);
    report(false, none);
    if (r.finished || r.steps == 0) break;
    if (options.on_progress) {
      BatchProgress p{n, 0, Picoseconds{INT64_MAX}, Picoseconds{0}, wall};
      for (ExpId e = 0; e < n; ++e) {
        if (reported[e]) {
          ++p.finished;
        } else if (world.clock(e).now_ps < p.slowest.ps) {
          p.slowest = Picoseconds{world.clock(e).now_ps};
          p.slowest_expected = expected[e];
        }
      }
      options.on_progress(p);
    }
  }
  report(true, none);
  return results;
}

Picoseconds computeOnlyIteration(const TrainingExperiment& x) {
  if (!x.chakra.empty() || !x.simai.empty() || x.collective.enabled) return Picoseconds{0};
  return ComputeModel(computeSpecOf(clusterGpu(x.cluster)), x.cluster.compute, x.operator_times)
      .iterationTime(x.model, x.training, x.parallelism)
      .total;
}

std::string describeTrainingGraph(bool dot) {
  const auto nodes = TrainGraph::describe();
  return dot ? formatGraphDot(nodes) : formatGraph(nodes);
}

}  // namespace mv
