/**
 * @file experiment_yaml.cpp
 * Reading one sweep experiment into a TrainingExperiment, and the cross-field checks.
 */
#include "experiments/experiment_yaml.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analytical/gpu.hpp"
#include "experiments/network_yaml.hpp"
#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"
#include "workloads/simai.hpp"

namespace mv {

namespace {

constexpr int64_t kMaxCount = int64_t{1} << 20;
constexpr int64_t kMaxHostPs =
    int64_t{10} * 1000 * 1000 * 1000 *
    1000;  // 10 s: host time per iteration or micro-batch  // largest tp, pp, dp, gpus, batch sizes
constexpr int64_t kMaxShape = int64_t{1} << 24;  // largest model dimension

bool startsWithKey(const std::string& key, const std::string& prefix) {
  return key == prefix ||
         (key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 && key[prefix.size()] == '.');
}

/// 1-based line of a mark, 0 for nodes made by the expansion (no mark).
int markLine(const YAML::Mark& mark) {
  return mark.line >= 0 ? mark.line + 1 : 0;
}

/// Reads one experiment; problems are collected locally and given lines at the end.
class ExperimentReader {
 public:
  ExperimentReader(const ExpandedExperiment& x, const std::filesystem::path& dir)
      : x_(x), dir_(dir), file_(x.file.string()), root_(x.config, file_, "", local_), resolved_(YAML::Clone(x.config)) {
    t_.name = x.name;
    t_.id = x.id;
    root_.recordInto(resolved_);
  }

  TrainingExperiment read(Diagnostics& out) {
    root_.allowOnly(
        {"name", "seed", "workload", "parallelism", "cluster", "topology", "network", "collectives", "memory"});
    t_.seed = static_cast<uint64_t>(root_.integer("seed", 1, 0, INT64_MAX));
    readWorkload(root_.child("workload"));
    if (t_.collective.enabled) {
      if (root_.has("parallelism")) {
        problem("parallelism", "a collective workload runs over every GPU of the cluster (tp = pp = 1, dp = gpus): "
                               "leave parallelism out");
      }
    } else {
      readParallelism(root_.child("parallelism"));
    }
    readCluster(root_.child("cluster"));
    if (t_.collective.enabled) t_.parallelism.dp = t_.cluster.gpus;
    readTopology();
    readNetwork(root_.child("network"));
    readCollectives(root_.child("collectives"));
    readMemory(root_.child("memory"));
    checkCrossFields();
    if (local_.empty()) checkSimulationRules();
    // The id hashes the configuration with its defaults written out, so that the resolved
    // configuration, read again, is the same experiment with the same random streams. An
    // experiment with problems keeps the configuration as given (a value it rejected was
    // not resolved).
    if (local_.empty()) {
      YAML::Emitter text;
      text << resolved_;
      t_.resolved_config = text.c_str();
      t_.id = configId(resolved_);
    }
    for (Diagnostic d : local_.items()) {
      if (d.line == 0) d.line = keyLine(x_, d.key);
      out.add(std::move(d));
    }
    return std::move(t_);
  }

 private:
  // --- sections --------------------------------------------------------------------

  void readWorkload(const ConfigReader& w) {
    if (w.has("collective")) {
      readCollectiveWorkload(w);
      return;
    }
    w.allowOnly({"model", "chakra", "chakra_layout", "chakra_groups", "simai", "global_batch", "micro_batch", "seq",
                 "precision", "flash_attention", "grad_clip", "grad_reduce", "host_overhead", "data_loading",
                 "operator_times"});
    model_ok_ = readModel(w);
    if (w.has("chakra")) t_.chakra = (dir_ / w.text("chakra", "")).string();
    static const std::vector<std::string> kLayouts{"auto", "stages", "ranks"};
    if (w.has("chakra_layout")) t_.chakra_layout = static_cast<ChakraLayout>(w.choice("chakra_layout", 0, kLayouts));
    if (w.has("chakra_groups")) t_.chakra_groups = (dir_ / w.text("chakra_groups", "")).string();
    if (w.has("simai")) {
      t_.simai = (dir_ / w.text("simai", "")).string();
      if (!t_.chakra.empty()) problem("workload.simai", "give workload.chakra or workload.simai, not both");
    }
    for (const char* key : {"chakra_layout", "chakra_groups"}) {
      if (w.has(key) && t_.chakra.empty()) problem(std::string("workload.") + key, "needs workload.chakra");
    }
    if (w.has("chakra_groups") && t_.chakra_layout == ChakraLayout::kStages) {
      problem("workload.chakra_groups", "communicator groups are for per-rank programs (chakra_layout: ranks or auto)");
    }
    if (w.has("global_batch")) {
      t_.training.global_batch = static_cast<uint32_t>(w.integer("global_batch", 0, 1, kMaxCount));
    } else {
      problem("workload.global_batch", "missing: sequences per optimizer step, all data-parallel replicas together");
    }
    t_.training.micro_batch = static_cast<uint32_t>(w.integer("micro_batch", 1, 1, kMaxCount));
    t_.training.seq = static_cast<uint32_t>(w.integer("seq", 0, 1, kMaxShape));
    static const std::vector<std::string> kPrecisions{"bf16", "fp16", "fp8", "fp32"};
    t_.training.precision =
        parseTrainingPrecision(kPrecisions[static_cast<size_t>(w.choice("precision", 0, kPrecisions))]);
    t_.training.flash_attention = w.boolean("flash_attention", false);
    t_.training.grad_clip = w.boolean("grad_clip", true);
    static const std::vector<std::string> kGradReduce{"auto", "fp32", "param"};
    t_.training.grad_reduce = static_cast<GradReduce>(w.choice("grad_reduce", 0, kGradReduce));
    t_.training.host_overhead_ps = w.durationPs("host_overhead", 0, 0, kMaxHostPs);
    t_.training.data_loading_ps = w.durationPs("data_loading", 0, 0, kMaxHostPs);
    if (w.has("operator_times")) readOperatorTimes(w.child("operator_times"));
  }

  /// `workload.collective`: one collective timed as nccl-tests times it (docs/sweep.md
  /// "Collective benchmarks"); nothing else of a training workload applies.
  void readCollectiveWorkload(const ConfigReader& w) {
    for (const char* key : {"model", "global_batch", "chakra", "simai"}) {
      if (w.has(key)) problem(w.keyPath(key), "a collective workload has no training program: leave it out");
    }
    w.allowOnly({"collective", "model", "global_batch", "chakra", "simai"});
    const ConfigReader c = w.child("collective");
    c.allowOnly({"op", "bytes", "iters"});
    CollectiveBenchmark& b = t_.collective;
    b.enabled = true;
    static const std::vector<std::string> kOps{"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
    if (c.has("op")) {
      b.op = *parseCollectiveOp(kOps[static_cast<size_t>(c.choice("op", 0, kOps))]);
    } else {
      problem(c.keyPath("op"), "missing: " + joined(kOps));
    }
    if (c.has("bytes")) {
      b.bytes = Bytes{c.sizeBytes("bytes", 1, 1, kMaxInputBytes)};
    } else {
      problem(c.keyPath("bytes"), "missing: the per-rank buffer as nccl-tests counts it (e.g. 16MiB)");
    }
    b.iters = static_cast<uint32_t>(c.integer("iters", 1, 1, 1000));
    t_.training.global_batch = 1;
  }

  /// `workload.operator_times`: measured kernel times by operator name (docs/workloads.md).
  void readOperatorTimes(const ConfigReader& r) {
    const std::vector<std::string> keys = operatorTimeKeys();
    r.allowOnly(keys);
    if (!r.node().IsMap()) return;
    for (const auto& kv : r.node()) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
      const int64_t ps = r.durationPs(key, 0, 1, kMaxTaskPs);
      if (ps > 0) t_.operator_times[key] = Picoseconds{ps};  // else reported
    }
  }

  /// The zoo model or inline shape of `workload.model`; false when there is none.
  bool readModel(const ConfigReader& w) {
    if (!w.has("model")) {
      problem("workload.model",
              "missing: a zoo name (" + joined(modelNames()) + ") or the shape (layers, hidden, heads, ...)");
      return false;
    }
    const YAML::Node node = w.node()["model"];
    if (node.IsScalar()) return zooModel(w, "model", node.Scalar(), t_.model);
    if (!node.IsMap()) {
      w.error("model", "expected a zoo name or a mapping of the model's shape");
      return false;
    }
    return inlineModel(w.child("model"));
  }

  bool zooModel(const ConfigReader& r, const std::string& key, const std::string& name, ModelSpec& out) {
    try {
      out = modelByName(name);
      return true;
    } catch (const WorkloadError& e) {
      const std::string hint = nearestKey(name, modelNames());
      r.error(key, e.what() + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
      return false;
    }
  }

  bool inlineModel(const ConfigReader& m) {
    static const std::vector<std::string> kShapeKeys{
        "layers", "hidden", "heads",           "kv_heads",         "ffn", "vocab", "seq", "gated_mlp", "experts",
        "top_k",  "bias",   "tied_embeddings", "learned_positions"};
    std::vector<std::string> allowed = kShapeKeys;
    allowed.insert(allowed.end(), {"base", "name"});
    m.allowOnly(allowed);
    ModelSpec spec;
    const bool has_base = m.has("base");
    if (has_base && !zooModel(m, "base", m.text("base", ""), spec)) return false;
    if (!has_base) {
      for (const char* key : {"layers", "hidden", "heads"}) {
        if (!m.has(key)) problem(m.keyPath(key), "missing: needed for a model without a base");
      }
      spec.vocab = 51200;
      spec.seq = 2048;
    }
    spec.layers = count(m, "layers", spec.layers);
    spec.hidden = count(m, "hidden", spec.hidden);
    spec.heads = count(m, "heads", spec.heads);
    spec.kv_heads = count(m, "kv_heads", has_base ? spec.kv_heads : spec.heads);
    spec.ffn = count(m, "ffn", has_base ? spec.ffn : 4 * spec.hidden);
    spec.vocab = count(m, "vocab", spec.vocab);
    spec.seq = count(m, "seq", spec.seq);
    spec.gated_mlp = m.boolean("gated_mlp", spec.gated_mlp);
    spec.experts = count(m, "experts", spec.experts);
    spec.top_k = count(m, "top_k", spec.top_k);
    spec.bias = m.boolean("bias", spec.bias);
    spec.tied_embeddings = m.boolean("tied_embeddings", spec.tied_embeddings);
    spec.learned_positions = m.boolean("learned_positions", spec.learned_positions);
    const bool reshaped =
        std::any_of(kShapeKeys.begin(), kShapeKeys.end(), [&](const std::string& k) { return m.has(k); });
    const std::string label = !has_base ? "custom" : (reshaped ? spec.name + "-custom" : spec.name);
    spec.name = m.text("name", label);
    t_.model = spec;
    return spec.layers > 0 && spec.hidden > 0 && spec.heads > 0;
  }

  static uint32_t count(const ConfigReader& r, const std::string& key, uint32_t fallback) {
    return static_cast<uint32_t>(r.integer(key, fallback, 1, kMaxShape));
  }

  void readParallelism(const ConfigReader& p) {
    p.allowOnly({"tp", "cp", "pp", "dp", "ep", "vpp", "sp", "tp_comm_overlap", "dp_comm_overlap", "pp_comm_overlap",
                 "recompute", "distributed_optimizer", "zero", "schedule", "offload_layers", "dp_bucket"});
    Parallelism& par = t_.parallelism;
    par.tp = static_cast<uint32_t>(p.integer("tp", 1, 1, kMaxCount));
    par.cp = static_cast<uint32_t>(p.integer("cp", 1, 1, kMaxCount));
    par.pp = static_cast<uint32_t>(p.integer("pp", 1, 1, kMaxCount));
    par.dp = static_cast<uint32_t>(p.integer("dp", 1, 1, kMaxCount));
    par.ep = static_cast<uint32_t>(p.integer("ep", 1, 1, kMaxCount));
    par.vpp = static_cast<uint32_t>(p.integer("vpp", 1, 1, 1024));
    par.sequence_parallel = p.boolean("sp", false);
    par.tp_comm_overlap = p.boolean("tp_comm_overlap", true);
    par.dp_comm_overlap = p.boolean("dp_comm_overlap", true);
    par.pp_comm_overlap = p.boolean("pp_comm_overlap", true);
    par.offload_layers = static_cast<uint32_t>(p.integer("offload_layers", 0, 0, kMaxShape));
    par.dp_bucket = autoOrCount(p, "dp_bucket", kMaxInputBytes);
    static const std::vector<std::string> kRecompute{"none", "selective", "full"};
    par.recompute = parseRecompute(kRecompute[static_cast<size_t>(p.choice("recompute", 0, kRecompute))]);
    // Megatron-LM's distributed optimizer is ZeRO-1; `zero` names any stage.
    const bool dist_opt = p.has("distributed_optimizer") && p.boolean("distributed_optimizer", false);
    const auto zero = p.integer("zero", dist_opt ? 1 : 0, 0, 3);
    if (p.has("distributed_optimizer") && p.has("zero") && dist_opt != (zero >= 1)) {
      p.error("zero", "zero: " + std::to_string(zero) + " contradicts distributed_optimizer: " +
                          (dist_opt ? "true (ZeRO-1)" : "false") + "; give one of them");
    }
    par.zero = static_cast<Zero>(zero);
    static const std::vector<std::string> kSchedules{"1f1b", "interleaved"};
    par.schedule =
        parseSchedule(kSchedules[static_cast<size_t>(p.choice("schedule", par.vpp > 1 ? 1 : 0, kSchedules))]);
  }

  void readCluster(const ConfigReader& c) {
    c.allowOnly({"gpu", "gpus", "gpus_per_server", "nics_per_server", "fabric", "nvls_all_reduce", "pcie_bus_bandwidth",
                 "pcie_step_latency", "overlap_slowdown", "compute", "tp_bandwidth_factor", "compute_jitter",
                 "host_copy_efficiency"});
    ClusterSpec& cl = t_.cluster;
    const bool mapping = c.has("gpu") && c.node()["gpu"].IsMap();
    const ConfigReader g = mapping ? c.child("gpu") : c;
    const std::string name_key = mapping ? "base" : "gpu";
    if (mapping && !g.has("base")) g.error("", "a GPU mapping needs 'base', the catalogue entry it changes");
    cl.gpu = g.text(name_key, cl.gpu);
    if (const GpuSpec* entry = findGpu(cl.gpu)) {
      if (mapping) readGpuOverrides(g);
      gpu_ = withOverrides(*entry, cl.gpu_overrides);
    } else {
      std::vector<std::string> names;
      for (const GpuSpec& e : gpuCatalogue()) names.emplace_back(e.name);
      const std::string hint = nearestKey(cl.gpu, names);
      g.error(name_key, "unknown GPU '" + cl.gpu + "'; valid names: " + gpuNameList() +
                            (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    const uint64_t product = uint64_t{t_.parallelism.tp} * t_.parallelism.cp * t_.parallelism.pp * t_.parallelism.dp;
    cl.gpus = static_cast<uint32_t>(
        c.integer("gpus", static_cast<int64_t>(std::min<uint64_t>(product, kMaxCount)), 1, kMaxCount));
    cl.gpus_per_server = static_cast<uint32_t>(
        c.integer("gpus_per_server", std::min<uint32_t>(cl.gpus, kMaxServerGpus), 1, kMaxServerGpus));
    cl.nics_per_server = static_cast<uint32_t>(c.integer("nics_per_server", cl.gpus_per_server, 1, 64));
    static const std::vector<std::string> kFabrics{"nvlink", "pcie"};
    cl.intra.fabric = c.choice("fabric", 0, kFabrics) == 0 ? ServerFabric::kNvlink : ServerFabric::kPcie;
    cl.intra.nvls_all_reduce = c.boolean("nvls_all_reduce", cl.intra.nvls_all_reduce);
    cl.intra.pcie_bus_bandwidth = BitsPerSecond{c.rateBps("pcie_bus_bandwidth", cl.intra.pcie_bus_bandwidth.bps)};
    cl.intra.pcie_step_latency = Picoseconds{c.durationPs("pcie_step_latency", cl.intra.pcie_step_latency.ps, 1, milliseconds(10).ps)};
    cl.overlap_slowdown = c.has("overlap_slowdown") ? c.real("overlap_slowdown", 1.0, 1.0, 4.0) : 0.0;
    cl.tp_bandwidth_factor = c.real("tp_bandwidth_factor", cl.tp_bandwidth_factor, 0.25, 4.0);
    cl.compute_jitter = c.real("compute_jitter", cl.compute_jitter, 0.0, 0.5);
    cl.host_copy_efficiency = c.real("host_copy_efficiency", cl.host_copy_efficiency, 0.01, 1.0);
    if (c.has("compute")) readCompute(c.child("compute"));
    if (gpu_) {
      try {
        makeCollectiveModel(*gpu_, cl.intra);
      } catch (const AnalyticalError& e) {
        c.error("fabric", e.what());
      }
    }
  }

  /// `cluster.gpu` as a mapping: changes to its `base` catalogue entry (docs/sweep.md).
  void readGpuOverrides(const ConfigReader& g) {
    g.allowOnly({"base", "bf16_tflops", "fp8_tflops", "tf32_tflops", "hbm", "hbm_gb_per_s", "nvlink_gb_per_s", "sms",
                 "host_link_gb_per_s"});
    GpuOverrides& o = t_.cluster.gpu_overrides;
    constexpr double kMaxTflops = 1e6;
    auto tflops = [&](const char* key, std::optional<double>& field, double lo) {
      if (g.has(key)) field = g.real(key, lo, lo, kMaxTflops);
    };
    tflops("bf16_tflops", o.bf16_tflops, 0.001);
    tflops("fp8_tflops", o.fp8_tflops, 0.0);
    tflops("tf32_tflops", o.tf32_tflops, 0.001);
    if (g.has("hbm")) o.hbm_capacity = Bytes{g.sizeBytes("hbm", 1, mebibytes(1).count, int64_t{1} << 50)};
    // GB/s, within the engine's rate range (kMinRateBps..kMaxRateBps: 0.0125..12,500 GB/s).
    constexpr double kBitsPerGB = 8e9;
    auto gbPerSecond = [&](const char* key, std::optional<BitsPerSecond>& field, double lo) {
      const double hi = static_cast<double>(kMaxRateBps) / kBitsPerGB;
      if (g.has(key)) field = BitsPerSecond{static_cast<int64_t>(std::llround(g.real(key, 1, lo, hi) * kBitsPerGB))};
    };
    const double slowest = static_cast<double>(kMinRateBps) / kBitsPerGB;
    gbPerSecond("hbm_gb_per_s", o.hbm_bandwidth, slowest);
    // NVLink from 1 GB/s: the intra-server curves scale by at most 1,000 either way.
    gbPerSecond("nvlink_gb_per_s", o.nvlink_bandwidth, 1.0);
    gbPerSecond("host_link_gb_per_s", o.host_link, slowest);
    if (g.has("sms")) o.sms = static_cast<uint32_t>(g.integer("sms", 1, 1, 4096));
  }

  /// `cluster.compute`: the roofline's knobs (docs/workloads.md); each defaults to the
  /// Megatron A100 fit.
  void readCompute(const ConfigReader& r) {
    r.allowOnly({"gemm_ceiling", "gemm_small_tile", "gemm_gradient", "gemm_quantization", "memory_efficiency",
                 "kernel_overhead"});
    ComputeModelParams& p = t_.cluster.compute;
    p.gemm.ceiling = r.real("gemm_ceiling", p.gemm.ceiling, 0.01, 1.0);
    p.gemm.small_tile = r.real("gemm_small_tile", p.gemm.small_tile, 0.01, 1.0);
    p.gemm.gradient = r.real("gemm_gradient", p.gemm.gradient, 0.01, 1.0);
    p.gemm.quantization = r.boolean("gemm_quantization", p.gemm.quantization);
    p.memory_efficiency = r.real("memory_efficiency", p.memory_efficiency, 0.01, 1.0);
    p.kernel_overhead = Picoseconds{r.durationPs("kernel_overhead", p.kernel_overhead.ps, 0, milliseconds(1).ps)};
  }

  void readTopology() {
    const size_t before = local_.items().size();
    if (root_.has("topology")) {
      t_.topology = mv::readTopology(root_.child("topology"), dir_);
    } else {
      t_.topology = defaultTopology();
    }
    topology_ok_ = local_.items().size() == before && t_.topology.nicCount() > 0;
  }

  /// The fabric of an experiment without `topology:` (see readExperiment).
  Topology defaultTopology() {
    const ClusterSpec& cl = t_.cluster;
    RailParams p;
    p.servers = std::max<uint32_t>(1, cl.gpus / cl.gpus_per_server);
    p.nics_per_server = cl.nics_per_server;
    p.leaf_radix_down = std::min<uint32_t>(p.servers, 64);
    p.spines = p.leaf_radix_down;
    p.nic_rate = p.fabric_rate = gigabitsPerSecond(100);
    p.nic_delay = p.fabric_delay = microseconds(1);
    try {
      return makeRailOptimized(p);
    } catch (const TopologyError& e) {
      problem("topology", std::string("the default rail-optimised topology: ") + e.what());
      return Topology{};
    }
  }

  void readNetwork(const ConfigReader& n) {
    static const std::vector<std::string> kFidelities{"packet", "flow", "analytical"};
    static constexpr NetworkFidelity kFidelity[] = {NetworkFidelity::kPacket, NetworkFidelity::kFlow,
                                                    NetworkFidelity::kAnalytical};
    t_.fidelity = kFidelity[n.choice("fidelity", 0, kFidelities)];
    // Training runs default to RoCEv2 frames at RoCE's largest MTU (netsim keeps the ns-3
    // reference's packets).
    net::NetworkConfig roce;
    roce.wire = net::WireFormat::kRoce;
    roce.payload_bytes = net::kRoceMaxMtu;
    t_.network = readNetworkConfig(n.except("fidelity"), roce);
  }

  void readCollectives(const ConfigReader& c) {
    c.allowOnly({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "channels", "chunk", "buffer", "step_latency",
                 "dp_bucket", "priority", "qps_per_connection"});
    using A = CollectiveAlgorithm;
    CollectiveAlgorithms& co = t_.collectives;
    co.all_reduce = algorithm(c, "all_reduce",
                              {{"auto", A::kAuto},
                               {"ring", A::kRing},
                               {"tree", A::kTree},
                               {"halving_doubling", A::kHalvingDoubling},
                               {"hierarchical", A::kHierarchical}});
    const std::vector<std::pair<std::string, A>> gather{
        {"ring", A::kRing}, {"halving_doubling", A::kHalvingDoubling}, {"hierarchical", A::kHierarchical}};
    co.all_gather = algorithm(c, "all_gather", gather);
    co.reduce_scatter = algorithm(c, "reduce_scatter", gather);
    co.all_to_all = algorithm(c, "all_to_all", {{"direct", A::kDirect}, {"hierarchical", A::kHierarchical}});
    co.channels = static_cast<uint32_t>(autoOrCount(c, "channels", kMaxRingChannels));
    co.chunk = Bytes{c.sizeBytes("chunk", co.chunk.count, 1, kMaxInputBytes)};
    co.buffer = Bytes{c.sizeBytes("buffer", co.buffer.count, kMinNcclBuffer, kMaxNcclBuffer)};
    co.step_latency = Picoseconds{c.durationPs("step_latency", co.step_latency.ps, kMinStepLatencyPs, kMaxLatencyPs)};
    // An override in bytes of parallelism.dp_bucket (parameters): absent stays absent.
    if (c.has("dp_bucket")) co.dp_bucket = Bytes{c.sizeBytes("dp_bucket", 0, 1, kMaxInputBytes)};
    co.priority = static_cast<uint32_t>(c.integer("priority", co.priority, 1, 7));
    co.qps_per_connection = static_cast<uint32_t>(c.integer("qps_per_connection", co.qps_per_connection, 1, 16));
  }

  /// `key`: "auto" (0, the default) or a whole number from 1 to `hi`.
  static int64_t autoOrCount(const ConfigReader& c, const std::string& key, int64_t hi) {
    const std::string v = c.text(key, "auto");
    if (v == "auto") return 0;
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
      c.error(key, "expected auto or a whole number from 1 to " + std::to_string(hi) + ", got '" + v + "'");
      return 0;
    }
    return c.integer(key, 1, 1, hi);
  }

  /// The algorithm at `key` among `choices`; the first choice when absent.
  static CollectiveAlgorithm algorithm(const ConfigReader& c, const std::string& key,
                                       const std::vector<std::pair<std::string, CollectiveAlgorithm>>& choices) {
    std::vector<std::string> names;
    for (const auto& choice : choices) names.push_back(choice.first);
    return choices[static_cast<size_t>(c.choice(key, 0, names))].second;
  }

  void readMemory(const ConfigReader& m) {
    m.allowOnly({"workspace", "logits_bytes"});
    t_.memory.workspace = Bytes{m.sizeBytes("workspace", t_.memory.workspace.count, 1, kMaxInputBytes)};
    t_.memory.logits_bytes = static_cast<uint32_t>(m.integer("logits_bytes", t_.memory.logits_bytes, 1, 8));
  }

  // --- cross-field rules -----------------------------------------------------------

  void checkCrossFields() {
    const ClusterSpec& cl = t_.cluster;
    const Parallelism& par = t_.parallelism;
    if (model_ok_) {
      for (const ConfigProblem& p : validateParallelism(t_.model, t_.training, par, cl.gpus)) problem(p.key, p.message);
    }
    if (gpu_ && t_.training.precision == TrainingPrecision::kFp8 && !supportsPrecision(*gpu_, Precision::kFp8)) {
      problem("workload.precision", cl.gpu_overrides.fp8_tflops
                                        ? "cluster.gpu.fp8_tflops is 0: the GPU has no FP8 tensor cores (use bf16)"
                                        : cl.gpu + " has no FP8 tensor cores (use bf16, or a Hopper or Blackwell GPU)");
    }
    if (cl.gpus % cl.gpus_per_server != 0) {
      problem("cluster.gpus",
              num(cl.gpus) + " GPUs do not fill whole servers of gpus_per_server = " + num(cl.gpus_per_server));
    }
    if (cl.gpus_per_server % par.tp != 0) {
      problem("parallelism.tp", "tensor parallelism must stay inside a server: tp (" + num(par.tp) +
                                    ") must divide gpus_per_server (" + num(cl.gpus_per_server) + ")");
    }
    if (cl.gpus_per_server % cl.nics_per_server != 0 && cl.nics_per_server % cl.gpus_per_server != 0) {
      problem("cluster.nics_per_server", "must divide gpus_per_server (" + num(cl.gpus_per_server) +
                                             ": GPUs share a NIC) or be a multiple of it (each GPU has several NICs)");
      return;
    }
    if (topology_ok_) checkTopologySize();
    if (!t_.chakra.empty() || !t_.simai.empty()) {
      const std::string source = t_.chakra.empty() ? "a SimAI workload" : "a Chakra trace";
      if (par.cp > 1) {
        problem("parallelism.cp", "context parallelism is modelled for Megatron programs only; " + source +
                                      " brings its own communication: use cp: 1");
      }
      if (par.offload_layers > 0) {
        problem("parallelism.offload_layers",
                "activation offload is modelled for Megatron programs only; " + source + " brings its own tasks");
      }
    }
    if (!t_.chakra.empty()) checkChakraFiles();
    if (!t_.simai.empty()) checkSimaiFile();
  }

  /// A SimAI workload file reads, and its header's job is this experiment's: its TP and EP
  /// degrees, pp 1, and its GPU count (the model still gives memory and FLOPs).
  void checkSimaiFile() {
    SimaiWorkload w;
    try {
      w = readSimaiWorkload(t_.simai);
    } catch (const WorkloadError& e) {
      problem("workload.simai", e.what());
      return;
    }
    const Parallelism& par = t_.parallelism;
    if (w.tp != par.tp || w.ep != std::max<uint32_t>(par.ep, 1) || w.pp != par.pp || w.gpus != t_.cluster.gpus) {
      problem("workload.simai", t_.simai + ": its header describes tp " + num(w.tp) + ", ep " + num(w.ep) + ", pp " +
                                    num(w.pp) + " on " + num(w.gpus) + " GPUs; the experiment has tp " + num(par.tp) +
                                    ", ep " + num(std::max<uint32_t>(par.ep, 1)) + ", pp " + num(par.pp) + " on " +
                                    num(t_.cluster.gpus));
    }
  }

  /// Every rank has a trace file `<chakra>.<rank>.et` or `.json`, not a directory (their
  /// contents are read when the run starts).
  void checkChakraFiles() {
    for (uint32_t rank = 0; rank < t_.cluster.gpus; ++rank) {
      const std::string stem = t_.chakra + "." + std::to_string(rank);
      for (const std::string& path : {stem + ".et", stem + ".json"}) {
        if (!std::filesystem::is_directory(path)) continue;
        problem("workload.chakra", path + ": it is a directory, not a trace file");
        return;
      }
      if (std::filesystem::exists(stem + ".et") || std::filesystem::exists(stem + ".json")) continue;
      problem("workload.chakra", "no trace for rank " + num(rank) + " (looked for " + stem + ".et and .json)");
      return;
    }
    if (!t_.chakra_groups.empty() && !std::filesystem::is_regular_file(t_.chakra_groups)) {
      problem("workload.chakra_groups", t_.chakra_groups + ": no such file");
    }
  }

  void checkTopologySize() {
    const ClusterSpec& cl = t_.cluster;
    const uint32_t servers = std::max<uint32_t>(1, cl.gpus / cl.gpus_per_server);
    const uint64_t needed = uint64_t{servers} * cl.nics_per_server;
    if (t_.topology.nicCount() < needed) {
      problem("topology", "topology too small: it has " + num(t_.topology.nicCount()) + " NICs, the job needs " +
                              std::to_string(needed) + " (" + num(servers) + " servers x " + num(cl.nics_per_server) +
                              " NICs per server)");
      return;
    }
    try {
      validateTopology(t_.topology, static_cast<uint32_t>(needed));
    } catch (const TopologyError& e) {
      problem("topology", e.what());
    }
  }

  /// What the simulation itself requires beyond the rules above (systems/training_sim.hpp);
  /// each message starts with the key it concerns.
  void checkSimulationRules() {
    for (const std::string& message : checkTrainingExperiment(t_)) {
      const size_t colon = message.find(": ");
      if (colon == std::string::npos) {
        problem("", message);
      } else {
        problem(message.substr(0, colon), message.substr(colon + 2));
      }
    }
  }

  // --- reporting -------------------------------------------------------------------

  /// Records a problem at `key` unless that key already has one (a bad value read as its
  /// default would otherwise be reported twice).
  void problem(const std::string& key, const std::string& message) {
    for (const Diagnostic& d : local_.items()) {
      if (!key.empty() && d.key == key) return;
    }
    local_.add(Diagnostic{file_, 0, key, message});
  }

  static std::string num(uint64_t v) { return std::to_string(v); }

  static std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  const ExpandedExperiment& x_;
  std::filesystem::path dir_;
  std::string file_;
  Diagnostics local_;
  ConfigReader root_;
  YAML::Node resolved_;  ///< a copy of the configuration with every value read written in
  TrainingExperiment t_;
  std::optional<GpuSpec> gpu_;  ///< the cluster's GPU once read and known
  bool model_ok_ = false;
  bool topology_ok_ = false;
};

}  // namespace

int keyLine(const ExpandedExperiment& x, const std::string& key) {
  size_t best = 0;
  int axis_line = 0;
  for (const auto& [axis_key, line] : x.axis_lines) {
    if (startsWithKey(key, axis_key) && axis_key.size() > best) {
      best = axis_key.size();
      axis_line = line;
    }
  }
  if (axis_line > 0) return axis_line;
  const std::vector<std::string> parts = splitKeyPath(key);
  int deepest = 0;
  YAML::Node cur(x.config);
  for (size_t i = 0; i < parts.size() && cur.IsMap(); ++i) {
    std::optional<YAML::Node> next;
    int line = 0;
    for (const auto& kv : cur) {
      if (kv.first.Scalar() != parts[i]) continue;
      const bool block = !kv.second.IsScalar() && kv.second.Style() != YAML::EmitterStyle::Flow;
      const int value_line = markLine(kv.second.Mark());
      line = block || value_line == 0 ? markLine(kv.first.Mark()) : value_line;
      next.emplace(kv.second);
      break;
    }
    if (!next) break;
    if (line > 0) deepest = line;
    if (i + 1 == parts.size() && line > 0) return line;
    cur.reset(*next);
  }
  if (deepest > 0) return deepest;
  for (const auto& [axis_key, line] : x.axis_lines) {
    if (startsWithKey(axis_key, key)) return line;
  }
  return 0;
}

TrainingExperiment readExperiment(const ExpandedExperiment& x, const std::filesystem::path& dir, Diagnostics& diags) {
  ExperimentReader reader(x, dir);
  return reader.read(diags);
}

std::string sameExperiment(std::map<uint64_t, std::string>& names_by_id, const TrainingExperiment& x) {
  const auto [it, fresh] = names_by_id.emplace(x.id, x.name);
  if (fresh) return "";
  return "experiments '" + it->second + "' and '" + x.name +
         "' are the same experiment once their defaults are applied (a value written two ways, such as 1MiB and "
         "1048576, or a default written out): every combination must be a different experiment";
}

void readExperiments(const Sweep& sweep, Diagnostics& diags, const std::function<void(TrainingExperiment&&)>& use) {
  struct Seen {
    Diagnostic diagnostic;
    std::string first;
    size_t count = 0;
  };
  std::vector<Seen> seen;
  std::map<std::string, size_t> index;
  std::map<uint64_t, std::string> names_by_id;
  for (const ExpandedExperiment& x : sweep.experiments) {
    Diagnostics one;
    TrainingExperiment t = readExperiment(x, sweep.file.parent_path(), one);
    if (one.empty()) {
      if (const std::string twin = sameExperiment(names_by_id, t); !twin.empty()) {
        diags.add(Diagnostic{sweep.file.string(), 0, "", twin});
        continue;
      }
      use(std::move(t));
      continue;
    }
    for (const Diagnostic& d : one.items()) {
      const auto [it, fresh] = index.emplace(d.format(), seen.size());
      if (fresh) seen.push_back(Seen{d, x.name, 0});
      ++seen[it->second].count;
    }
  }
  const size_t total = sweep.experiments.size();
  for (Seen& s : seen) {
    if (total > 1) {
      s.diagnostic.message += s.count == total ? " (every experiment)"
                              : s.count == 1
                                  ? " (experiment " + s.first + ")"
                                  : " (experiment " + s.first + " and " + std::to_string(s.count - 1) + " more)";
    }
    diags.add(std::move(s.diagnostic));
  }
}

}  // namespace mv
