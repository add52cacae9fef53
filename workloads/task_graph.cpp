#include "workloads/task_graph.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "workloads/flops.hpp"
#include "workloads/memory.hpp"

namespace mv {

int64_t StageProgram::computePs() const {
  int64_t sum = 0;
  for (const TaskDef& t : tasks) {
    if (t.kind == TaskKind::kCompute) sum += t.compute_ps;
  }
  return sum;
}

int64_t TrainingProgram::templateTasks() const {
  int64_t n = 0;
  for (const StageProgram& s : stages) n += static_cast<int64_t>(s.tasks.size());
  return n;
}

std::optional<TaskRef> firstStuckTask(const TrainingProgram& program) {
  std::vector<size_t> base(program.stages.size() + 1, 0);
  for (size_t s = 0; s < program.stages.size(); ++s) base[s + 1] = base[s] + program.stages[s].tasks.size();
  // Waits left per task, and who each task releases: its successors, the next task of its
  // stream and, for a send, the receive it feeds.
  std::vector<uint32_t> waits(base.back(), 0);
  std::vector<std::vector<size_t>> releases(base.back());
  for (size_t s = 0; s < program.stages.size(); ++s) {
    const StageProgram& p = program.stages[s];
    size_t previous[kStreams];
    std::fill(std::begin(previous), std::end(previous), base.back());
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      const TaskDef& t = p.tasks[i];
      const size_t me = base[s] + i;
      waits[me] += t.dep_count;
      for (uint32_t k = 0; k < t.succ_count; ++k) releases[me].push_back(base[s] + p.succs[t.succ_begin + k]);
      if (previous[t.stream] != base.back()) {
        releases[previous[t.stream]].push_back(me);
        ++waits[me];
      }
      previous[t.stream] = me;
      if (t.kind == TaskKind::kSend && t.peer_task != kNoTask && t.peer_stage < program.stages.size() &&
          t.peer_task < program.stages[t.peer_stage].tasks.size()) {
        const size_t recv = base[t.peer_stage] + t.peer_task;
        releases[me].push_back(recv);
        ++waits[recv];
      }
    }
  }
  // A group collective is a meeting point: each member's task releases it when the member
  // arrives, and it releases what every member's task would.
  for (const GroupCollective& g : program.group_collectives) {
    const size_t meet = waits.size();
    waits.push_back(0);
    releases.emplace_back();
    for (size_t m = 0; m < g.ranks.size(); ++m) {
      const size_t task = base[g.ranks[m]] + g.tasks[m];
      auto& from = releases[task];
      releases[meet].insert(releases[meet].end(), from.begin(), from.end());
      from.assign(1, meet);
      ++waits[meet];
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < waits.size(); ++i) {
    if (waits[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    for (size_t next : releases[i]) {
      if (--waits[next] == 0) ready.push_back(next);
    }
  }
  for (size_t s = 0; s < program.stages.size(); ++s) {
    for (size_t i = base[s]; i < base[s + 1]; ++i) {
      if (waits[i] != 0) return TaskRef{static_cast<uint32_t>(s), static_cast<uint32_t>(i - base[s])};
    }
  }
  return std::nullopt;
}

uint32_t& collectiveCount(StageProgram& program, CommKind comm) {
  switch (comm) {
    case CommKind::kEp:
      return program.ep_collectives;
    case CommKind::kExpertDp:
      return program.expert_dp_collectives;
    case CommKind::kCp:
      return program.cp_collectives;
    default:
      return program.dp_collectives;
  }
}

const char* processGroupName(CommKind comm) {
  switch (comm) {
    case CommKind::kEp:
      return "ep";
    case CommKind::kExpertDp:
      return "expert_dp";
    case CommKind::kCp:
      return "cp";
    case CommKind::kOffload:
      return "offload";
    case CommKind::kGroup:
      return "group";
    default:
      return "dp";
  }
}

std::string taskName(const TaskDef& t) {
  static const char* const kKinds[] = {"compute", "send", "recv", "collective", "copy"};
  std::string name = kKinds[static_cast<int>(t.kind)];
  if (t.kind == TaskKind::kCollective) name += std::string(" ") + collectiveOpName(t.op);
  if (t.micro_batch != kNoTask) {
    name += std::string(t.forward ? " fwd" : " bwd") + " mb" + std::to_string(t.micro_batch) + " chunk" +
            std::to_string(t.chunk);
  }
  return name;
}

void linkProgram(StageProgram& program, std::vector<std::pair<uint32_t, uint32_t>> edges) {
  std::stable_sort(edges.begin(), edges.end(), [](auto a, auto b) { return a.first < b.first; });
  for (auto [from, to] : edges) {
    TaskDef& f = program.tasks[from];
    if (f.succ_count == 0) f.succ_begin = static_cast<uint32_t>(program.succs.size());
    ++f.succ_count;
    program.succs.push_back(to);
    ++program.tasks[to].dep_count;
  }
}

std::vector<ScheduleItem> pipelineOrder(uint32_t stage, uint32_t stages, uint32_t micro_batches, uint32_t chunks) {
  const uint32_t p = stages;
  const uint32_t v = chunks;
  const uint32_t total = micro_batches * v;
  // Virtual micro-batch k of the interleaved schedule (Megatron-LM): groups of p
  // micro-batches go through chunk 0, then chunk 1, ...; backward visits chunks in reverse.
  auto item = [&](uint32_t k, bool forward) {
    const uint32_t in_group = k % (p * v);
    const uint32_t chunk = forward ? in_group / p : v - 1 - in_group / p;
    return ScheduleItem{forward, (k / (p * v)) * p + k % p, chunk};
  };
  auto plain = [&](uint32_t k, bool forward) { return ScheduleItem{forward, k, 0}; };
  const uint32_t warmup =
      v == 1 ? std::min(p - stage - 1, total) : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  std::vector<ScheduleItem> order;
  order.reserve(2 * total);
  auto at = [&](uint32_t k, bool forward) { return v == 1 ? plain(k, forward) : item(k, forward); };
  for (uint32_t k = 0; k < warmup; ++k) order.push_back(at(k, true));
  for (uint32_t i = 0; i + warmup < total; ++i) {
    order.push_back(at(warmup + i, true));
    ScheduleItem backward = at(i, false);
    backward.paired = v > 1;
    order.push_back(backward);
  }
  for (uint32_t k = total - warmup; k < total; ++k) order.push_back(at(k, false));
  return order;
}

int64_t overlapCost(int64_t collective, int64_t gemm, double slowdown) {
  if (collective <= 0) return 0;
  const auto slowed = static_cast<int64_t>(std::llround(static_cast<double>(collective) * (1.0 - 1.0 / slowdown)));
  return std::max(collective - gemm, slowed);
}

LayerPassTimes layerPassTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                              const ComputeModel& compute, const ProgramOptions& options) {
  const LayerTimes lt = compute.layerTimes(model, config, par);
  LayerPassTimes out;
  out.forward_compute = lt.forward;
  out.backward_compute = lt.backward + lt.recompute;
  const auto tp = static_cast<int32_t>(par.tp);
  if (tp <= 1) return out;
  // TP collectives of one layer and pass (Korthikanti et al.): two all-reduces of the b·s·h
  // activations, or with sequence parallelism an all-gather before each column-parallel
  // linear (QKV, MLP up) and a reduce-scatter after each row-parallel one.
  const Bytes act{static_cast<int64_t>(boundaryActivationBytes(model, config, par))};
  const auto timeOf = [&](CollectiveOp op) {
    return std::llround(static_cast<double>(collectiveTime(options.tp_model, op, tp, act).ps) /
                        options.tp_bandwidth_factor);
  };
  const bool sp = sequenceParallelActive(par);
  const int64_t all_reduce = sp ? 0 : timeOf(CollectiveOp::kAllReduce);
  const int64_t all_gather = sp ? timeOf(CollectiveOp::kAllGather) : 0;
  const int64_t reduce_scatter = sp ? timeOf(CollectiveOp::kReduceScatter) : 0;
  const int64_t forward = sp ? 2 * (all_gather + reduce_scatter) : 2 * all_reduce;
  // The backward: each row-parallel linear's output gradient is all-gathered (SP); each
  // column-parallel linear's input gradient is all-reduced, or with SP reduce-scattered
  // after its input, stored sharded, is all-gathered again for the weight gradient.
  int64_t backward = sp ? 4 * all_gather + 2 * reduce_scatter : 2 * all_reduce;
  if (par.tp_comm_overlap) {
    // Megatron's overlap in the backward of each column-parallel linear: without SP the
    // all-reduce beside the weight-gradient GEMM; with SP the all-gather beside the
    // input-gradient GEMM and the reduce-scatter beside the weight-gradient GEMM. The
    // row-parallel linears' all-gathers wait. An MoE layer's expert linears communicate
    // through the token dispatcher instead, so only QKV overlaps there.
    backward = sp ? 2 * all_gather : 0;
    for (const Operator& op : layerOperators(model, config, par)) {
      if (op.name != "qkv" && op.name != "mlp_up") continue;
      if (op.name == "mlp_up" && model.isMoe()) {
        backward += sp ? all_gather + reduce_scatter : all_reduce;
        continue;
      }
      const int64_t dgrad = compute.gradientGemmTime(op, config.precision, false).ps;
      const int64_t wgrad = compute.gradientGemmTime(op, config.precision, true).ps;
      backward += sp ? overlapCost(all_gather, dgrad, options.overlap_slowdown) +
                           overlapCost(reduce_scatter, wgrad, options.overlap_slowdown)
                     : overlapCost(all_reduce, wgrad, options.overlap_slowdown);
    }
  }
  out.tp_forward = Picoseconds{forward};
  out.tp_backward = Picoseconds{par.recompute == Recompute::kFull ? backward + forward : backward};
  return out;
}

namespace {

/// Compute and TP time of one pass of one model chunk for one micro-batch.
struct BlockTimes {
  int64_t forward = 0;
  int64_t backward = 0;  ///< including recomputation
  int64_t tp_forward = 0;
  int64_t tp_backward = 0;
  /// With context parallelism: the attention kernels' part of forward and backward (its
  /// recomputation included), which overlaps the CP exchange.
  int64_t attention_forward = 0;
  int64_t attention_backward = 0;
  /// One layer's forward and backward (with recomputation) without the CP attention part:
  /// where activation offload cuts a block.
  int64_t layer_forward = 0;
  int64_t layer_backward = 0;
};

/// Per-chunk block times of `stage`: its layers split evenly over the chunks, the
/// embedding on chunk 0 of stage 0 and the output layer on the last chunk of the last stage.
std::vector<BlockTimes> chunkTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                                   const ComputeModel& compute, const ProgramOptions& options, uint32_t stage) {
  const uint32_t v = std::max<uint32_t>(par.vpp, 1);
  const uint32_t layers = stageLayers(model, par, stage);
  const LayerPassTimes lt = layerPassTimes(model, config, par, compute, options);
  int64_t attention_forward = 0;
  int64_t attention_backward = 0;
  if (par.cp > 1) {
    for (const Operator& op : layerOperators(model, config, par)) {
      if (!op.attention_core) continue;
      const int64_t fwd = compute.forwardTime(op, config.precision).ps;
      attention_forward += fwd;
      attention_backward +=
          compute.backwardTime(op, config.precision).ps + (par.recompute != Recompute::kNone ? fwd : 0);
    }
  }
  std::vector<BlockTimes> out(v);
  for (uint32_t c = 0; c < v; ++c) {
    const uint32_t n = layers / v + (c < layers % v ? 1 : 0);
    out[c].forward = lt.forward_compute.ps * n;
    out[c].backward = lt.backward_compute.ps * n;
    out[c].tp_forward = lt.tp_forward.ps * n;
    out[c].tp_backward = lt.tp_backward.ps * n;
    out[c].attention_forward = attention_forward * n;
    out[c].attention_backward = attention_backward * n;
    out[c].layer_forward = lt.forward_compute.ps - attention_forward;
    out[c].layer_backward = lt.backward_compute.ps - attention_backward;
  }
  auto addOps = [&](BlockTimes& b, const std::vector<Operator>& ops) {
    for (const Operator& op : ops) {
      b.forward += compute.forwardTime(op, config.precision).ps;
      b.backward += compute.backwardTime(op, config.precision).ps;
    }
  };
  if (stage == 0) addOps(out[0], firstStageOperators(model, config, par));
  if (stage + 1 == std::max<uint32_t>(par.pp, 1)) addOps(out[v - 1], lastStageOperators(model, config, par));
  return out;
}

/// Builds one stage's program: tasks in program order, edges collected then compacted.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(uint32_t stage) { program_.stage = stage; }

  uint32_t add(TaskDef t) {
    if (t.kind == TaskKind::kCollective) t.seq = collectiveCount(program_, t.comm)++;
    program_.tasks.push_back(t);
    const auto index = static_cast<uint32_t>(program_.tasks.size() - 1);
    last_on_[t.stream] = index;
    return index;
  }
  /// The latest task added to `stream` (kNoTask before the first).
  uint32_t lastOn(uint8_t stream) const { return last_on_[stream]; }
  void edge(uint32_t from, uint32_t to) {
    if (from == kNoTask || to == kNoTask) return;
    edges_.emplace_back(from, to);
  }
  StageProgram finish() {
    linkProgram(program_, std::move(edges_));
    return std::move(program_);
  }

 private:
  StageProgram program_;
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::array<uint32_t, kStreams> last_on_ = {kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask, kNoTask};
};

TaskDef computeTask(int64_t compute_ps, int64_t tp_ps, const ScheduleItem& it) {
  TaskDef t;
  t.forward = it.forward;
  t.compute_ps = compute_ps;
  t.tp_ps = tp_ps;
  t.micro_batch = it.micro_batch;
  t.chunk = it.chunk;
  return t;
}

TaskDef commTask(TaskKind kind, CommKind comm, uint8_t stream, CollectiveOp op, int64_t bytes, uint32_t mb,
                 uint32_t chunk, bool forward = true) {
  TaskDef t;
  t.forward = forward;
  t.kind = kind;
  t.comm = comm;
  t.stream = stream;
  t.op = op;
  t.bytes = bytes;
  t.micro_batch = mb;
  t.chunk = chunk;
  return t;
}

/// A copy of `bytes` between GPU and host memory taking `ps`, for the block `it`.
TaskDef copyTask(uint8_t stream, int64_t bytes, int64_t ps, const ScheduleItem& it) {
  TaskDef t = commTask(TaskKind::kCopy, CommKind::kOffload, stream, CollectiveOp::kAllReduce, bytes, it.micro_batch,
                       it.chunk, it.forward);
  t.compute_ps = ps;
  return t;
}

/// Where the activations of (stage, chunk) go in the forward pass: (stage, chunk) of the
/// next virtual stage, or none after the last.
struct Peer {
  bool exists = false;
  uint32_t stage = 0;
  uint32_t chunk = 0;
};
Peer nextVirtual(uint32_t stage, uint32_t chunk, uint32_t p, uint32_t v) {
  if (stage + 1 < p) return {true, stage + 1, chunk};
  if (chunk + 1 < v) return {true, 0, chunk + 1};
  return {};
}
Peer prevVirtual(uint32_t stage, uint32_t chunk, uint32_t p) {
  if (stage > 0) return {true, stage - 1, chunk};
  if (chunk > 0) return {true, p - 1, chunk - 1};
  return {};
}

/// Buckets of `bytes` (at least one).
int64_t bucketCount(int64_t bytes, int64_t bucket) { return std::max<int64_t>(1, (bytes + bucket - 1) / bucket); }

/// The buckets of one model chunk's gradients (or parameters) reduced (gathered) over one
/// group: dense parameters over DP, expert parameters over the expert-DP group.
struct BucketFamily {
  CommKind comm = CommKind::kDp;
  int64_t bytes = 0;
  int64_t count = 0;  ///< 0 when the group is a single rank (nothing to reduce)

  /// `elements` of `element_bytes` each over a group of `group` ranks, in buckets of
  /// `bucket_bytes` bytes when positive, else of `bucket_elements` elements.
  BucketFamily(CommKind kind, double elements, uint32_t element_bytes, uint32_t group, int64_t bucket_bytes,
               int64_t bucket_elements)
      : comm(kind), bytes(static_cast<int64_t>(elements * element_bytes)) {
    const int64_t whole = static_cast<int64_t>(std::ceil(elements));
    count = group <= 1 || bytes <= 0 ? 0
            : bucket_bytes > 0       ? bucketCount(bytes, bucket_bytes)
                                     : bucketCount(whole, bucket_elements);
  }
  /// The same bytes in `units` buckets (ZeRO-3: one per layer, FSDP's usual wrapping).
  BucketFamily perUnit(int64_t units) const {
    BucketFamily f = *this;
    if (f.count > 0) f.count = std::clamp<int64_t>(units, 1, bytes);
    return f;
  }
  int64_t bucketBytes(int64_t j) const { return bytes / count + (j < bytes % count ? 1 : 0); }
  /// The first piece of the forward that uses bucket j's parameters.
  int64_t neededBy(int64_t j, int64_t pieces) const { return j * pieces / count; }
  /// The buckets [first, second) whose gradients are complete after piece k (of `pieces` a
  /// block is split into): their share of the backward is done.
  std::pair<int64_t, int64_t> readyAfterPiece(int64_t k, int64_t pieces) const {
    return {k * count / pieces, (k + 1) * count / pieces};
  }
  /// The buckets [first, second) whose parameters piece k uses first: neededBy(j) == k.
  std::pair<int64_t, int64_t> neededByPiece(int64_t k, int64_t pieces) const {
    return {(k * count + pieces - 1) / pieces, ((k + 1) * count + pieces - 1) / pieces};
  }
};

/// Index of a P2P task by (receive?, forward?, micro-batch, chunk) in a stage's program.
struct P2pIndex {
  uint32_t micro_batches = 0;
  uint32_t chunks = 0;
  std::vector<uint32_t> at;  // [recv][forward][mb][chunk]
  void init(uint32_t m, uint32_t v) {
    micro_batches = m;
    chunks = v;
    at.assign(4 * size_t{m} * v, kNoTask);
  }
  uint32_t& slot(bool recv, bool forward, uint32_t mb, uint32_t chunk) {
    return at[((size_t{recv} * 2 + size_t{forward}) * micro_batches + mb) * chunks + chunk];
  }
};

}  // namespace

TrainingProgram collectiveBenchmarkProgram(CollectiveOp op, Bytes bytes, uint32_t iters) {
  TrainingProgram out;
  out.micro_batches = 1;
  StageProgram& stage = out.stages.emplace_back();
  for (uint32_t i = 0; i < iters; ++i) {
    TaskDef t;
    t.kind = TaskKind::kCollective;
    t.comm = CommKind::kDp;
    t.stream = kDpStream;
    t.op = op;
    t.bytes = bytes.count;
    t.seq = collectiveCount(stage, CommKind::kDp)++;
    stage.tasks.push_back(t);
  }
  return out;
}

TrainingProgram buildTrainingProgram(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                                     const ComputeModel& compute, const ProgramOptions& options) {
  const uint32_t p = std::max<uint32_t>(par.pp, 1);
  const uint32_t v = std::max<uint32_t>(par.vpp, 1);
  const uint32_t m = microBatchCount(config, par);
  const uint32_t seq = localSequence(model, config, par);
  const auto act_bytes = static_cast<int64_t>(boundaryActivationBytes(model, config, par));
  // Pipeline messages: the b·s·h activation (or its gradient), split over TP (÷t with SP,
  // each TP rank sends its slice either way as Megatron's scatter-gather does).
  const int64_t p2p_bytes = act_bytes / std::max<uint32_t>(par.tp, 1);
  // Expert all-to-all per layer and pass: dispatch and combine of the top-k routed tokens.
  const int64_t a2a_layer = model.isMoe() ? 2 * act_bytes * model.top_k / std::max<uint32_t>(par.tp, 1) : 0;
  // Ring attention per layer and pass: every CP rank's keys and values (b · s/cp tokens,
  // 2 · kv_width / t wide) gathered over the CP group (nccl-tests convention: the output
  // buffer, cp times one rank's share).
  const int64_t cp_layer = par.cp > 1 ? int64_t{par.cp} * 2 * config.micro_batch * seq *
                                            static_cast<int64_t>(model.kvWidth() / std::max<uint32_t>(par.tp, 1)) *
                                            activationBytes(config.precision)
                                      : 0;
  const bool recomputes_attention = par.recompute != Recompute::kNone;
  // Activation offload: the stored activations of one layer and micro-batch, and the time
  // each direction of the host link takes to copy them.
  const int64_t offload_bytes =
      par.offload_layers > 0 ? layerActivationBytes(model, config, par, par.recompute).count : 0;
  const int64_t copy_ps =
      offload_bytes > 0 && options.host_copy_bytes_per_s > 0
          ? static_cast<int64_t>(std::ceil(static_cast<double>(offload_bytes) / options.host_copy_bytes_per_s * 1e12))
          : 0;
  // What the DP group (with CP) shards (nothing to shard over a single replica).
  const uint32_t data_ranks = dataParallelRanks(par);
  const Zero zero = data_ranks > 1 ? par.zero : Zero::kNone;
  const CollectiveOp reduce_op = zero >= Zero::kOptimizer ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
  const int64_t bucket_bytes = options.dp_bucket.count;
  const int64_t bucket_elements = dpBucketParameters(par);

  TrainingProgram out;
  out.micro_batches = m;
  std::vector<P2pIndex> index(p);
  for (uint32_t s = 0; s < p; ++s) {
    index[s].init(m, v);
    ProgramBuilder b(s);
    const std::vector<BlockTimes> times = chunkTimes(model, config, par, compute, options, s);
    const uint32_t layers = stageLayers(model, par, s);
    auto layersIn = [&](uint32_t chunk) { return layers / v + (chunk < layers % v ? 1 : 0); };
    std::vector<uint32_t> dp_tasks;
    std::vector<uint32_t> stored(size_t{m} * v, kNoTask);  // offload copy of (micro-batch, chunk)
    const uint32_t element = activationBytes(config.precision);
    const uint32_t grad_element = gradReduceBytes(config.precision, config.grad_reduce);
    const StageParameters stage_params = stageParameters(model, par, s);
    const uint32_t expert_group = data_ranks / std::max<uint32_t>(par.ep, 1);
    // Gradient buckets (reduced) and parameter buckets (gathered) of one chunk: DP buckets,
    // or one per layer with ZeRO-3.
    using Families = std::array<BucketFamily, 2>;
    auto families = [&](uint32_t chunk, uint32_t element_bytes, bool sharded) {
      Families f{BucketFamily{CommKind::kDp, stage_params.dense / v, element_bytes, sharded ? data_ranks : 1,
                              bucket_bytes, bucket_elements},
                 BucketFamily{CommKind::kExpertDp, stage_params.expert / v, element_bytes, sharded ? expert_group : 1,
                              bucket_bytes, bucket_elements}};
      if (zero >= Zero::kParameters) {
        for (BucketFamily& x : f) x = x.perUnit(layersIn(chunk));
      }
      return f;
    };
    auto piecesOf = [](const Families& f) { return std::max<int64_t>({1, f[0].count, f[1].count}); };
    // The reduction of bucket j of chunk `chunk`'s family f, after task `after`.
    auto reduceBucket = [&](const BucketFamily& f, int64_t j, uint32_t chunk, uint32_t after) {
      const uint32_t red =
          b.add(commTask(TaskKind::kCollective, f.comm, kDpStream, reduce_op, f.bucketBytes(j), kNoTask, chunk));
      b.edge(after, red);
      dp_tasks.push_back(red);
    };
    const bool sharded = zero >= Zero::kOptimizer;
    const Families first_gathers = families(0, element, sharded && zero < Zero::kParameters);
    const int64_t gather_pieces = piecesOf(first_gathers);
    // Every bucket of every chunk is at least one task: refused before anything is built (a
    // bucket of a few bytes would make millions, and the pieces they cut blocks into more).
    int64_t buckets = 0;
    for (uint32_t c = 0; c < v; ++c) {
      for (const BucketFamily& f : families(c, grad_element, true)) buckets += f.count;
      for (const BucketFamily& f : first_gathers) buckets += f.count;
    }
    if (buckets >= kMaxProgramTasks) {
      throw WorkloadError("stage " + std::to_string(s) + " reduces and gathers " + std::to_string(buckets) +
                          " DP buckets, more than the " + std::to_string(kMaxProgramTasks) +
                          " tasks a stage's program may hold; raise parallelism.dp_bucket or collectives.dp_bucket");
    }
    // ZeRO-1 and -2: the parameter all-gathers of the previous optimizer step, per bucket and
    // chunk, on the DP stream; gathers[c][k] are the ones forward piece k of chunk c waits for.
    std::vector<std::vector<std::vector<uint32_t>>> gathers(v, std::vector<std::vector<uint32_t>>(gather_pieces));
    for (uint32_t c = 0; c < v; ++c) {
      for (const BucketFamily& f : first_gathers) {
        for (int64_t j = 0; j < f.count; ++j) {
          gathers[c][f.neededBy(j, gather_pieces)].push_back(b.add(
              commTask(TaskKind::kCollective, f.comm, kDpStream, CollectiveOp::kAllGather, f.bucketBytes(j), kNoTask, c)));
        }
      }
    }
    // How each block is split: per bucket where buckets overlap it.
    const std::vector<ScheduleItem> order = pipelineOrder(s, p, m, v);
    struct Block {
      int64_t pieces = 1;
      bool gathered = false;       ///< ZeRO-3: every piece waits for its layer's all-gather
      bool first_forward = false;  ///< ZeRO-1/2: the first forward of its chunk waits for `gathers`
      bool reduced = false;        ///< gradients reduced after its pieces
    };
    std::vector<Block> blocks(order.size());
    std::vector<bool> seen_forward(v, false);
    for (size_t i = 0; i < order.size(); ++i) {
      const ScheduleItem& it = order[i];
      Block& bl = blocks[i];
      bl.reduced = !it.forward && (zero >= Zero::kGradients || (it.micro_batch + 1 == m && par.dp_comm_overlap));
      bl.gathered = zero >= Zero::kParameters;
      bl.first_forward = it.forward && !seen_forward[it.chunk] && sharded && !bl.gathered;
      if (it.forward) seen_forward[it.chunk] = true;
      if (bl.gathered) {
        bl.pieces = piecesOf(families(it.chunk, element, true));
      } else if (bl.reduced) {
        bl.pieces = piecesOf(families(it.chunk, grad_element, true));
      } else if (bl.first_forward) {
        bl.pieces = gather_pieces;
      }
    }
    // ZeRO-3 gathers are issued one compute piece ahead (FSDP's prefetch of one layer): the
    // gathers of piece n + 1 are queued on the DP stream before piece n's reduce-scatters
    // and wait for piece n - 1, so they overlap piece n.
    std::vector<uint32_t> computed;  // compute pieces in compute-stream order
    std::vector<uint32_t> pending;   // gathers the next piece waits for
    size_t next_block = 0;
    int64_t next_piece = 0;
    auto queueGathers = [&]() {
      pending.clear();
      if (next_block >= blocks.size() || !blocks[next_block].gathered) return;
      const ScheduleItem& it = order[next_block];
      const int64_t pieces = blocks[next_block].pieces;
      for (const BucketFamily& f : families(it.chunk, element, true)) {
        const auto [first, end] = f.neededByPiece(next_piece, pieces);
        for (int64_t j = first; j < end; ++j) {
          const uint32_t g = b.add(commTask(TaskKind::kCollective, f.comm, kDpStream, CollectiveOp::kAllGather,
                                            f.bucketBytes(j), it.micro_batch, it.chunk, it.forward));
          if (!computed.empty()) b.edge(computed.back(), g);
          pending.push_back(g);
        }
      }
    };
    queueGathers();
    // Host time before the first task and before each micro-batch's forward on the stages that
    // load data (compute-stream tasks of no GPU work: the GPU idles).
    auto hostTask = [&](int64_t ps, uint32_t mb, uint32_t chunk) {
      TaskDef h = computeTask(ps, 0, ScheduleItem{true, mb, chunk});
      return b.add(h);
    };
    if (config.host_overhead_ps > 0) hostTask(config.host_overhead_ps, kNoTask, 0);
    // Pipeline messages. Overlapped: each block's message goes out when the block ends and the
    // next block does not wait for it. Synchronous (Megatron-LM's batched p2p, waited on): the
    // schedule runs in steps (one block, or a forward and a backward in the interleaved steady
    // state); a step's messages go out when it ends and the next step waits for them.
    const bool overlapped = par.pp_comm_overlap;
    auto postRecv = [&](const ScheduleItem& item) {
      const Peer from = item.forward ? prevVirtual(s, item.chunk, p) : nextVirtual(s, item.chunk, p, v);
      if (!from.exists) return kNoTask;
      TaskDef r = commTask(TaskKind::kRecv, CommKind::kPp, kRecvStream, CollectiveOp::kAllReduce, p2p_bytes,
                           item.micro_batch, item.chunk, item.forward);
      r.peer_stage = from.stage;
      const uint32_t recv = b.add(r);
      index[s].slot(true, item.forward, item.micro_batch, item.chunk) = recv;
      return recv;
    };
    // Whether block j runs in the same synchronous step as the block before it.
    auto joinsStep = [&](size_t j) { return !overlapped && j < order.size() && order[j].paired; };
    std::vector<uint32_t> recvs(order.size(), kNoTask);
    std::vector<TaskDef> unsent;       // sends of the current step's blocks, not yet added
    std::vector<uint32_t> step_sends;  // the previous synchronous step's sends
    for (size_t i = 0; i < order.size(); ++i) {
      const ScheduleItem& it = order[i];
      const Block& bl = blocks[i];
      const bool loads = (s == 0 && it.chunk == 0) || (s + 1 == p && it.chunk + 1 == v);
      const uint32_t load = config.data_loading_ps > 0 && it.forward && loads
                                ? hostTask(config.data_loading_ps, it.micro_batch, it.chunk)
                                : kNoTask;
      const BlockTimes& bt = times[it.chunk];
      const Peer to = it.forward ? nextVirtual(s, it.chunk, p, v) : prevVirtual(s, it.chunk, p);
      // A step's receives are posted together when it starts (one per block before the first
      // block of a synchronous step).
      const bool step_start = !joinsStep(i);
      size_t step_end = i + 1;  // past the step's last block
      while (joinsStep(step_end)) ++step_end;
      if (step_start) {
        for (size_t j = i; j < step_end; ++j) recvs[j] = postRecv(order[j]);
      }
      // What the block's first piece waits for besides gathers: its receive and, when it
      // starts a synchronous step, the previous step's messages and the step's other
      // receives. Megatron loads the batch after that wait: a load takes these edges, and the
      // piece follows it on the compute stream.
      std::vector<uint32_t> first_gate{recvs[i]};
      if (step_start && !overlapped) {
        first_gate.insert(first_gate.end(), step_sends.begin(), step_sends.end());
        for (size_t j = i + 1; j < step_end; ++j) first_gate.push_back(recvs[j]);
        step_sends.clear();
        if (load != kNoTask) {
          for (uint32_t g : first_gate) b.edge(g, load);
          first_gate.clear();
        }
      }
      // Ring attention: the block's attention kernels, and the CP exchange beside them.
      const int64_t cp_bytes = cp_layer * layersIn(it.chunk);
      const int64_t attention = cp_bytes > 0 ? (it.forward ? bt.attention_forward : bt.attention_backward) : 0;
      const int64_t total = (it.forward ? bt.forward : bt.backward) - attention;
      const int64_t tp_total = it.forward ? bt.tp_forward : bt.tp_backward;
      // Activation offload: points of the block's compute (ps from its start) where a copy
      // starts or is waited for. Forward: the end of the n offloaded layers (the copy out
      // starts); backward: the start of layer n + 1 (the copy back starts) and of layer 1
      // (it waits for the copy). The compute pieces are cut there.
      const int64_t offloaded =
          offload_bytes > 0 ? std::min<int64_t>(par.offload_layers, int64_t{layersIn(it.chunk)} - 1) : 0;
      const int64_t layer_ps = it.forward ? bt.layer_forward : bt.layer_backward;
      int64_t store_at = -1;
      int64_t reload_at = -1;
      int64_t wait_at = -1;
      if (offloaded > 0 && it.forward) {
        store_at = offloaded * layer_ps;
      } else if (offloaded > 0) {
        reload_at = total - (offloaded + 1) * layer_ps;
        wait_at = total - layer_ps;
      }
      uint32_t& store = stored[size_t{it.micro_batch} * v + it.chunk];
      uint32_t reload = kNoTask;
      int64_t piece_start = 0;
      const Families grads = families(it.chunk, grad_element, true);
      uint32_t last = kNoTask;
      for (int64_t k = 0; k < bl.pieces; ++k) {
        const std::vector<uint32_t> waits = std::move(pending);
        next_block = k + 1 < bl.pieces ? i : i + 1;
        next_piece = k + 1 < bl.pieces ? k + 1 : 0;
        queueGathers();
        std::vector<uint32_t> gate = waits;
        if (k == 0) gate.insert(gate.end(), first_gate.begin(), first_gate.end());
        if (bl.first_forward) {
          const auto& g = gathers[it.chunk][static_cast<size_t>(k)];
          gate.insert(gate.end(), g.begin(), g.end());
        }
        uint32_t exchange = kNoTask;
        if (k == 0 && cp_bytes > 0) {
          const uint32_t before = b.lastOn(kComputeStream);
          auto exchangeTask = [&](CollectiveOp op, int64_t bytes) {
            exchange = b.add(commTask(TaskKind::kCollective, CommKind::kCp, kCpStream, op, bytes, it.micro_batch,
                                      it.chunk, it.forward));
            b.edge(before, exchange);
            for (uint32_t g : gate) b.edge(g, exchange);
          };
          if (it.forward) {
            exchangeTask(CollectiveOp::kAllGather, cp_bytes);
          } else {
            exchangeTask(CollectiveOp::kAllGather, cp_bytes * (recomputes_attention ? 2 : 1));
            exchangeTask(CollectiveOp::kReduceScatter, cp_bytes);  // the keys' and values' gradients
          }
          const uint32_t kernels = b.add(computeTask(attention, 0, it));
          for (uint32_t g : gate) b.edge(g, kernels);
          gate.assign(1, exchange);  // the rest of the block follows the kernels and the exchange
        }
        const int64_t c_ps = total / bl.pieces + (k < total % bl.pieces ? 1 : 0);
        const int64_t t_ps = tp_total / bl.pieces + (k < tp_total % bl.pieces ? 1 : 0);
        // The piece as compute tasks cut at the offload points inside it (TP time shared in
        // proportion).
        std::vector<int64_t> ends;
        for (const int64_t at : {store_at, reload_at, wait_at}) {
          if (at > piece_start && at < piece_start + c_ps) ends.push_back(at);
        }
        std::sort(ends.begin(), ends.end());
        ends.push_back(piece_start + c_ps);
        int64_t cut = piece_start;  // where the next task starts
        int64_t tp_left = t_ps;
        for (size_t q = 0; q < ends.size(); ++q) {
          if (cut == reload_at) {
            reload = b.add(copyTask(kReloadStream, offloaded * offload_bytes, offloaded * copy_ps, it));
            b.edge(b.lastOn(kComputeStream), reload);
            b.edge(store, reload);
          }
          const int64_t length = ends[q] - cut;
          const int64_t tp =
              q + 1 == ends.size() ? tp_left : static_cast<int64_t>(static_cast<Int128>(t_ps) * length / c_ps);
          tp_left -= tp;
          last = b.add(computeTask(length, tp, it));
          if (q == 0) {
            for (uint32_t g : gate) b.edge(g, last);
          }
          if (cut == wait_at) b.edge(reload, last);
          if (ends[q] == store_at) {
            store = b.add(copyTask(kOffloadStream, offloaded * offload_bytes, offloaded * copy_ps, it));
            b.edge(last, store);
          }
          cut = ends[q];
        }
        piece_start += c_ps;
        computed.push_back(last);
        if (!bl.reduced) continue;
        for (const BucketFamily& f : grads) {
          const auto [first, end] = f.readyAfterPiece(k, bl.pieces);
          for (int64_t j = first; j < end; ++j) reduceBucket(f, j, it.chunk, last);
        }
      }
      if (a2a_layer > 0 && par.ep > 1) {
        last = b.add(commTask(TaskKind::kCollective, CommKind::kEp, kComputeStream, CollectiveOp::kAllToAll,
                              a2a_layer * layersIn(it.chunk), it.micro_batch, it.chunk, it.forward));
      }
      if (to.exists) {
        TaskDef snd = commTask(TaskKind::kSend, CommKind::kPp, kSendStream, CollectiveOp::kAllReduce, p2p_bytes,
                               it.micro_batch, it.chunk, it.forward);
        snd.peer_stage = to.stage;
        unsent.push_back(snd);
      }
      // A synchronous step sends its blocks' messages after its last block.
      if (!joinsStep(i + 1)) {
        for (const TaskDef& snd : unsent) {
          const uint32_t send = b.add(snd);
          b.edge(last, send);
          index[s].slot(false, snd.forward, snd.micro_batch, snd.chunk) = send;
          if (!overlapped) step_sends.push_back(send);
        }
        unsent.clear();
      }
    }
    if (!par.dp_comm_overlap && zero < Zero::kGradients) {
      // Megatron-LM's "local" DDP: every chunk's gradients are reduced once the whole
      // backward is done.
      const uint32_t backward_done = b.lastOn(kComputeStream);
      for (uint32_t c = 0; c < v; ++c) {
        for (const BucketFamily& f : families(c, grad_element, true)) {
          for (int64_t j = 0; j < f.count; ++j) {
            reduceBucket(f, j, c, backward_done);
          }
        }
      }
    }
    TaskDef opt;
    opt.compute_ps = compute.stageTimes(model, config, par, s).optimizer.ps;
    const uint32_t step = b.add(opt);
    for (uint32_t d : dp_tasks) b.edge(d, step);
    out.stages.push_back(b.finish());
  }
  // Match every send with the receive of the same (pass, micro-batch) on the peer's chunk.
  for (uint32_t s = 0; s < p; ++s) {
    for (TaskDef& t : out.stages[s].tasks) {
      if (t.kind != TaskKind::kSend) continue;
      const Peer peer = t.forward ? nextVirtual(s, t.chunk, p, v) : prevVirtual(s, t.chunk, p);
      t.peer_task = index[t.peer_stage].slot(true, t.forward, t.micro_batch, peer.chunk);
    }
  }
  return out;
}

}  // namespace mv
