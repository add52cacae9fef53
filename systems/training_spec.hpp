/**
 * @file training_spec.hpp
 * The contract between the sweep front end (experiments/) and the training simulation
 * (systems/): one fully resolved training experiment in, one result out. Host-side only.
 * Every field is reachable from sweep.yaml (docs/sweep.md lists the keys).
 */
#pragma once

#include <compare>  // ecs/units.hpp uses <=> without including it
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analytical/collective_model.hpp"
#include "analytical/overlap.hpp"
#include "ecs/units.hpp"
#include "network/components.hpp"
#include "network/config.hpp"
#include "topologies/topology.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/parallelism.hpp"

namespace mv {

/// How inter-server traffic is simulated (DESIGN.md §7). Intra-server traffic always uses
/// the calibrated analytical model.
enum class NetworkFidelity : uint8_t {
  kPacket,      ///< packet level: RoCE, PFC, ECN, DCQCN/HPCC/DCTCP (network/)
  kFlow,        ///< max-min fair sharing of flows over links
  kAnalytical,  ///< α-β time per collective from the NIC rate and the path latency
};

/// Inter-server algorithm of each collective (`collectives:` in sweep.yaml).
enum class CollectiveAlgorithm : uint8_t {
  kRing,             ///< ring (all-reduce = reduce-scatter + all-gather; all-gather; reduce-scatter)
  kTree,             ///< double binary tree (all-reduce only)
  kHalvingDoubling,  ///< recursive halving-doubling (all-reduce, all-gather, reduce-scatter)
  kDirect,           ///< every rank sends to every other rank (all-to-all)
  kHierarchical,     ///< intra-server phase on the analytical model, inter-server phase per rail
  kAuto,             ///< NCCL's tuner picks ring or tree per collective (all-reduce; analytical/nccl_tuner.hpp)
};

/// Most channels a ring may have (collectives.channels), as NCCL's MAXCHANNELS.
inline constexpr uint32_t kMaxRingChannels = 64;

/// The shortest step latency, 2 ns: the step Δ is at most half of it (training.md), so at
/// least 1 ns, as the shortest link delay keeps it. A step of 0 ps never advanced the clock,
/// and one of 1 ps made a small packet-level job take minutes (every row pass once per ps).
inline constexpr int64_t kMinStepLatencyPs = 2'000;

/// Range of collectives.buffer (NCCL_BUFFSIZE): 64 KiB (a slice floor of 512 B) to 1 GiB.
inline constexpr int64_t kMinNcclBuffer = int64_t{64} << 10;
inline constexpr int64_t kMaxNcclBuffer = int64_t{1} << 30;

struct CollectiveAlgorithms {
  CollectiveAlgorithm all_reduce = CollectiveAlgorithm::kAuto;
  CollectiveAlgorithm all_gather = CollectiveAlgorithm::kRing;
  CollectiveAlgorithm reduce_scatter = CollectiveAlgorithm::kRing;
  CollectiveAlgorithm all_to_all = CollectiveAlgorithm::kDirect;
  /// Halving-doubling, direct and hierarchical collectives: a per-peer transfer is split into
  /// messages of at most this size.
  Bytes chunk = mebibytes(4);
  /// NCCL_BUFFSIZE: a connection's buffer of NCCL_STEPS slots, which sizes the ring's
  /// loops and slices and the tree's chunks (ncclRingChunking, ncclTreeChunks).
  Bytes buffer = mebibytes(4);
  /// Delay between a chunk's arrival and the next dependent send (proxy polling, reduction
  /// kernel); also the floor of every collective's time. Must be ≥ the step Δ; default 2 µs,
  /// at least kMinStepLatencyPs.
  Picoseconds step_latency = microseconds(2);
  /// DP buckets of this many bytes, overriding `parallelism.dp_bucket` (a count of
  /// parameters) when positive; 0: not given.
  Bytes dp_bucket{0};
  /// Channels of the ring algorithm between servers (NCCL's): rings over the whole group,
  /// each on 1/channels of the buffer, each leaving a server on a different member's NIC.
  /// 0 = auto: the group's members on one server (one channel per rail they have).
  uint32_t channels = 0;
  /// Flow priority of collective traffic (1..7, network.md).
  uint32_t priority = 3;
  /// QPs per connection (NCCL_IB_QPS_PER_CONNECTION): a connection's messages go round robin
  /// over this many QPs, each with its own ECMP path and CC state.
  uint32_t qps_per_connection = 1;
};

/// The machines: GPU type and how GPUs, NICs and servers relate.
struct ClusterSpec {
  /// Catalogue name (analytical/gpu.hpp), e.g. "a100-80gb".
  std::string gpu = "a100-80gb";
  /// Changes to that entry (`cluster.gpu` as a mapping): peaks, HBM, NVLink, SMs.
  GpuOverrides gpu_overrides;
  /// GPUs the job uses (must equal tp · pp · dp).
  uint32_t gpus = 8;
  uint32_t gpus_per_server = 8;
  /// NICs per server; GPU g of a server uses NIC g · nics / gpus_per_server.
  uint32_t nics_per_server = 8;
  /// Intra-server fabric and its knobs.
  CollectiveModelConfig intra;
  /// Slow-down of compute while a DP collective runs on the same GPU (shared SMs, L2, HBM);
  /// 0 = the GPU generation's default GEMM factor (analytical/overlap.hpp: ×1.15 Ampere,
  /// ×1.26 Hopper and Blackwell). 1 disables it. Range 1..4 when set.
  double overlap_slowdown = 0;
  /// Per-kernel compute jitter: every compute task of every rank takes its time × a seeded
  /// factor uniform in [1 − j, 1 + j] (stragglers; the experiment's seed picks the draw).
  /// 0 (default) turns it off; range 0..0.5.
  double compute_jitter = 0;
  /// The roofline's GEMM efficiency, HBM efficiency and kernel overhead (workloads/
  /// compute_model.hpp); default: the fit to published Megatron-LM runs on A100
  /// (docs/workloads.md "Calibration").
  ComputeModelParams compute = megatronA100Params();
  /// Bus bandwidth the TP collectives reach inside training relative to the nccl-tests
  /// curves of the intra-server model (TP times are divided by it); the default is fitted
  /// with `compute` against Megatron-LM SC'21 (docs/workloads.md "Calibration"). Range 0.25..4.
  double tp_bandwidth_factor = kMegatronTpBandwidthFactor;
  /// Share of the GPU's host link (`GpuSpec::host_link`) that activation offload copies
  /// reach: pinned-memory copies lose PCIe packet headers and DMA gaps. Default 0.8; range
  /// 0.01..1.
  double host_copy_efficiency = 0.8;
};

/// The GPU of `cluster`: its catalogue entry with its overrides (throws AnalyticalError for
/// an unknown name).
inline GpuSpec clusterGpu(const ClusterSpec& cluster) {
  return withOverrides(gpuByName(cluster.gpu), cluster.gpu_overrides);
}

/// How much slower GEMMs run while a collective runs beside them on `gpu` (the cluster's
/// `overlap_slowdown`, or the GPU generation's default).
inline Slowdown gemmOverlapSlowdown(const ClusterSpec& cluster, const GpuSpec& gpu) {
  return cluster.overlap_slowdown > 0 ? slowdownFactor(cluster.overlap_slowdown)
                                      : defaultOverlapSlowdown(gpu.architecture).gemm;
}

/// One fully resolved experiment.
/// How Chakra traces run: as stage programs (every rank of a pipeline stage the same, the
/// Megatron layout of `parallelism`) or as a program per rank (any DAG per rank).
enum class ChakraLayout : uint8_t {
  kAuto,  ///< per rank with chakra_groups, or when a collective of rank 0 names a group other than dp, ep, expert_dp
  kStages,
  kRanks,
};

/// A workload of one collective repeated (`workload.collective`, docs/sweep.md): what
/// nccl-tests' `*_perf` binaries time. Its "iteration" is the `iters` collectives back to
/// back over every GPU of the cluster.
struct CollectiveBenchmark {
  bool enabled = false;
  CollectiveOp op = CollectiveOp::kAllReduce;
  /// Per-rank buffer as nccl-tests counts it (all-reduce: the buffer; all-gather: the
  /// gathered output; reduce-scatter: the input); 1 B .. 16 TiB.
  Bytes bytes{0};
  /// Collectives run one after another (nccl-tests' -n); 1..1000.
  uint32_t iters = 1;
};

struct TrainingExperiment {
  std::string name;
  /// Its configuration as YAML with every default the reader applied written out (set by
  /// the sweep reader, experiments/experiment_yaml.hpp; empty otherwise).
  std::string resolved_config;
  /// Stable id (a hash of the resolved configuration, defaults written out), used for RNG
  /// streams and file names.
  uint64_t id = 0;
  uint64_t seed = 1;
  ModelSpec model;
  /// Chakra traces `<chakra>.<rank>.et` (or `.json`) to run instead of the program generated
  /// from the model (the model still gives memory and FLOPs); empty = generate.
  std::string chakra;
  /// How the traces map onto the ranks (docs/chakra.md).
  ChakraLayout chakra_layout = ChakraLayout::kAuto;
  /// ASTRA-sim's communicator-group file for per-rank programs (pg_name → ranks); empty =
  /// every collective spans every rank.
  std::string chakra_groups;
  /// A SimAI/AICB workload file to run instead of the generated program (workloads/simai.hpp);
  /// empty = none.
  std::string simai;
  /// A collective benchmark instead of a training program (then `model` is unused and the
  /// parallelism is dp = gpus).
  CollectiveBenchmark collective;
  TrainingConfig training;
  /// Measured kernel times that replace the roofline (compute_model.hpp OperatorTimes).
  OperatorTimes operator_times;
  Parallelism parallelism;
  ClusterSpec cluster;
  /// Inter-server topology; its NICs (in id order) are the servers' NICs, server by server.
  Topology topology;
  NetworkFidelity fidelity = NetworkFidelity::kPacket;
  net::NetworkConfig network;
  CollectiveAlgorithms collectives;
  MemoryOptions memory;
};

/// The algorithm the collectives of one kind ran with between servers (TrainingResult).
struct CollectiveChoice {
  CollectiveOp op = CollectiveOp::kAllReduce;
  uint32_t ranks = 0;
  int64_t bytes = 0;  ///< per-rank buffer
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  /// The protocol NCCL's tuner chose with it (NcclProtocol; not simulated: every hop moves
  /// the bytes at the step latency), or kNoProtocol where the algorithm was given.
  uint8_t protocol = kNoProtocol;
  uint32_t channels = 1;
  uint32_t count = 0;  ///< collectives of the iteration with this choice
  static constexpr uint8_t kNoProtocol = 0xff;
};

/// What one experiment produced.
struct TrainingResult {
  /// The configuration did not fit in GPU memory; nothing was simulated.
  bool oom = false;
  /// Peak per-GPU memory over the pipeline stages (the stage with the largest total).
  MemoryBreakdown peak_memory;
  /// One training iteration, first task start to last task finish.
  Picoseconds iteration;
  /// Breakdown of the iteration on the critical rank (the one finishing last): compute
  /// busy time, communication not hidden behind compute per kind, pipeline bubble.
  Picoseconds compute;
  Picoseconds exposed_tp;
  Picoseconds exposed_pp;
  Picoseconds exposed_dp;
  Picoseconds exposed_ep;
  /// Context parallelism: ring attention's key and value exchange not hidden behind the
  /// attention kernels.
  Picoseconds exposed_cp;
  /// Activation offload: reloads from host memory not hidden behind the backward pass.
  Picoseconds exposed_offload;
  Picoseconds bubble;
  /// Model FLOPs / (GPUs · peak · iteration).
  double mfu = 0;
  double tokens_per_second = 0;
  /// A collective benchmark's figures as nccl-tests prints them (zero for training): one
  /// collective's mean time (iteration / iters), its per-rank buffer, algbw = buffer / time
  /// and busbw = algbw × the op's bus factor (2(n−1)/n for all-reduce, (n−1)/n otherwise), in
  /// GB/s (1e9 B/s).
  Picoseconds collective_time;
  int64_t collective_bytes = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  /// Per kind of collective between servers (op, ranks, bytes, algorithm, protocol,
  /// channels), how many the iteration ran, in first-seen order.
  std::vector<CollectiveChoice> collective_choices;
  /// Totals of the packet network (zero at the other fidelities, except flows_done).
  net::NetCounters network;
  /// Simulator wall time of the batch that ran this experiment, seconds.
  double wall_seconds = 0;
  /// Work simulated: tasks finished, plus packet hops (packet level) or the event times at
  /// which the fluid rates were recomputed (flow level).
  int64_t events = 0;
  /// Times the experiment started again because pooled packet storage ran out (each time
  /// with that storage doubled; the results are those of a run that fitted).
  uint32_t storage_retries = 0;
  /// The pooled packet storage of the run reported (its configuration, doubled by each restart).
  net::PoolKnobs pool_knobs;
  /// Non-empty when the experiment was simulated but could not finish (time limit).
  std::string error;
  /// Chrome trace JSON of the iteration (one process per rank, one thread per stream, µs),
  /// when SimulationOptions::trace is set.
  std::string chrome_trace;
  /// links.csv of a packet-level experiment with `network.link_bin` (net/detail_csv.hpp),
  /// header included; empty otherwise.
  std::string links_csv;
  /// queues.csv of a packet-level experiment over [0, iteration] when
  /// SimulationOptions::network_detail is set; empty otherwise.
  std::string queues_csv;
  /// flows.csv and fct.txt of a packet- or flow-level experiment's network flows when
  /// SimulationOptions::network_detail is set (systems/flow_files.hpp); empty otherwise.
  std::string flows_csv;
  std::string fct_txt;
};

struct TrainWorld;

template <class WorldT>
class StepSession;

/// Opens a session that runs the training graph on a backend other than the CPU executor
/// (systems/cuda/training_device.hpp: one CUDA device, which keeps the world for the session;
/// kernels/cpu/step_session.hpp).
using TrainingStepRunner = std::function<std::unique_ptr<StepSession<TrainWorld>>(TrainWorld& world)>;

/// Knobs of a simulation run (not of an experiment).
/// Where a running batch stands (SimulationOptions::on_progress).
struct BatchProgress {
  uint32_t experiments = 0;  ///< in the batch (those simulated: OOM ones are not)
  uint32_t finished = 0;     ///< whose results were reported
  Picoseconds slowest;       ///< simulated time of the running experiment furthest behind
  /// That experiment's iteration from its compute alone (computeOnlyIteration): a lower
  /// bound of where it ends; 0 when unknown (a Chakra workload).
  Picoseconds slowest_expected;
  double wall_seconds = 0;   ///< the batch's run time so far
};

struct SimulationOptions {
  /// OpenMP threads; 0 = all cores.
  int threads = 0;
  /// CPU executor: run each region on fewer threads while other processes keep the cores
  /// busy (CpuExecutor's yield_to_load); results do not depend on it. The CLI sets it
  /// unless --threads is given.
  bool yield_to_load = false;
  /// Stop an experiment whose simulated time passes this (0: the engine's horizon, kTimeHorizonPs).
  Picoseconds time_limit;
  /// Step Δ; 0 = the largest valid one per experiment (min link delay, half the step
  /// latency). A smaller value only slows the run down: results do not change.
  Picoseconds lookahead;
  /// Record every task of every rank and return Chrome trace JSON with each result (memory
  /// grows with ranks × tasks: for small runs).
  bool trace = false;
  /// Record each packet-level experiment's switch queues and each packet- or flow-level
  /// one's network flows (TrainingResult::queues_csv, flows_csv, fct_txt).
  bool network_detail = false;
  /// CPU executor: experiments advanced together per block (0 = all of the batch in every
  /// step, -1 = CpuExecutor::kAutoBlock); results do not depend on it. See CpuExecutor.
  int64_t cpu_block = 0;
  /// Empty: the CPU executor with `threads`; else the backend that runs the steps.
  TrainingStepRunner device_runner;
  /// Bytes an experiment's packet storage may take (its link rings grow with rate × delay);
  /// one that needs more is refused with its figure before anything is allocated (0 = no limit).
  int64_t memory_budget = 0;
  /// Called on the batch's thread after every run of steps (kTrainingStepsPerRun) with
  /// where the batch stands: what a heartbeat prints (empty: not called).
  std::function<void(const BatchProgress&)> on_progress;
};

}  // namespace mv
