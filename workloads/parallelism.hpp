/**
 * @file parallelism.hpp
 * The training job (batch sizes, sequence length, precision) and how it is split over GPUs
 * (Megatron-LM tensor, context, pipeline, data and expert parallelism, virtual pipeline
 * stages, sequence parallelism, activation recomputation, ZeRO stages, pipeline schedule), with the
 * validation rules Megatron-LM enforces.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ecs/macros.hpp"
#include "workloads/model.hpp"

namespace mv {

/// Number format of the training step's GEMMs.
enum class TrainingPrecision : uint8_t { kBf16, kFp16, kFp8, kFp32 };
/// The element type of the gradients the data-parallel reduction moves.
enum class GradReduce : uint8_t {
  kAuto,   ///< Megatron-LM's rule: fp32 when the parameters are bf16 (bf16, fp8), else theirs
  kFp32,   ///< fp32 (`--accumulate-allreduce-grads-in-fp32`)
  kParam,  ///< the parameters' element type (fp16 training, `--grad-reduce-in-bf16`)
};
/// Activation recomputation (Korthikanti et al. 2022).
enum class Recompute : uint8_t {
  kNone,       ///< keep every activation
  kSelective,  ///< recompute the attention core (QK^T, softmax, dropout, ·V)
  kFull,       ///< keep only each layer's input, recompute the whole layer's forward
};
/// Pipeline schedule.
enum class PipelineSchedule : uint8_t {
  k1F1B,         ///< PipeDream-Flush one-forward-one-backward
  kInterleaved,  ///< interleaved 1F1B with `vpp` model chunks per GPU (Narayanan et al. SC'21)
};

/// "bf16", "fp16", "fp8", "fp32".
std::string_view toString(TrainingPrecision p);
/// "none", "selective", "full".
std::string_view toString(Recompute r);
/// "1f1b", "interleaved".
std::string_view toString(PipelineSchedule s);
/// Parses the names above; throws WorkloadError listing the valid names otherwise.
TrainingPrecision parseTrainingPrecision(std::string_view name);
Recompute parseRecompute(std::string_view name);
PipelineSchedule parseSchedule(std::string_view name);

/**
 * Bytes of one stored activation element: 2 for bf16/fp16 and for fp8 (Transformer Engine
 * keeps activations between operators in bf16), 4 for fp32.
 */
uint32_t activationBytes(TrainingPrecision p);

/// Bytes of one gradient element in the data-parallel reduction (`GradReduce`).
uint32_t gradReduceBytes(TrainingPrecision p, GradReduce g);

/// The training job.
struct TrainingConfig {
  /// Sequences per optimizer step (all data-parallel replicas together), B.
  uint32_t global_batch = 0;
  /// Sequences per micro-batch on one pipeline, b.
  uint32_t micro_batch = 1;
  /// Sequence length s; 0 means the model's `seq`.
  uint32_t seq = 0;
  TrainingPrecision precision = TrainingPrecision::kBf16;
  /// Fused attention (FlashAttention): the s×s scores never reach HBM and are not stored for
  /// the backward pass. false is the unfused path of Megatron-LM SC'21 (the calibration).
  bool flash_attention = false;
  /// Gradient clipping by the global norm (Megatron-LM's default `--clip-grad 1.0`): the
  /// optimizer step also reads each updated parameter's fp32 gradient once for the norm.
  bool grad_clip = true;
  /// Element type of the gradients the DP reduction moves (Megatron-LM reduces bf16 models'
  /// gradients in fp32 unless told otherwise).
  GradReduce grad_reduce = GradReduce::kAuto;
  /// Host time per iteration outside the GPU work (the training loop's Python, logging,
  /// launching the optimizer step), ps: every rank is idle that long before its first task.
  int64_t host_overhead_ps = 0;
  /// Host time to load one micro-batch, ps: the first pipeline stage (tokens) and the last
  /// (labels) spend it before each micro-batch's forward pass of their end chunk.
  int64_t data_loading_ps = 0;
};

/// ZeRO stages (DeepSpeed's numbering; PyTorch FSDP's SHARD_GRAD_OP is kGradients and
/// FULL_SHARD kParameters): each shards what the one before does and more over the
/// data-parallel group (the expert-data-parallel group for expert parameters).
enum class Zero : uint8_t {
  kNone = 0,        ///< replicated; gradients all-reduced after the last micro-batch
  kOptimizer = 1,   ///< optimizer state; gradients reduce-scattered, parameters all-gathered once
  kGradients = 2,   ///< + gradients, reduce-scattered after every micro-batch's backward pass
  kParameters = 3,  ///< + parameters, all-gathered per layer before every forward and backward pass
};

/// How the job is split over GPUs (Megatron-LM conventions).
struct Parallelism {
  /// Tensor-parallel size t (also the experts' tensor-parallel size).
  uint32_t tp = 1;
  /// Context-parallel size c: each sequence is split over c ranks, which exchange keys and
  /// values in a ring around the attention kernel (Megatron-core's p2p ring attention).
  uint32_t cp = 1;
  /// Pipeline stages p.
  uint32_t pp = 1;
  /// Data-parallel replicas d.
  uint32_t dp = 1;
  /// Expert-parallel size e: experts are spread over e ranks of the data-parallel group.
  uint32_t ep = 1;
  /// Virtual pipeline stages (model chunks) per GPU v; > 1 only with the interleaved schedule.
  uint32_t vpp = 1;
  /// Megatron sequence parallelism (LayerNorm, dropout sharded along s); no effect when tp == 1.
  bool sequence_parallel = false;
  /// The backward pass's TP collectives of the column-parallel linears (QKV, MLP up) run
  /// beside their gradient GEMMs, as Megatron-LM has done since 2022 (its asynchronous TP
  /// all-reduce; with SP the input all-gather beside the input-gradient GEMM and the
  /// reduce-scatter beside the weight-gradient GEMM). false: every TP collective waits,
  /// as in Megatron-LM of SC'21.
  bool tp_comm_overlap = true;
  /// The data-parallel gradient reduction runs bucket by bucket beside the last
  /// micro-batch's backward (PyTorch DDP, Megatron-LM's overlap_grad_reduce). false: it
  /// starts when the stage's whole backward is done (Megatron-LM's "local" DDP of SC'21).
  /// Only without ZeRO or with ZeRO-1: ZeRO-2 and -3 reduce after every backward.
  bool dp_comm_overlap = true;
  /// Pipeline messages go out as each block ends and the next block does not wait for them
  /// (Megatron-core's overlap_p2p_comm). false: Megatron-LM's batched p2p, waited on: the
  /// schedule runs in steps (a block; with the interleaved schedule's steady state, a forward
  /// and a backward), whose messages go out together when the step ends and which wait for
  /// the previous step's messages to arrive and their own to be in.
  bool pp_comm_overlap = true;
  /// Activation offload: the stored activations of the first n layers of every model chunk
  /// go to host memory after their forward pass and come back, one layer ahead, during the
  /// backward pass (Megatron-core's `cpu_offloading_num_layers`); 0 = none.
  uint32_t offload_layers = 0;
  /// Parameters per data-parallel bucket (gradients reduced, parameters gathered, per
  /// bucket); 0: Megatron-core's default, max(40,000,000, 1,000,000 × dp · cp)
  /// (dpBucketParameters).
  int64_t dp_bucket = 0;
  Recompute recompute = Recompute::kNone;
  /// What the data-parallel group shards (ZeRO stage; kOptimizer is Megatron-LM's
  /// distributed optimizer).
  Zero zero = Zero::kNone;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
};

/// Parameters per DP bucket: `par.dp_bucket`, or Megatron-core's default for its data-parallel
/// group with context parallelism (DistributedDataParallel: max(40 M, 1 M × its size)).
inline int64_t dpBucketParameters(const Parallelism& par) {
  if (par.dp_bucket > 0) return par.dp_bucket;
  const int64_t ranks = int64_t{par.dp} * par.cp;
  return ranks * 1'000'000 > 40'000'000 ? ranks * 1'000'000 : 40'000'000;
}

/// The sequence length of the job: `config.seq`, or the model's when that is 0.
uint32_t sequenceLength(const ModelSpec& model, const TrainingConfig& config);
/// Tokens of one sequence a context-parallel rank holds, s / cp.
uint32_t localSequence(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par);
/// Bytes of one micro-batch's activations between two layers on a rank, b · s/cp · h ·
/// element bytes: what each TP collective moves and, over t, a pipeline message. In floating
/// point, exact up to 2^53 B, so any shape can be checked against a limit before use.
double boundaryActivationBytes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par);
/**
 * Ranks of one stage and tensor-parallel index that hold the same parameters, dp · cp: the
 * group over which gradients are reduced and, from ZeRO-1 on, state is sharded
 * (Megatron-core's data-parallel group with context parallelism). Its index is
 * cp_index + cp · dp_index, so a context-parallel group is cp consecutive indices.
 */
uint32_t dataParallelRanks(const Parallelism& par);
/// Global rank of the GPU at (stage, tp_index, dp_index) in Megatron-LM's order
/// (tp-cp-dp-pp): TP fastest, then CP and DP, then PP. `dp` is dataParallelRanks and
/// `dp_index` the index in that group.
MV_HD constexpr uint32_t megatronRank(uint32_t tp, uint32_t dp, uint32_t stage, uint32_t tp_index, uint32_t dp_index) {
  return tp_index + tp * (dp_index + dp * stage);
}
/// GPUs the job uses, tp · cp · pp · dp.
uint32_t gpuCount(const Parallelism& par);
/// Micro-batches each pipeline runs per iteration, m = global_batch / (micro_batch · dp).
uint32_t microBatchCount(const TrainingConfig& config, const Parallelism& par);
/// Whether sequence parallelism is in effect (requested and tp > 1).
bool sequenceParallelActive(const Parallelism& par);

/// One reason a configuration cannot run, with the configuration key it concerns.
struct ConfigProblem {
  /// Key path as in sweep.yaml, e.g. "parallelism.tp" or "workload.global_batch".
  std::string key;
  /// What is wrong and what would fix it.
  std::string message;
};

/**
 * Every reason `model` cannot be trained with `config` and `par` on `gpus` GPUs; empty when
 * the combination is valid. Rules (Megatron-LM, megatron/training/arguments.py and
 * megatron/core/parallel_state.py):
 *  - tp · cp · pp · dp == gpus; every size ≥ 1;
 *  - heads % tp == 0; with GQA kv_heads % tp == 0 (query groups are split over TP);
 *    ffn % tp == 0; with sequence parallelism seq % tp == 0;
 *  - layers % (pp · vpp) == 0 (every model chunk has the same number of layers);
 *  - global_batch % (micro_batch · dp) == 0;
 *  - vpp > 1 needs the interleaved schedule and vice versa; the interleaved schedule needs
 *    pp > 1 and the micro-batch count divisible by pp;
 *  - dp_comm_overlap: false needs ZeRO 0 or 1;
 *  - activation offload: offload_layers < the layers of a model chunk (the backward of a
 *    layer kept on the GPU hides the first reload);
 *  - context parallelism (cp > 1) needs fused attention (`flash_attention`: Megatron-core
 *    runs ring attention in Transformer Engine's kernel) and seq divisible by 2 · cp (each
 *    rank takes two of 2 · cp chunks, balancing the causal mask), with SP also by 2 · cp · tp;
 *  - MoE: experts % ep == 0 and (dp · cp) % ep == 0 — the classic Megatron-core rule in which
 *    the experts keep the attention's tensor-parallel size and the expert-parallel group is
 *    carved out of the data-parallel group with CP (expert data-parallel size dp · cp / ep);
 *    ep > 1 needs an MoE model.
 * The model's own shape is checked too (validateModel), under the key "workload.model".
 */
std::vector<ConfigProblem> validateParallelism(const ModelSpec& model, const TrainingConfig& config,
                                               const Parallelism& par, uint32_t gpus);
/// The problems as one line each, "key: message".
std::string formatProblems(const std::vector<ConfigProblem>& problems);

}  // namespace mv
