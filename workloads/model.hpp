/**
 * @file model.hpp
 * Transformer model descriptions: the shape of a decoder-only language model (dense or
 * mixture-of-experts, GPT-style 4h MLP or gated SwiGLU MLP, multi-head or grouped-query
 * attention), a zoo of public models, and the parameter count. Everything downstream
 * (FLOPs, compute time, memory) reads only this struct.
 */
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mv {

/// A bad workload description (unknown model, impossible shape): a user error with a hint.
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Shape of a decoder-only transformer. Sizes are counts of elements, not bytes.
struct ModelSpec {
  /// Zoo name ("gpt3-175b") or a user label.
  std::string name;
  /// Transformer layers l.
  uint32_t layers = 0;
  /// Hidden size h.
  uint32_t hidden = 0;
  /// Attention (query) heads a.
  uint32_t heads = 0;
  /// Key/value heads (grouped-query attention); equal to `heads` for multi-head attention.
  uint32_t kv_heads = 0;
  /// MLP inner size f (per expert for MoE): 4h for GPT, e.g. 14336 for Llama-3 8B.
  uint32_t ffn = 0;
  /// Vocabulary size V (before any padding to a multiple of the TP size).
  uint32_t vocab = 0;
  /// Sequence length the model is usually trained with (TrainingConfig may override it).
  uint32_t seq = 0;
  /// Gated MLP (SwiGLU: three h×f GEMMs) instead of the GPT MLP (two h×f GEMMs with GeLU).
  bool gated_mlp = false;
  /// Experts per MoE layer; 1 for a dense model. Every layer is an MoE layer when > 1.
  uint32_t experts = 1;
  /// Experts each token is routed to (top-k); 1 for a dense model.
  uint32_t top_k = 1;
  /// Linear layers and LayerNorms carry biases (GPT); false for bias-free RMSNorm models (LLaMA).
  bool bias = true;
  /// The output layer shares the input embedding matrix (GPT-3, Megatron GPT).
  bool tied_embeddings = true;
  /// Learned absolute position embeddings of `seq` × h (GPT); false for rotary (LLaMA).
  bool learned_positions = true;

  /// Whether K/V use fewer heads than Q.
  bool isGqa() const { return kv_heads != heads; }
  /// Whether the MLP is a mixture of experts.
  bool isMoe() const { return experts > 1; }
  /// Hidden size of one attention head, h / a.
  uint32_t headDim() const { return hidden / heads; }
  /// Width of the K (or V) projection output, h · kv_heads / heads.
  uint32_t kvWidth() const { return headDim() * kv_heads; }
};

/// Parameters of one model, split the way memory accounting needs them.
struct ParameterCount {
  /// Attention of one layer: Q, K, V, output projection (+ biases).
  double attention_per_layer = 0;
  /// MLP of one layer: all experts' MLPs and the router (MoE), or the dense MLP (+ biases).
  double mlp_per_layer = 0;
  /// Of `mlp_per_layer`, the part that belongs to experts (0 for a dense model).
  double expert_per_layer = 0;
  /// The two norms of one layer.
  double norms_per_layer = 0;
  /// Word embedding V·h.
  double embedding = 0;
  /// Learned position embedding seq·h (0 for rotary models).
  double positions = 0;
  /// Untied output layer V·h (0 when tied).
  double output = 0;
  /// Final norm before the output layer.
  double final_norm = 0;

  /// Parameters of one transformer layer.
  double perLayer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }
  /// Parameters of the whole model for `layers` layers.
  double total(uint32_t layers) const { return perLayer() * layers + embedding + positions + output + final_norm; }
};

/// Parameter count of `model`, exact for the conventions of ModelSpec (no vocabulary padding).
ParameterCount countParameters(const ModelSpec& model);
/// Total parameters of `model` (countParameters(model).total(model.layers)).
double parameterCount(const ModelSpec& model);
/// Parameters active per token: like parameterCount, but only top_k of the experts.
double activeParameterCount(const ModelSpec& model);

/// A zoo entry: the model and the size it is usually quoted at, in parameters.
struct ZooEntry {
  ModelSpec model;
  double nominal_parameters = 0;
  /// Where the shape comes from.
  std::string_view source;
};

/// Every model of the zoo: the named public models first, then the Megatron SC'21 Table 1 rows.
std::span<const ZooEntry> modelZoo();
/// The named public models ("gpt3-175b", ...): the names modelByName accepts besides "megatron-*".
std::vector<std::string> modelNames();
/**
 * The zoo model called `name` (case-sensitive, e.g. "llama3-70b" or "megatron-145.6b").
 * Throws WorkloadError listing the valid names when there is none.
 */
ModelSpec modelByName(std::string_view name);
/**
 * Checks a (possibly user-written) model for shapes nothing downstream can use: zero
 * sizes, hidden % heads, heads % kv_heads, top_k > experts. Returns one message per problem.
 */
std::vector<std::string> validateModel(const ModelSpec& model);

/// The ten models of Megatron-LM SC'21 Table 1 (GPT-style, 4h MLP, vocab 51,200, seq 2048).
struct MegatronRow {
  ModelSpec model;
  double nominal_parameters = 0;
  uint32_t tp = 1;
  uint32_t pp = 1;
  uint32_t gpus = 0;
  uint32_t global_batch = 0;
  /// Achieved TFLOP/s per GPU reported by the paper (A100 80GB, Selene).
  double tflops_per_gpu = 0;
  /// How the run was launched (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh): its
  /// micro-batch, its model chunks per GPU (> 1: the interleaved schedule) and whether its
  /// data-parallel gradient all-reduce overlapped the backward (PyTorch DDP, used without
  /// pipelining) or ran after it (Megatron's "local" DDP, used with pipelining).
  uint32_t micro_batch = 1;
  uint32_t vpp = 1;
  bool dp_overlap = true;
};
/// Narayanan et al., SC'21, Table 1 (as in shared/reference/calibration.md), with each
/// run's launch settings.
std::span<const MegatronRow> megatronSc21Table();

/// A Megatron-LM benchmark with selective recomputation and sequence parallelism, TP 8,
/// data-parallel size 1 (A100 80GB, Selene, seq 2048, vocab 51,200).
struct MegatronMfuRow {
  ModelSpec model;
  uint32_t pp = 1;
  uint32_t gpus = 0;
  uint32_t global_batch = 0;
  uint32_t micro_batch = 1;
  /// Model chunks per GPU of the interleaved schedule (1: 1F1B).
  uint32_t vpp = 1;
  /// Model FLOPs utilisation reported: model FLOPs (no recomputation) / (GPUs · 312 TFLOP/s · time).
  double mfu = 0;
  /// The same run with full recomputation and no sequence parallelism (Korthikanti et al.
  /// 2022, Table 5, "Full Recompute"), seconds per iteration.
  double full_recompute_seconds = 0;
};
/// The Megatron-LM README's MFU table (22B, 175B, 530B, 1T), with the configurations of
/// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
/// (MLSys 2023), Table 3.
std::span<const MegatronMfuRow> megatronSelectiveTable();

}  // namespace mv
