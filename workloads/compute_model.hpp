/**
 * @file compute_model.hpp
 * How long the compute of a training step takes on one GPU. A transformer layer is broken
 * into the kernels Megatron-LM runs (GEMMs and memory-bound element-wise kernels); each
 * kernel's time is a roofline, max(FLOPs / (peak · efficiency(shape)), bytes / (HBM
 * bandwidth · memory efficiency)) plus a fixed per-kernel overhead, unless a user-supplied
 * table gives the kernel's time. A GEMM's efficiency follows from its shape on the GPU's
 * SMs (tile and wave quantisation, split-K). Stage and iteration times add the
 * pipeline bubble and the optimizer step. The knobs are fitted end to end to published
 * Megatron-LM runs with leave-one-out errors (docs/workloads.md "Calibration"). Host-side only.
 */
#pragma once

#include <compare>  // ecs/units.hpp uses <=> without including it
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analytical/gpu.hpp"
#include "ecs/units.hpp"
#include "workloads/model.hpp"
#include "workloads/parallelism.hpp"

namespace mv {

/// Compute capability of one GPU, independent of any collective or network model.
struct GpuComputeSpec {
  std::string name;
  /// Dense bf16/fp16 tensor-core peak, FLOP/s.
  double peak_flops = 0;
  /// Dense fp8 peak, FLOP/s; 0 when the GPU has no fp8 tensor cores (then bf16 is used).
  double peak_flops_fp8 = 0;
  /// Dense TF32 peak used for fp32 training, FLOP/s.
  double peak_flops_fp32 = 0;
  /// HBM bandwidth, bytes/s.
  double hbm_bandwidth = 0;
  /// Streaming multiprocessors: a GEMM's tiles run in waves of one tile per SM.
  uint32_t sms = 0;

  /// Peak of the tensor cores used at `precision`.
  double peakFlops(TrainingPrecision precision) const;
};

/// The compute side of a GPU catalogue entry (analytical/gpu.hpp: the one catalogue).
GpuComputeSpec computeSpecOf(const GpuSpec& gpu);
/// A100 SXM4 80GB: 312 TFLOP/s bf16, 156 TF32, 2.0 TB/s, 108 SMs.
GpuComputeSpec a100Compute();
/// H100 SXM: 989 TFLOP/s bf16, 1979 fp8, 494.7 TF32, 3.35 TB/s, 132 SMs.
GpuComputeSpec h100Compute();
/// H200: H100 compute with 4.8 TB/s.
GpuComputeSpec h200Compute();
/// B200: 2250 TFLOP/s bf16, 4500 fp8, 1100 TF32, 8 TB/s, 148 SMs.
GpuComputeSpec b200Compute();
/**
 * The catalogue GPU called `name` (analytical/gpu.hpp: "a100-80gb", "a100-40gb", "h100",
 * "h800", "h200", "b200"). Throws WorkloadError listing the valid names otherwise.
 */
GpuComputeSpec gpuComputeByName(std::string_view name);

/// What bounds a kernel in the roofline.
enum class OpKind : uint8_t {
  kGemm,    ///< tensor-core matrix multiply: compute-bound, GemmEfficiency applies
  kMemory,  ///< element-wise / reduction kernel: HBM-bound
};

/// Shape of one GEMM kernel: `batch` independent products of an m×k by a k×n matrix.
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;

  double flops() const { return 2 * m * n * k * batch; }
  /// The input-gradient GEMM of the backward pass (dA = dC·Bᵀ: m×n by n×k).
  GemmShape inputGradient() const { return {m, k, n, batch}; }
  /// The weight-gradient GEMM (dB = Aᵀ·dC: k×m by m×n).
  GemmShape weightGradient() const { return {k, n, m, batch}; }
};

/// One kernel of the forward pass on one GPU, one micro-batch.
struct Operator {
  /// Stable name, also the key of an OperatorTimes override ("qkv", "softmax_dropout", ...).
  std::string_view name;
  OpKind kind = OpKind::kGemm;
  /// FLOPs of one kernel (for a batched GEMM, of the whole batch).
  double flops = 0;
  /// GEMMs: the shape whose efficiency applies (FlashAttention: its QKᵀ product, with
  /// `flops` counting both of its products over the causal triangle).
  GemmShape shape;
  /// HBM bytes one kernel reads and writes.
  double bytes = 0;
  /// Identical kernels per layer (local experts of an MoE layer).
  uint32_t count = 1;
  /// Backward work relative to forward: GEMMs 2 (the input- and weight-gradient GEMMs, each
  /// at its own shape's efficiency; FlashAttention 2.5 × the forward kernel); memory kernels
  /// the ratio of backward to forward bytes.
  double backward_factor = 2;
  /// Part of the attention core that selective recomputation reruns.
  bool attention_core = false;
};

/**
 * The kernels of one transformer layer's forward pass on one GPU for one micro-batch,
 * after the TP (and SP, CP, EP) split, in execution order: input_norm, qkv, attention_scores,
 * softmax_dropout, attention_values, projection, attention_residual, mlp_norm, [router,
 * dispatch], mlp_up, activation, mlp_down, [combine], mlp_residual. Attention is the
 * unfused Megatron-LM path (scores materialised; causal fused softmax reads half of them),
 * or with `config.flash_attention` one "flash_attention" kernel in place of the three
 * (cp kernels of s / cp keys each with context parallelism, whose other kernels see the
 * s / cp local tokens).
 */
std::vector<Operator> layerOperators(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par);
/// Extra kernels of the first stage ("embedding").
std::vector<Operator> firstStageOperators(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par);
/// Extra kernels of the last stage ("final_norm", "logits", "cross_entropy").
std::vector<Operator> lastStageOperators(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par);

/**
 * GEMM efficiency (share of the tensor-core peak) from the kernel's shape on a GPU with
 * `sms` SMs: ceiling × quantisation. The output is cut into tiles that run in waves of one
 * tile per SM; the library's choice is modelled as the best of 256×128 and 128×256 tiles
 * (full speed), 128×128, 256×64 and 64×256 (`small_tile`), 128×64 and 64×128
 * (`small_tile`²) and 64×64 (`small_tile`³), each scored by its speed × useful area /
 * (waves × SMs × tile area); a kernel with fewer tiles than SMs splits k (split-K, slices of
 * at least 256) to fill them. Off (`quantization` false): the ceiling. Whether a GEMM is
 * bound by memory instead is the roofline's other side (ComputeModel).
 */
struct GemmEfficiency {
  double ceiling = 0.8;
  /// Speed of a 128×128 tile relative to a 256×128 one (per tile area per time).
  double small_tile = 1;
  bool quantization = true;
  /// Efficiency of a backward pass's gradient GEMMs (the input and weight gradients)
  /// relative to a forward GEMM of the same shape.
  double gradient = 1;

  /// Efficiency of `g` on `sms` SMs.
  double operator()(const GemmShape& g, uint32_t sms) const;
  /// The quantisation factor alone (1 when off).
  double quantizationFactor(const GemmShape& g, uint32_t sms) const;
};
/// Split-K's shortest slice of k.
inline constexpr double kMinSplitK = 256;

/// HBM bytes per updated parameter that gradient clipping adds to the optimizer step: the
/// fp32 gradient read once for the global norm (the scaling by the clip factor, applied only
/// when the norm exceeds the threshold, is not counted).
inline constexpr double kGradNormBytesPerParam = 4;

/// Knobs of the roofline.
struct ComputeModelParams {
  GemmEfficiency gemm;
  /// Fraction of the HBM bandwidth memory-bound kernels reach.
  double memory_efficiency = 0.9;
  /// Fixed time added to every kernel (launch and tail), picoseconds.
  Picoseconds kernel_overhead = microseconds(1);
  /// HBM bytes per locally updated parameter of the Adam step (mixed precision: fp32 grad,
  /// master, m, v read; master, m, v written; bf16 weight written).
  double optimizer_bytes_per_param = 30;
};

/**
 * The calibrated default on A100: the knobs fitted so that whole simulated iterations
 * reproduce the published Megatron-LM runs of systems/calibration.hpp (docs/workloads.md
 * "Calibration" lists the per-run and leave-one-out errors). Exposed communication is
 * simulated, not folded into the efficiency.
 */
ComputeModelParams megatronA100Params();

/// TP collective bus bandwidth relative to the nccl-tests curves, fitted together with
/// megatronA100Params (docs/workloads.md "Calibration").
inline constexpr double kMegatronTpBandwidthFactor = 1.061;

/**
 * Measured kernel times that replace the roofline, keyed by Operator::name (forward time
 * of one kernel) and by "<name>.backward" (backward time of one kernel's backward pass;
 * default: backward_factor × the forward time). "optimizer" replaces the optimizer step.
 */
using OperatorTimes = std::map<std::string, Picoseconds, std::less<>>;

/// Every key an OperatorTimes table may hold: each operator name the model produces, the
/// same with ".backward", and "optimizer".
std::vector<std::string> operatorTimeKeys();

/// One layer on one GPU for one micro-batch.
struct LayerTimes {
  Picoseconds forward;
  Picoseconds backward;
  /// Forward work rerun before the backward pass (0 without recomputation).
  Picoseconds recompute;

  Picoseconds total() const { return forward + backward + recompute; }
};

/// One micro-batch through all layers a GPU of one pipeline stage holds (all its chunks).
struct StageTimes {
  uint32_t stage = 0;
  uint32_t layers = 0;
  Picoseconds forward;
  Picoseconds backward;
  Picoseconds recompute;
  /// The optimizer step of this GPU, once per iteration.
  Picoseconds optimizer;

  /// Time per micro-batch: forward + backward + recompute.
  Picoseconds perMicroBatch() const { return forward + backward + recompute; }
};

/// Compute time of one iteration on the GPUs of one pipeline.
struct IterationTime {
  /// Micro-batches per pipeline m.
  uint32_t micro_batches = 0;
  std::vector<StageTimes> stages;
  /// Index of the slowest stage.
  uint32_t slowest_stage = 0;
  /// m × the slowest stage's time per micro-batch.
  Picoseconds busy;
  /// Pipeline fill and drain: (Σ stage times − slowest) / vpp; (p−1)·t for equal stages and 1F1B.
  Picoseconds bubble;
  /// Slowest optimizer step over the stages.
  Picoseconds optimizer;
  Picoseconds total;

  /// bubble / total.
  double bubbleFraction() const;
};

/// Roofline compute-time model of one GPU type.
class ComputeModel {
 public:
  explicit ComputeModel(GpuComputeSpec gpu, ComputeModelParams params = megatronA100Params(),
                        OperatorTimes overrides = {});

  const GpuComputeSpec& gpu() const { return gpu_; }
  const ComputeModelParams& params() const { return params_; }

  /// Roofline time of one kernel of `shape` (a GEMM; none for memory-bound kernels) moving
  /// `bytes` at `precision`, overhead included.
  Picoseconds kernelTime(OpKind kind, const GemmShape& shape, double bytes, TrainingPrecision precision) const;
  /// Roofline time of one kernel whose shape is unknown (a traced operator known by its
  /// `flops` and the `bytes` it touches, as Chakra's num_ops and tensor_size): its FLOPs at
  /// the GEMM efficiency ceiling, its bytes at the memory efficiency, the slower of the two,
  /// overhead included.
  Picoseconds opaqueKernelTime(double flops, double bytes, TrainingPrecision precision) const;
  /// Efficiency of a GEMM of `shape` on this GPU (of the peak at the kernel's precision).
  double gemmEfficiency(const GemmShape& shape) const;
  /// Forward time of `op` (all `count` kernels), from the override table if it names it.
  Picoseconds forwardTime(const Operator& op, TrainingPrecision precision) const;
  /// Backward time of `op` (all `count` kernels).
  Picoseconds backwardTime(const Operator& op, TrainingPrecision precision) const;
  /// The part of `op`'s backward one of its two gradient GEMMs takes (all `count` kernels):
  /// the weight gradient (dB = Aᵀ·dC) when `weight`, else the input gradient (dA = dC·Bᵀ).
  /// Half the backward where the two are not costed apart (overrides, fused kernels).
  Picoseconds gradientGemmTime(const Operator& op, TrainingPrecision precision, bool weight) const;

  /// One layer, one micro-batch, with `par.recompute`.
  LayerTimes layerTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) const;
  /**
   * An upper bound, in picoseconds and in floating point, of every compute time an
   * iteration's programs add up: the slowest stage's micro-batches plus every other
   * stage's one (its layers' forward, backward and recomputation, and the first and last
   * stages' embedding and loss), the 1F1B iteration's compute without the optimizer step.
   * Kernel times are held at the engine's horizon, so this reaches it when one kernel
   * does; an experiment is refused when it does (checkTrainingExperiment), before any of
   * those sums is formed in 64-bit picoseconds.
   */
  double iterationComputePs(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) const;
  /// One micro-batch through pipeline stage `stage` (its layers, and embedding / logits on the ends).
  StageTimes stageTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                        uint32_t stage) const;
  /**
   * Compute time of one iteration: busy m·t_max, bubble (Σ t_i − t_max)/vpp (the 1F1B bubble
   * (p−1)/(m+p−1) of the iteration for equal stages; (p−1)/(v·m+p−1) interleaved), plus
   * the optimizer step. No communication.
   */
  IterationTime iterationTime(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) const;

 private:
  /// Roofline time of one kernel without the overhead, seconds (`flops` of `shape`'s efficiency).
  double rooflineSeconds(OpKind kind, const GemmShape& shape, double flops, double bytes, TrainingPrecision precision,
                         bool gradient = false) const;

  GpuComputeSpec gpu_;
  ComputeModelParams params_;
  OperatorTimes overrides_;
};

/// Achieved FLOP/s per GPU: `flops` (e.g. IterationFlops::hardware) / (gpus × time).
double achievedFlopsPerGpu(double flops, uint32_t gpus, Picoseconds time);

}  // namespace mv
