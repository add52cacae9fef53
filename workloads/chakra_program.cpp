#include "workloads/chakra_program.hpp"

#include <map>
#include <string>
#include <utility>

namespace mv {

namespace {

ChakraAttribute intAttribute(std::string_view name, int64_t value) {
  ChakraAttribute a;
  a.name = std::string(name);
  a.kind = ChakraValueKind::kInt64;
  a.ints = {value};
  return a;
}

std::optional<int64_t> intOf(const ChakraNode& n, std::string_view name) {
  const ChakraAttribute* a = n.attribute(name);
  return a != nullptr ? a->integer() : std::nullopt;
}

ChakraCollectiveType chakraType(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return ChakraCollectiveType::kAllGather;
    case CollectiveOp::kReduceScatter:
      return ChakraCollectiveType::kReduceScatter;
    case CollectiveOp::kAllToAll:
      return ChakraCollectiveType::kAllToAll;
    case CollectiveOp::kBroadcast:
      return ChakraCollectiveType::kBroadcast;
    case CollectiveOp::kAllReduce:
      break;
  }
  return ChakraCollectiveType::kAllReduce;
}

ChakraTrace rankTrace(const StageProgram& prog, const Parallelism& par, uint32_t rank) {
  const uint32_t tp_index = rank % par.tp;
  const uint32_t dp_index = (rank / par.tp) % par.dp;
  ChakraTrace trace;
  trace.source = "rank " + std::to_string(rank);
  trace.version = "0.0.4";
  std::vector<std::vector<uint64_t>> waits(prog.tasks.size());
  for (uint32_t i = 0; i < prog.tasks.size(); ++i) {
    const TaskDef& t = prog.tasks[i];
    for (uint32_t k = 0; k < t.succ_count; ++k) waits[prog.succs[t.succ_begin + k]].push_back(i);
  }
  uint32_t previous[kStreams] = {kNoTask, kNoTask, kNoTask, kNoTask};
  for (uint32_t i = 0; i < prog.tasks.size(); ++i) {
    const TaskDef& t = prog.tasks[i];
    ChakraNode n;
    n.id = i;
    n.name = taskName(t);
    n.data_deps = waits[i];
    if (previous[t.stream] != kNoTask) n.ctrl_deps = {previous[t.stream]};
    previous[t.stream] = i;
    n.setAttribute(intAttribute(chakra_attr::kStream, t.stream));
    switch (t.kind) {
      case TaskKind::kCompute:
        n.type = ChakraNodeType::kComp;
        n.duration_micros = static_cast<uint64_t>((t.compute_ps + t.tp_ps + 500'000) / 1'000'000);
        n.setAttribute(intAttribute(chakra_attr::kComputePs, t.compute_ps));
        n.setAttribute(intAttribute(chakra_attr::kTpPs, t.tp_ps));
        break;
      case TaskKind::kSend:
        n.type = ChakraNodeType::kCommSend;
        n.setCommDst(megatronRank(par.tp, par.dp, t.peer_stage, tp_index, dp_index));
        n.setCommTag(t.peer_task);
        n.setCommSize(static_cast<uint64_t>(t.bytes));
        break;
      case TaskKind::kRecv:
        n.type = ChakraNodeType::kCommRecv;
        n.setCommSrc(megatronRank(par.tp, par.dp, t.peer_stage, tp_index, dp_index));
        n.setCommTag(i);
        n.setCommSize(static_cast<uint64_t>(t.bytes));
        break;
      case TaskKind::kCollective:
        n.type = ChakraNodeType::kCommColl;
        n.setCommType(chakraType(t.op));
        n.setCommSize(static_cast<uint64_t>(t.bytes));
        n.setPgName(processGroupName(t.comm));
        break;
    }
    trace.nodes.push_back(std::move(n));
  }
  return trace;
}

[[noreturn]] void fail(const ChakraTrace& trace, const ChakraNode& n, const std::string& what) {
  throw WorkloadError(trace.source + ": node " + std::to_string(n.id) + ": " + what);
}

/// The collective's group kind from its process-group name ("dp" when absent).
CommKind groupKind(const ChakraTrace& trace, const ChakraNode& n) {
  const std::string name(n.pgName().value_or("dp"));
  for (CommKind k : {CommKind::kDp, CommKind::kEp, CommKind::kExpertDp}) {
    if (name == processGroupName(k)) return k;
  }
  fail(trace, n, "unknown process group '" + name + "' (expected dp, ep or expert_dp)");
}

CollectiveOp collectiveOf(const ChakraTrace& trace, const ChakraNode& n) {
  switch (n.commType().value_or(ChakraCollectiveType::kBarrier)) {
    case ChakraCollectiveType::kAllReduce:
      return CollectiveOp::kAllReduce;
    case ChakraCollectiveType::kAllGather:
      return CollectiveOp::kAllGather;
    case ChakraCollectiveType::kReduceScatter:
    case ChakraCollectiveType::kReduceScatterBlock:
      return CollectiveOp::kReduceScatter;
    case ChakraCollectiveType::kAllToAll:
      return CollectiveOp::kAllToAll;
    default:
      fail(trace, n, "collective type is not all-reduce, all-gather, reduce-scatter or all-to-all");
  }
}

/// One stage's program from the trace of its first rank, in dependency order.
struct ImportedStage {
  StageProgram program;
  /// Receive index by (source rank, tag).
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> receives;
  /// Sends: (task index, destination rank, tag).
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> sends;
  /// The trace's node id of each task.
  std::vector<uint64_t> node_ids;
  /// Whether each task is a receive some send matched.
  std::vector<bool> received;
};

ImportedStage importStage(const ChakraTrace& trace, const Parallelism& par, uint32_t stage) {
  ImportedStage out;
  out.program.stage = stage;
  const std::vector<size_t> order = topologicalOrder(trace);
  std::map<uint64_t, uint32_t> index_of;
  for (size_t k = 0; k < order.size(); ++k) index_of[trace.nodes[order[k]].id] = static_cast<uint32_t>(k);
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (size_t k = 0; k < order.size(); ++k) {
    const ChakraNode& n = trace.nodes[order[k]];
    TaskDef t;
    const auto index = static_cast<uint32_t>(k);
    switch (n.type) {
      case ChakraNodeType::kComp:
        t.kind = TaskKind::kCompute;
        t.compute_ps = intOf(n, chakra_attr::kComputePs).value_or(static_cast<int64_t>(n.duration_micros) * 1'000'000);
        t.tp_ps = intOf(n, chakra_attr::kTpPs).value_or(0);
        if (t.compute_ps < 0 || t.compute_ps > kMaxTaskPs || t.tp_ps < 0 || t.tp_ps > kMaxTaskPs) {
          fail(trace, n, std::string(chakra_attr::kComputePs) + " and " + std::string(chakra_attr::kTpPs) +
                             " must be 0 to 10^15 ps (1,000 s, the longest task)");
        }
        t.stream = kComputeStream;
        break;
      case ChakraNodeType::kCommSend:
        t.kind = TaskKind::kSend;
        t.comm = CommKind::kPp;
        t.stream = kSendStream;
        out.sends.emplace_back(index, *n.commDst(), n.commTag().value_or(0));
        break;
      case ChakraNodeType::kCommRecv:
        t.kind = TaskKind::kRecv;
        t.comm = CommKind::kPp;
        t.stream = kRecvStream;
        if (!out.receives.emplace(std::make_pair(*n.commSrc(), n.commTag().value_or(0)), index).second) {
          fail(trace, n, "two receives with the same source and tag");
        }
        t.peer_stage = *n.commSrc() / (par.tp * par.dp);
        break;
      case ChakraNodeType::kCommColl:
        t.kind = TaskKind::kCollective;
        t.op = collectiveOf(trace, n);
        t.comm = groupKind(trace, n);
        t.stream = t.comm == CommKind::kEp ? kComputeStream : kDpStream;
        t.seq = collectiveCount(out.program, t.comm)++;
        break;
      default:
        fail(trace, n, "node type " + std::string(chakraNodeTypeName(n.type)) + " cannot be simulated");
    }
    if (n.isComm()) t.bytes = static_cast<int64_t>(n.commSize().value_or(0));
    if (const auto s = intOf(n, chakra_attr::kStream); s && *s >= 0 && *s < kStreams) t.stream = static_cast<uint8_t>(*s);
    out.program.tasks.push_back(t);
    out.node_ids.push_back(n.id);
    // Waits on earlier tasks of the same stream are implied by stream order.
    auto wait = [&](uint64_t dep) {
      const uint32_t from = index_of.at(dep);
      if (out.program.tasks[from].stream != t.stream) edges.emplace_back(from, index);
    };
    for (uint64_t d : n.ctrl_deps) wait(d);
    for (uint64_t d : n.data_deps) wait(d);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  linkProgram(out.program, std::move(edges));
  out.received.assign(out.program.tasks.size(), false);
  return out;
}

/**
 * How rank trace `b`, at position `k` of its pipeline stage, differs from `a`, the stage's
 * first rank: the same nodes (types, times, sizes, dependencies, streams, process groups,
 * tags), with every send's and receive's peer `k` ranks further (the same TP and DP position
 * in the peer stage); "" when it does not.
 */
std::string programDifference(const ChakraTrace& a, const ChakraTrace& b, uint32_t k) {
  if (a.nodes.size() != b.nodes.size()) {
    return std::to_string(b.nodes.size()) + " nodes against " + std::to_string(a.nodes.size());
  }
  auto shifted = [k](std::optional<uint32_t> peer) {
    return peer ? std::optional<uint64_t>(*peer + uint64_t{k}) : std::nullopt;
  };
  auto widened = [](std::optional<uint32_t> peer) { return peer ? std::optional<uint64_t>(*peer) : std::nullopt; };
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ChakraNode& x = a.nodes[i];
    const ChakraNode& y = b.nodes[i];
    const bool same = x.id == y.id && x.type == y.type && x.duration_micros == y.duration_micros &&
                      x.commSize() == y.commSize() && x.ctrl_deps == y.ctrl_deps && x.data_deps == y.data_deps &&
                      x.commTag() == y.commTag() && x.pgName() == y.pgName() &&
                      intOf(x, chakra_attr::kStream) == intOf(y, chakra_attr::kStream) &&
                      intOf(x, chakra_attr::kComputePs) == intOf(y, chakra_attr::kComputePs) &&
                      intOf(x, chakra_attr::kTpPs) == intOf(y, chakra_attr::kTpPs) &&
                      shifted(x.commDst()) == widened(y.commDst()) && shifted(x.commSrc()) == widened(y.commSrc());
    if (!same) return "node " + std::to_string(y.id) + " (#" + std::to_string(i) + " in the file)";
  }
  return "";
}

}  // namespace

std::vector<ChakraTrace> programToChakra(const TrainingProgram& program, const Parallelism& par) {
  std::vector<ChakraTrace> traces;
  const uint32_t ranks = par.tp * par.pp * par.dp;
  for (uint32_t r = 0; r < ranks; ++r) traces.push_back(rankTrace(program.stages[r / (par.tp * par.dp)], par, r));
  return traces;
}

TrainingProgram programFromChakra(const std::vector<ChakraTrace>& traces, const Parallelism& par) {
  const uint32_t per_stage = par.tp * par.dp;
  if (traces.size() != size_t{per_stage} * par.pp) {
    throw WorkloadError("expected " + std::to_string(per_stage * par.pp) + " rank traces (tp · pp · dp), got " +
                        std::to_string(traces.size()));
  }
  TrainingProgram out;
  std::vector<ImportedStage> stages;
  for (uint32_t s = 0; s < par.pp; ++s) {
    const ChakraTrace& first = traces[size_t{s} * per_stage];
    for (uint32_t k = 1; k < per_stage; ++k) {
      const ChakraTrace& other = traces[size_t{s} * per_stage + k];
      if (const std::string diff = programDifference(first, other, k); !diff.empty()) {
        throw WorkloadError(other.source + ": " + diff + " differs from " + first.source +
                            "; the ranks of a pipeline stage must run the same program, their peers at the "
                            "same TP and DP position of the peer stage");
      }
    }
    stages.push_back(importStage(first, par, s));
  }
  // "job.4.et: node 31", the place of stage s's task `index` in its first rank's trace.
  auto where = [&](uint32_t s, uint32_t index) {
    return traces[size_t{s} * per_stage].source + ": node " + std::to_string(stages[s].node_ids[index]);
  };
  // Match each stage's sends with the receives of the stage's first rank's peers.
  for (uint32_t s = 0; s < par.pp; ++s) {
    const uint32_t me = s * per_stage;
    for (auto [index, dst, tag] : stages[s].sends) {
      const uint32_t peer_stage = dst / per_stage;
      TaskDef& t = stages[s].program.tasks[index];
      if (dst % per_stage != 0 || peer_stage >= par.pp) {
        throw WorkloadError(where(s, index) + ": sends to rank " + std::to_string(dst) +
                            ", not the same TP and DP position of another stage");
      }
      const auto it = stages[peer_stage].receives.find({me, tag});
      if (it == stages[peer_stage].receives.end()) {
        throw WorkloadError(where(s, index) + ": no receive on rank " + std::to_string(dst) + " matches its tag " +
                            std::to_string(tag));
      }
      if (stages[peer_stage].received[it->second]) {
        throw WorkloadError(where(s, index) + ": a second send to rank " + std::to_string(dst) + " with tag " +
                            std::to_string(tag));
      }
      const TaskDef& recv = stages[peer_stage].program.tasks[it->second];
      if (recv.bytes != t.bytes) {
        throw WorkloadError(where(s, index) + ": sends " + std::to_string(t.bytes) + " bytes to rank " +
                            std::to_string(dst) + ", whose matching receive (" + where(peer_stage, it->second) +
                            ") expects " + std::to_string(recv.bytes));
      }
      stages[peer_stage].received[it->second] = true;
      t.peer_stage = peer_stage;
      t.peer_task = it->second;
    }
  }
  // Every receive needs its send, and no chain of waits may loop across ranks.
  for (uint32_t s = 0; s < par.pp; ++s) {
    for (const auto& [from, index] : stages[s].receives) {
      if (!stages[s].received[index]) {
        throw WorkloadError(where(s, index) + ": receives from rank " + std::to_string(from.first) + " with tag " +
                            std::to_string(from.second) + ", but no send of that rank matches it");
      }
    }
  }
  for (ImportedStage& s : stages) out.stages.push_back(std::move(s.program));
  if (const std::optional<TaskRef> stuck = firstStuckTask(out)) {
    throw WorkloadError(where(stuck->stage, stuck->task) +
                        ": can never start: the sends, receives and waits of the ranks wait on each other (a "
                        "deadlock across ranks)");
  }
  return out;
}

}  // namespace mv
