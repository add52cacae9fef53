#include "workloads/chakra_program.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "ecs/input_file.hpp"
#include "ecs/json_input.hpp"
#include "ecs/text.hpp"

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
  uint32_t previous[kStreams] = {kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask};
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
      case TaskKind::kCopy:
        throw WorkloadError(
            "parallelism.offload_layers: activation offload is not exported to Chakra yet; use "
            "offload_layers: 0");
    }
    trace.nodes.push_back(std::move(n));
  }
  return trace;
}

[[noreturn]] void fail(const ChakraTrace& trace, const ChakraNode& n, const std::string& what) {
  throw WorkloadError(trace.source + ": node " + std::to_string(n.id) + ": " + what);
}

/// The Megatron group kind a collective's process-group name names ("dp" when absent), or
/// none for any other name.
std::optional<CommKind> megatronGroup(const ChakraNode& n) {
  const std::string_view name = n.pgName().value_or(processGroupName(CommKind::kDp));
  for (CommKind k : {CommKind::kDp, CommKind::kEp, CommKind::kExpertDp}) {
    if (name == processGroupName(k)) return k;
  }
  return std::nullopt;
}

/// The collective's group kind from its process-group name ("dp" when absent).
CommKind groupKind(const ChakraTrace& trace, const ChakraNode& n) {
  if (const std::optional<CommKind> k = megatronGroup(n)) return *k;
  fail(trace, n, "unknown process group '" + printable(*n.pgName()) + "' (expected dp, ep or expert_dp)");
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

/// Tags of messages without comm_tag: matched in order, as NCCL matches the sends and
/// receives between two ranks.
constexpr uint64_t kUntagged = uint64_t{1} << 32;

/// "tag 12", or "untagged message #3 (matched in order)".
std::string tagText(uint64_t tag) {
  if (tag < kUntagged) return "tag " + std::to_string(tag);
  return "untagged message #" + std::to_string(tag - kUntagged) + " (matched in order)";
}

/// One program imported from a trace, in dependency order.
struct ImportedStage {
  StageProgram program;
  /// Receive index by (source rank, tag); a message without comm_tag has the tag
  /// kUntagged + its place among the untagged messages between the two ranks.
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> receives;
  /// Sends: (task index, destination rank, tag).
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> sends;
  /// The trace's node id of each task.
  std::vector<uint64_t> node_ids;
  /// Whether each task is a receive some send matched.
  std::vector<bool> received;
};

/**
 * The program of `trace` as stage `stage`. `map(node, task, peer)` fills the task of a node
 * (and for a send or receive the peer rank) and returns false for a node that takes no time
 * and is left out; a task then waits for what the left-out nodes it depends on waited for.
 * Sends and receives are collected for matching; the peer stage of each is for the caller
 * to set.
 */
template <class Map>
ImportedStage importProgram(const ChakraTrace& trace, uint32_t stage, Map&& map) {
  ImportedStage out;
  out.program.stage = stage;
  const std::vector<size_t> order = topologicalOrder(trace);
  // The tasks each node stands for as a dependency: itself, or for a left-out node the
  // tasks it waited for, the latest of each stream (the earlier ones of a stream are implied
  // by its order), so at most kStreams whatever the chain of left-out nodes.
  std::map<uint64_t, std::vector<uint32_t>> stands_for;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  // Untagged messages are numbered per process group and peer (NCCL orders them per communicator).
  std::map<std::pair<std::string, uint32_t>, uint64_t> untagged_sends;
  std::map<std::pair<std::string, uint32_t>, uint64_t> untagged_receives;
  for (const size_t k : order) {
    const ChakraNode& n = trace.nodes[k];
    std::array<uint32_t, kStreams> latest;
    latest.fill(kNoTask);
    for (const auto* deps : {&n.ctrl_deps, &n.data_deps}) {
      for (uint64_t d : *deps) {
        for (const uint32_t task : stands_for.at(d)) {
          uint32_t& slot = latest[out.program.tasks[task].stream];
          if (slot == kNoTask || task > slot) slot = task;
        }
      }
    }
    std::vector<uint32_t> waits;
    for (const uint32_t task : latest) {
      if (task != kNoTask) waits.push_back(task);
    }
    TaskDef t;
    uint32_t peer = 0;
    if (!map(n, t, peer)) {
      stands_for[n.id] = std::move(waits);
      continue;
    }
    const auto index = static_cast<uint32_t>(out.program.tasks.size());
    if (index >= kMaxProgramTasks) {
      fail(trace, n, "more than " + std::to_string(kMaxProgramTasks) + " tasks in one rank's program");
    }
    auto tagOf = [&](std::map<std::pair<std::string, uint32_t>, uint64_t>& untagged) {
      if (n.commTag()) return uint64_t{*n.commTag()};
      return kUntagged + untagged[{std::string(n.pgName().value_or("")), peer}]++;
    };
    switch (t.kind) {
      case TaskKind::kSend:
        out.sends.emplace_back(index, peer, tagOf(untagged_sends));
        break;
      case TaskKind::kRecv:
        if (!out.receives.emplace(std::make_pair(peer, tagOf(untagged_receives)), index).second) {
          fail(trace, n, "two receives with the same source and tag");
        }
        break;
      default:
        break;
    }
    if (n.isComm()) t.bytes = static_cast<int64_t>(n.commSize().value_or(0));
    if (const auto s = intOf(n, chakra_attr::kStream); s && *s >= 0 && *s < kStreams) t.stream = static_cast<uint8_t>(*s);
    out.program.tasks.push_back(t);
    out.node_ids.push_back(n.id);
    // Waits on earlier tasks of the same stream are implied by stream order.
    for (const uint32_t from : waits) {
      if (out.program.tasks[from].stream != t.stream) edges.emplace_back(from, index);
    }
    stands_for[n.id] = {index};
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  linkProgram(out.program, std::move(edges));
  out.received.assign(out.program.tasks.size(), false);
  return out;
}

/// A compute node's time from Multiverse's own attributes, else from duration_micros.
void setTraceTimes(const ChakraTrace& trace, const ChakraNode& n, TaskDef& t) {
  t.compute_ps = intOf(n, chakra_attr::kComputePs).value_or(static_cast<int64_t>(n.duration_micros) * 1'000'000);
  t.tp_ps = intOf(n, chakra_attr::kTpPs).value_or(0);
  if (t.compute_ps < 0 || t.compute_ps > kMaxTaskPs || t.tp_ps < 0 || t.tp_ps > kMaxTaskPs) {
    fail(trace, n,
         std::string(chakra_attr::kComputePs) + " and " + std::string(chakra_attr::kTpPs) +
             " must be 0 to 10^15 ps (1,000 s, the longest task)");
  }
}

/// A send, receive or collective task of `n` (the collective's group left to the caller);
/// false for any other node type.
bool setCommTask(const ChakraTrace& trace, const ChakraNode& n, TaskDef& t) {
  switch (n.type) {
    case ChakraNodeType::kCommSend:
      t.kind = TaskKind::kSend;
      t.comm = CommKind::kPp;
      t.stream = kSendStream;
      return true;
    case ChakraNodeType::kCommRecv:
      t.kind = TaskKind::kRecv;
      t.comm = CommKind::kPp;
      t.stream = kRecvStream;
      return true;
    case ChakraNodeType::kCommColl:
      t.kind = TaskKind::kCollective;
      t.op = collectiveOf(trace, n);
      t.stream = kDpStream;
      return true;
    default:
      return false;
  }
}

ImportedStage importStage(const ChakraTrace& trace, const Parallelism& par, uint32_t stage) {
  ImportedStage out = importProgram(trace, stage, [&](const ChakraNode& n, TaskDef& t, uint32_t& peer) {
    if (n.type == ChakraNodeType::kComp) {
      t.kind = TaskKind::kCompute;
      setTraceTimes(trace, n, t);
      return true;
    }
    if (!setCommTask(trace, n, t)) {
      fail(trace, n, "node type " + std::string(chakraNodeTypeName(n.type)) + " cannot be simulated");
    }
    if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) {
      const bool send = t.kind == TaskKind::kSend;
      const std::optional<uint32_t> named = send ? n.commDst() : n.commSrc();
      if (!named) {
        fail(trace, n,
             std::string(chakraNodeTypeName(n.type)) + " without " +
                 std::string(send ? chakra_attr::kCommDst : chakra_attr::kCommSrc));
      }
      peer = *named;
    }
    if (t.kind == TaskKind::kRecv) t.peer_stage = peer / (par.tp * par.dp);
    if (t.kind == TaskKind::kCollective) {
      t.comm = groupKind(trace, n);
      if (t.comm == CommKind::kEp) t.stream = kComputeStream;
    }
    return true;
  });
  // Collectives are numbered per group kind in program order.
  for (TaskDef& t : out.program.tasks) {
    if (t.kind == TaskKind::kCollective) t.seq = collectiveCount(out.program, t.comm)++;
  }
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
  if (par.cp > 1) {
    throw WorkloadError(
        "parallelism.cp: context-parallel programs are not exported to Chakra yet (their ring "
        "attention has no process group the Megatron import knows); use cp: 1");
  }
  std::vector<ChakraTrace> traces;
  const uint32_t ranks = par.tp * par.pp * par.dp;
  for (uint32_t r = 0; r < ranks; ++r) traces.push_back(rankTrace(program.stages[r / (par.tp * par.dp)], par, r));
  return traces;
}

namespace {

/// Matches every send of `stages` with its receive: stage s holds ranks [s · per_stage,
/// (s + 1) · per_stage), each running the stage's program with peers shifted by its position;
/// a send must go to the same position of another stage. Then every receive needs its send.
void matchMessages(std::vector<ImportedStage>& stages, const std::vector<std::string>& sources, uint32_t per_stage) {
  const auto count = static_cast<uint32_t>(stages.size());
  // "job.4.et: node 31", the place of stage s's task `index` in its first rank's trace.
  auto where = [&](uint32_t s, uint32_t index) {
    return sources[size_t{s} * per_stage] + ": node " + std::to_string(stages[s].node_ids[index]);
  };
  for (uint32_t s = 0; s < count; ++s) {
    const uint32_t me = s * per_stage;
    for (auto [index, dst, tag] : stages[s].sends) {
      const uint32_t peer_stage = dst / per_stage;
      TaskDef& t = stages[s].program.tasks[index];
      if (per_stage == 1 && dst >= count) {
        throw WorkloadError(where(s, index) + ": sends to rank " + std::to_string(dst) + ", but the job has " +
                            std::to_string(count) + " ranks");
      }
      if (dst % per_stage != 0 || peer_stage >= count) {
        throw WorkloadError(where(s, index) + ": sends to rank " + std::to_string(dst) +
                            ", not the same TP and DP position of another stage");
      }
      const auto it = stages[peer_stage].receives.find({me, tag});
      if (it == stages[peer_stage].receives.end()) {
        throw WorkloadError(where(s, index) + ": no receive on rank " + std::to_string(dst) + " matches its " +
                            tagText(tag));
      }
      if (stages[peer_stage].received[it->second]) {
        throw WorkloadError(where(s, index) + ": a second send to rank " + std::to_string(dst) + " with " +
                            tagText(tag));
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
  for (uint32_t s = 0; s < count; ++s) {
    for (const auto& [from, index] : stages[s].receives) {
      if (!stages[s].received[index]) {
        throw WorkloadError(where(s, index) + ": receives from rank " + std::to_string(from.first) + " with " +
                            tagText(from.second) + ", but no send of that rank matches it");
      }
    }
  }
}

/// Moves the imported programs into `out` and refuses a job whose waits loop across ranks.
void finishProgram(std::vector<ImportedStage>& stages, const std::vector<std::string>& sources, uint32_t per_stage,
                   TrainingProgram& out) {
  std::vector<std::vector<uint64_t>> node_ids;
  for (ImportedStage& s : stages) {
    out.stages.push_back(std::move(s.program));
    node_ids.push_back(std::move(s.node_ids));
  }
  if (const std::optional<TaskRef> stuck = firstStuckTask(out)) {
    throw WorkloadError(sources[size_t{stuck->stage} * per_stage] + ": node " +
                        std::to_string(node_ids[stuck->stage][stuck->task]) +
                        ": can never start: the sends, receives, collectives and waits of the ranks wait on each "
                        "other (a deadlock across ranks)");
  }
}

}  // namespace

TrainingProgram programFromChakra(const TraceSource& trace_of, uint32_t ranks, const Parallelism& par) {
  const uint32_t per_stage = par.tp * par.dp;
  if (ranks != per_stage * par.pp) {
    throw WorkloadError("expected " + std::to_string(per_stage * par.pp) + " rank traces (tp · pp · dp), got " +
                        std::to_string(ranks));
  }
  TrainingProgram out;
  std::vector<ImportedStage> stages;
  std::vector<std::string> sources(ranks);
  // One stage at a time: its first rank's trace is kept while the others are read and
  // compared, so at most two traces are in memory.
  for (uint32_t s = 0; s < par.pp; ++s) {
    const ChakraTrace first = trace_of(s * per_stage);
    sources[size_t{s} * per_stage] = first.source;
    for (uint32_t k = 1; k < per_stage; ++k) {
      const ChakraTrace other = trace_of(s * per_stage + k);
      sources[size_t{s} * per_stage + k] = other.source;
      if (const std::string diff = programDifference(first, other, k); !diff.empty()) {
        throw WorkloadError(other.source + ": " + diff + " differs from " + first.source +
                            "; the ranks of a pipeline stage must run the same program, their peers at the "
                            "same TP and DP position of the peer stage (workload.chakra_layout: ranks runs every "
                            "rank's own program)");
      }
    }
    stages.push_back(importStage(first, par, s));
  }
  matchMessages(stages, sources, per_stage);
  finishProgram(stages, sources, per_stage, out);
  return out;
}

TrainingProgram programFromChakra(const std::vector<ChakraTrace>& traces, const Parallelism& par) {
  return programFromChakra([&](uint32_t r) { return traces.at(r); }, static_cast<uint32_t>(traces.size()), par);
}

namespace {

/// The communicator of a collective: its pg_name, or "" (every rank) when it has none or
/// no communicator groups are given (as ASTRA-sim runs without a group file).
const std::string& communicatorOf(const ChakraTrace& trace, const ChakraNode& n, const CommGroups& groups,
                                  const std::string& world) {
  const std::optional<std::string_view> name = n.pgName();
  if (!name || groups.empty()) return world;
  const auto it = groups.find(*name);
  if (it == groups.end()) {
    fail(trace, n, "process group '" + printable(*name) + "' is not among the communicator groups");
  }
  return it->first;
}

std::string rankList(const std::vector<uint32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) out += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

/**
 * The peer rank of a send (comm_dst) or receive (comm_src) of rank `rank`; without it (the
 * PyTorch converter writes only pg_name), the other member of its two-rank process group.
 */
uint32_t peerOf(const ChakraTrace& trace, const ChakraNode& n, uint32_t rank, const CommGroups& groups) {
  const bool send = n.type == ChakraNodeType::kCommSend;
  if (const std::optional<uint32_t> named = send ? n.commDst() : n.commSrc()) return *named;
  const std::string missing = std::string(chakraNodeTypeName(n.type)) + " without " +
                              std::string(send ? chakra_attr::kCommDst : chakra_attr::kCommSrc);
  const std::optional<std::string_view> name = n.pgName();
  if (!name) fail(trace, n, missing + " or a pg_name whose group names its peer");
  const auto it = groups.find(*name);
  if (it == groups.end()) {
    fail(trace, n,
         missing + ", and its process group '" + printable(*name) + "' is not among the communicator groups");
  }
  const std::vector<uint32_t>& members = it->second;
  if (members.size() != 2 || std::find(members.begin(), members.end(), rank) == members.end()) {
    fail(trace, n,
         missing + ", and its process group '" + printable(*name) + "' (ranks " + rankList(members) +
             ") is not a pair holding rank " + std::to_string(rank) + ", so the peer is unknown");
  }
  return members[0] == rank ? members[1] : members[0];
}

/// Orders communicators by name ("" first: every rank).
struct ByName {
  bool operator()(const std::string* a, const std::string* b) const { return *a < *b; }
};

std::string collectiveText(const TaskDef& t) {
  static const char* const kOps[] = {"an all-reduce", "an all-gather", "a reduce-scatter", "an all-to-all",
                                     "a broadcast"};
  return std::string(kOps[static_cast<size_t>(t.op)]) + " of " + std::to_string(t.bytes) + " bytes";
}

}  // namespace

CommGroups readCommGroups(const std::filesystem::path& path, uint32_t ranks) {
  const std::string file = path.string();
  const InputFile in = readInputFile(path);
  if (!in.ok()) throw WorkloadError(file + ": " + in.problem);
  nlohmann::json root;
  try {
    root = parseJsonInput(in.text);
  } catch (const JsonInputError& e) {
    throw WorkloadError(file + ": " + e.what());
  }
  if (!root.is_object()) throw WorkloadError(file + ": expected an object of rank lists, e.g. {\"0\": [0, 1]}");
  CommGroups groups;
  std::vector<bool> seen(ranks, false);  // reset after each group: one bitmap for all
  for (const auto& item : root.items()) {
    const std::string& name = item.key();
    const nlohmann::json& list = item.value();
    auto bad = [&](const std::string& what) { throw WorkloadError(file + ": group '" + printable(name) + "': " + what); };
    if (name.empty()) throw WorkloadError(file + ": a group with an empty name");
    if (!list.is_array() || list.empty()) bad("expected a non-empty list of ranks");
    std::vector<uint32_t> members;
    for (const auto& v : list) {
      if (!v.is_number_unsigned() || v.get<uint64_t>() >= ranks) {
        const std::string what = v.is_number() ? v.dump() : std::string("a JSON ") + v.type_name();
        bad(what + " is not a rank of the job (0 to " + std::to_string(ranks - 1) + ")");
      }
      const auto r = v.get<uint32_t>();
      if (seen[r]) bad("rank " + std::to_string(r) + " listed twice");
      seen[r] = true;
      members.push_back(r);
    }
    for (const uint32_t r : members) seen[r] = false;
    groups.emplace(name, std::move(members));
  }
  return groups;
}

void writeCommGroups(const std::filesystem::path& path, const CommGroups& groups) {
  nlohmann::json root = nlohmann::json::object();
  for (const auto& [name, ranks] : groups) root[name] = ranks;
  std::ofstream out(path, std::ios::binary);
  out << root.dump() << "\n";
  if (!out) throw WorkloadError(path.string() + ": cannot write the communicator-group file");
}

CommGroups nameCommunicators(std::vector<ChakraTrace>& traces, const Parallelism& par) {
  CommGroups groups;
  const uint32_t ep = std::max<uint32_t>(par.ep, 1);
  for (uint32_t r = 0; r < traces.size(); ++r) {
    const uint32_t t = r % par.tp;
    const uint32_t d = (r / par.tp) % par.dp;
    const uint32_t s = r / (par.tp * par.dp);
    const std::string at = std::to_string(s) + "." + std::to_string(t);
    for (ChakraNode& n : traces[r].nodes) {
      if (n.type != ChakraNodeType::kCommColl) continue;
      const std::string kind(n.pgName().value_or(processGroupName(CommKind::kDp)));
      std::string name;
      std::vector<uint32_t> members;
      if (kind == processGroupName(CommKind::kEp)) {
        name = "ep." + at + "." + std::to_string(d / ep);
        for (uint32_t j = 0; j < ep; ++j) members.push_back(megatronRank(par.tp, par.dp, s, t, d / ep * ep + j));
      } else if (kind == processGroupName(CommKind::kExpertDp)) {
        name = "expert_dp." + at + "." + std::to_string(d % ep);
        for (uint32_t k = d % ep; k < par.dp; k += ep) members.push_back(megatronRank(par.tp, par.dp, s, t, k));
      } else {
        name = "dp." + at;
        for (uint32_t k = 0; k < par.dp; ++k) members.push_back(megatronRank(par.tp, par.dp, s, t, k));
      }
      n.setPgName(name);
      groups.emplace(name, std::move(members));
    }
  }
  return groups;
}

bool usesOtherGroups(const ChakraTrace& trace) {
  return std::any_of(trace.nodes.begin(), trace.nodes.end(),
                     [](const ChakraNode& n) { return n.type == ChakraNodeType::kCommColl && !megatronGroup(n); });
}

TrainingProgram programFromRankTraces(const std::vector<ChakraTrace>& traces, const CommGroups& groups,
                                      const ComputeModel& compute, TrainingPrecision precision) {
  return programFromRankTraces([&](uint32_t r) { return traces.at(r); }, static_cast<uint32_t>(traces.size()), groups,
                               compute, precision);
}

TrainingProgram programFromRankTraces(const TraceSource& trace_of, uint32_t ranks, const CommGroups& groups,
                                      const ComputeModel& compute, TrainingPrecision precision) {
  const std::string world;
  std::vector<std::string> sources(ranks);
  TrainingProgram out;
  out.per_rank = true;
  std::vector<ImportedStage> stages;
  // Per rank: its collectives in program order, with their communicator.
  std::vector<std::vector<std::pair<const std::string*, uint32_t>>> collectives(ranks);
  // One trace in memory at a time.
  for (uint32_t r = 0; r < ranks; ++r) {
    const ChakraTrace trace = trace_of(r);
    sources[r] = trace.source;
    std::vector<const std::string*> communicators;
    stages.push_back(importProgram(trace, r, [&](const ChakraNode& n, TaskDef& t, uint32_t& peer) {
      switch (n.type) {
        case ChakraNodeType::kInvalid:
        case ChakraNodeType::kMetadata:
          return false;
        case ChakraNodeType::kComp: {
          t.kind = TaskKind::kCompute;
          const ChakraAttribute* cpu = n.attribute(chakra_attr::kIsCpuOp);
          if (cpu != nullptr && cpu->boolean().value_or(false)) return false;
          if (n.duration_micros > 0 || n.attribute(chakra_attr::kComputePs) != nullptr) {
            setTraceTimes(trace, n, t);
            return true;
          }
          const auto flops = intOf(n, chakra_attr::kNumOps).value_or(0);
          const ChakraAttribute* size = n.attribute(chakra_attr::kTensorSize);
          const uint64_t bytes = size != nullptr ? size->unsignedInteger().value_or(0) : 0;
          if (flops <= 0 && bytes == 0) return false;
          t.compute_ps = compute
                             .opaqueKernelTime(static_cast<double>(std::max<int64_t>(flops, 0)),
                                               static_cast<double>(bytes), precision)
                             .ps;
          if (t.compute_ps > kMaxTaskPs) fail(trace, n, "num_ops and tensor_size take more than 1,000 s");
          return true;
        }
        default:
          break;
      }
      if (!setCommTask(trace, n, t)) {
        fail(trace, n, "node type " + std::string(chakraNodeTypeName(n.type)) + " cannot be simulated");
      }
      if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) {
        peer = peerOf(trace, n, r, groups);
        if (t.kind == TaskKind::kRecv && peer >= ranks) {
          fail(trace, n,
               "receives from rank " + std::to_string(peer) + ", but the job has " + std::to_string(ranks) + " ranks");
        }
        t.peer_stage = peer;
      }
      if (t.kind == TaskKind::kCollective) {
        t.comm = CommKind::kGroup;
        communicators.push_back(&communicatorOf(trace, n, groups, world));
      }
      return true;
    }));
    // The k-th collective task is the k-th collective node kept.
    const ImportedStage& st = stages.back();
    size_t k = 0;
    for (uint32_t i = 0; i < st.program.tasks.size(); ++i) {
      if (st.program.tasks[i].kind == TaskKind::kCollective) collectives[r].emplace_back(communicators[k++], i);
    }
  }
  matchMessages(stages, sources, 1);
  // Each communicator's collectives: its members run the same ones in the same order.
  std::vector<uint32_t> everyone(ranks);
  for (uint32_t r = 0; r < ranks; ++r) everyone[r] = r;
  std::map<const std::string*, std::vector<std::vector<uint32_t>>, ByName> by_group;
  for (uint32_t r = 0; r < ranks; ++r) {
    for (const auto& [group, task] : collectives[r]) {
      const std::vector<uint32_t>& members = group == &world ? everyone : groups.find(*group)->second;
      auto& lists = by_group[group];
      lists.resize(members.size());
      const auto pos = std::find(members.begin(), members.end(), r);
      if (pos == members.end()) {
        throw WorkloadError(sources[r] + ": node " + std::to_string(stages[r].node_ids[task]) +
                            ": a collective of process group '" + printable(*group) + "' (ranks " + rankList(members) +
                            "), which rank " + std::to_string(r) + " is not in");
      }
      lists[static_cast<size_t>(pos - members.begin())].push_back(task);
    }
  }
  for (auto& [group, lists] : by_group) {
    const std::vector<uint32_t>& members = group == &world ? everyone : groups.find(*group)->second;
    const std::string label = group == &world ? "every rank's collectives" : "process group '" + printable(*group) + "'";
    for (size_t m = 0; m < members.size(); ++m) {
      if (lists[m].size() != lists[0].size()) {
        throw WorkloadError(sources[members[m]] + ": " + std::to_string(lists[m].size()) + " collectives of " + label +
                            ", but " + sources[members[0]] + " has " + std::to_string(lists[0].size()) +
                            " (the members of a communicator run the same collectives in the same order)");
      }
    }
    for (size_t j = 0; j < lists[0].size(); ++j) {
      GroupCollective g;
      g.ranks = members;
      const TaskDef& first = stages[members[0]].program.tasks[lists[0][j]];
      for (size_t m = 0; m < members.size(); ++m) {
        TaskDef& t = stages[members[m]].program.tasks[lists[m][j]];
        if (t.op != first.op || t.bytes != first.bytes) {
          throw WorkloadError(
              sources[members[m]] + ": node " + std::to_string(stages[members[m]].node_ids[lists[m][j]]) +
              ": collective #" + std::to_string(j) + " of " + label + " is " + collectiveText(t) + ", but " +
              sources[members[0]] + ": node " + std::to_string(stages[members[0]].node_ids[lists[0][j]]) + " is " +
              collectiveText(first));
        }
        t.seq = static_cast<uint32_t>(out.group_collectives.size());
        g.tasks.push_back(lists[m][j]);
      }
      out.group_collectives.push_back(std::move(g));
    }
  }
  finishProgram(stages, sources, 1, out);
  return out;
}

}  // namespace mv
