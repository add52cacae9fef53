#include "workloads/simai.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "ecs/input_file.hpp"
#include "workloads/model.hpp"

namespace mv {

namespace {

/// The policy this reader runs; SimAI's other policies are refused.
constexpr std::string_view kPolicy = "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
/// SimAI raises forward communication below this to it (NCCL's small-message floor).
constexpr int64_t kMinForwardBytes = 4096;
/// Largest count in the header and of layer lines.
constexpr int64_t kMaxCount = int64_t{1} << 20;
/// Largest time of one phase (1,000 s) and size of one communication (16 TiB).
constexpr int64_t kMaxNs = int64_t{1'000'000'000'000};
constexpr int64_t kMaxBytes = int64_t{1} << 44;

[[noreturn]] void fail(const std::string& source, int line, const std::string& what) {
  throw WorkloadError(source + ":" + std::to_string(line) + ": " + what);
}

/// A whole decimal integer in [lo, hi], or an error naming `what`.
int64_t integer(const std::string& text, int64_t lo, int64_t hi, const std::string& source, int line,
                const std::string& what) {
  int64_t v = 0;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || end != text.data() + text.size() || text.empty()) {
    fail(source, line, what + ": '" + text + "' is not a whole number");
  }
  if (v < lo || v > hi) {
    fail(source, line,
         what + ": " + text + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

std::vector<std::string> fieldsOf(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

/// A communication type and its size; the group defaults to the phase's.
SimaiComm commOf(const std::string& type, const std::string& size, SimaiGroup phase_group, const std::string& source,
                 int line, const std::string& phase) {
  static const std::map<std::string, CollectiveOp, std::less<>> kOps{{"ALLREDUCE", CollectiveOp::kAllReduce},
                                                                     {"ALLGATHER", CollectiveOp::kAllGather},
                                                                     {"REDUCESCATTER", CollectiveOp::kReduceScatter},
                                                                     {"ALLTOALL", CollectiveOp::kAllToAll}};
  SimaiComm c;
  c.bytes = integer(size, 0, kMaxBytes, source, line, phase + " communication size");
  if (type == "NONE") return c;
  std::string base = type;
  c.group = phase_group;
  for (const auto& [suffix, group] :
       {std::pair{std::string("_DP_EP"), SimaiGroup::kExpertDp}, std::pair{std::string("_EP"), SimaiGroup::kEp}}) {
    if (base.size() > suffix.size() && base.ends_with(suffix)) {
      base.resize(base.size() - suffix.size());
      c.group = group;
      break;
    }
  }
  const auto it = kOps.find(base);
  if (it == kOps.end()) {
    fail(source, line,
         phase + " communication type '" + type +
             "' is not NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL (optionally _EP or _DP_EP)");
  }
  c.none = false;
  c.op = it->second;
  return c;
}

/// The header's `key: value` pairs (pp_comm has no colon).
void readHeader(const std::string& line, const std::string& source, SimaiWorkload& w) {
  const std::vector<std::string> f = fieldsOf(line);
  if (f.empty() || f[0] != kPolicy) {
    fail(source, 1,
         "parallelism policy '" + (f.empty() ? std::string() : f[0]) + "' is not " + std::string(kPolicy) +
             " (the policy AICB writes for training; others are not read)");
  }
  std::map<std::string, uint32_t*> counts{{"model_parallel_NPU_group", &w.tp},
                                          {"ep", &w.ep},
                                          {"pp", &w.pp},
                                          {"vpp", &w.vpp},
                                          {"ga", &w.ga},
                                          {"all_gpus", &w.gpus},
                                          {"checkpoints", &w.checkpoints}};
  std::set<std::string> seen;
  for (size_t i = 1; i < f.size(); i += 2) {
    std::string key = f[i];
    if (!key.empty() && key.back() == ':') key.pop_back();
    if (i + 1 >= f.size()) fail(source, 1, "header key '" + key + "' without a value");
    if (!seen.insert(key).second) {
      fail(source, 1, "header key '" + key + "' written twice (readers differ on which one wins; remove one)");
    }
    if (key == "pp_comm") {
      w.pp_comm = integer(f[i + 1], 0, kMaxBytes, source, 1, "pp_comm");
    } else if (key == "checkpoint_initiates") {
      integer(f[i + 1], 0, kMaxCount, source, 1, key);
    } else if (const auto it = counts.find(key); it != counts.end()) {
      *it->second = static_cast<uint32_t>(integer(f[i + 1], key == "checkpoints" ? 0 : 1, kMaxCount, source, 1, key));
    } else {
      fail(source, 1, "unknown header key '" + key + "'");
    }
  }
  if (w.gpus % w.tp != 0) {
    fail(source, 1,
         "all_gpus " + std::to_string(w.gpus) + " is not a multiple of model_parallel_NPU_group " +
             std::to_string(w.tp));
  }
}

}  // namespace

SimaiWorkload parseSimaiWorkload(const std::string& text, const std::string& source) {
  SimaiWorkload w;
  w.source = source;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) fail(source, 1, "empty file (expected the header line)");
  readHeader(line, source, w);
  if (!std::getline(in, line)) fail(source, 2, "missing the number of layer lines");
  const std::vector<std::string> count_field = fieldsOf(line);
  if (count_field.size() != 1) fail(source, 2, "expected the number of layer lines alone");
  const int64_t count = integer(count_field[0], 1, kMaxCount, source, 2, "layer lines");
  int number = 2;
  while (std::getline(in, line)) {
    ++number;
    const std::vector<std::string> f = fieldsOf(line);
    if (f.empty()) continue;
    if (static_cast<int64_t>(w.layers.size()) == count) {
      fail(source, number, "more layer lines than the " + std::to_string(count) + " line 2 announces");
    }
    if (f.size() != 12) {
      fail(source, number,
           std::to_string(f.size()) +
               " fields; a layer line has 12: name, -1, forward time, type, size, input-gradient "
               "time, type, size, weight-gradient time, type, size, update time");
    }
    SimaiLayer l;
    l.name = f[0];
    l.line = number;
    l.forward_ns = integer(f[2], 0, kMaxNs, source, number, "forward compute time");
    l.forward = commOf(f[3], f[4], SimaiGroup::kTp, source, number, "forward");
    l.input_grad_ns = integer(f[5], 0, kMaxNs, source, number, "input-gradient compute time");
    l.input_grad = commOf(f[6], f[7], SimaiGroup::kTp, source, number, "input-gradient");
    l.weight_grad_ns = integer(f[8], 0, kMaxNs, source, number, "weight-gradient compute time");
    l.weight_grad = commOf(f[9], f[10], SimaiGroup::kDp, source, number, "weight-gradient");
    l.update_ns = integer(f[11], 0, kMaxNs, source, number, "weight-gradient update time");
    w.layers.push_back(std::move(l));
  }
  if (static_cast<int64_t>(w.layers.size()) != count) {
    fail(source, 2,
         "announces " + std::to_string(count) + " layer lines; the file has " + std::to_string(w.layers.size()));
  }
  return w;
}

SimaiWorkload readSimaiWorkload(const std::filesystem::path& path) {
  const InputFile in = readInputFile(path);
  if (!in.ok()) throw WorkloadError(path.string() + ": " + in.problem);
  return parseSimaiWorkload(in.text, path.string());
}

TrainingProgram programFromSimai(const SimaiWorkload& w, const CollectiveModel& tp_model, double tp_bandwidth_factor) {
  if (w.pp > 1) {
    fail(w.source, 1, "pp " + std::to_string(w.pp) + ": SimAI's pipeline stages are not imported (files with pp: 1)");
  }
  if (w.checkpoints > 0) fail(w.source, 1, "checkpoints: activation checkpointing in SimAI files is not imported");
  if (w.tp > static_cast<uint32_t>(kMaxServerGpus)) {
    fail(w.source, 1,
         "model_parallel_NPU_group " + std::to_string(w.tp) + ": tensor parallelism must stay inside a " +
             "server of at most " + std::to_string(kMaxServerGpus) + " GPUs");
  }
  // Up to six tasks per line (three phases, each with a collective), and the closing one.
  if (w.layers.size() * 6 + 1 >= kMaxProgramTasks) fail(w.source, 2, "too many layer lines for one program");
  StageProgram p;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  const auto tp = static_cast<int32_t>(w.tp);
  auto add = [&](TaskDef t) {
    p.tasks.push_back(t);
    return static_cast<uint32_t>(p.tasks.size() - 1);
  };
  // A collective over a group other than TP: blocking ones on the compute stream.
  auto collective = [&](const SimaiComm& c, int64_t bytes, uint8_t stream, bool forward) {
    TaskDef t;
    t.kind = TaskKind::kCollective;
    t.op = c.op;
    t.comm = c.group == SimaiGroup::kEp         ? CommKind::kEp
             : c.group == SimaiGroup::kExpertDp ? CommKind::kExpertDp
                                                : CommKind::kDp;
    t.stream = stream;
    t.bytes = bytes;
    t.forward = forward;
    t.seq = collectiveCount(p, t.comm)++;
    return add(t);
  };
  // A compute phase, its TP communication folded in; any other blocking communication after it.
  auto phase = [&](int64_t ns, const SimaiComm& c, int64_t min_bytes, bool forward) {
    TaskDef t;
    t.compute_ps = ns * 1000;
    t.forward = forward;
    const int64_t bytes = c.bytes > 0 ? std::max(c.bytes, min_bytes) : 0;
    if (!c.none && c.group == SimaiGroup::kTp && tp > 1 && bytes > 0) {
      t.tp_ps =
          std::llround(static_cast<double>(collectiveTime(tp_model, c.op, tp, Bytes{bytes}).ps) / tp_bandwidth_factor);
    }
    const uint32_t index = add(t);
    if (!c.none && c.group != SimaiGroup::kTp) collective(c, bytes, kComputeStream, forward);
    return index;
  };
  for (const SimaiLayer& l : w.layers) phase(l.forward_ns, l.forward, kMinForwardBytes, true);
  for (auto it = w.layers.rbegin(); it != w.layers.rend(); ++it) {
    phase(it->input_grad_ns, it->input_grad, 0, false);
    const uint32_t wg = phase(it->weight_grad_ns, SimaiComm{}, 0, false);
    if (!it->weight_grad.none) {
      edges.emplace_back(wg, collective(it->weight_grad, it->weight_grad.bytes, kDpStream, false));
    }
  }
  // The next iteration's forward waits for every weight-gradient collective (SimAI's loop
  // blocks on them there): a task of no time closes the iteration after the last.
  TaskDef next;
  next.compute_ps = 0;
  const uint32_t close = add(next);
  for (uint32_t i = 0; i + 1 < p.tasks.size(); ++i) {
    if (p.tasks[i].stream == kDpStream) edges.emplace_back(i, close);
  }
  linkProgram(p, std::move(edges));
  TrainingProgram out;
  out.stages.push_back(std::move(p));
  out.micro_batches = w.ga;
  return out;
}

}  // namespace mv
