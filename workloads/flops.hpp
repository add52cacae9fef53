/**
 * @file flops.hpp
 * Floating-point operations of a training step (Narayanan et al. SC'21 §5.1, Korthikanti et
 * al. 2022): per transformer layer and micro-batch, forward, backward and recomputation;
 * the logit layer; whole iterations in the MFU (model) and HFU (hardware) conventions.
 * A multiply-add counts as 2 FLOPs; attention counts the full s×s score matrix (no causal
 * halving), as Megatron's throughput figures do. FLOPs are doubles: a 1T-parameter
 * iteration exceeds 2^63.
 */
#pragma once

#include <cstdint>

#include "workloads/model.hpp"
#include "workloads/parallelism.hpp"

namespace mv {

/// Forward FLOPs of one transformer layer for one micro-batch, all tensor-parallel ranks together.
struct LayerFlops {
  /// Q, K, V projections: 2·b·s·h·(h + 2·h·kv_heads/heads) (GQA shrinks K and V).
  double qkv = 0;
  /// Attention scores QK^T and attention over values: 2·b·s²·h each, 4·b·s²·h together.
  double attention = 0;
  /// Attention output projection: 2·b·s·h².
  double projection = 0;
  /// MoE router: 2·b·s·h·experts (0 for dense models).
  double router = 0;
  /// MLP: 2·b·s·h·f per h×f GEMM, 2 GEMMs (GPT) or 3 (gated), times top_k for MoE.
  double mlp = 0;

  double total() const { return qkv + attention + projection + router + mlp; }
};

/// Forward FLOPs of one layer; for a GPT-style 4h MLP this is 24·b·s·h² + 4·b·s²·h.
LayerFlops layerForwardFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq);
/// Forward FLOPs of the logit layer (output GEMM), 2·b·s·h·V.
double logitForwardFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq);

/// FLOPs of the three passes over some part of the model for one micro-batch.
struct PassFlops {
  double forward = 0;
  /// Backward: input and weight gradients, 2× forward.
  double backward = 0;
  /// Extra forward work recomputed before the backward pass.
  double recompute = 0;

  /// FLOPs the hardware executes.
  double total() const { return forward + backward + recompute; }
  /// FLOPs of the model (forward + backward, without recomputation).
  double model() const { return forward + backward; }
};

/**
 * One layer, one micro-batch: backward = 2× forward; recompute = one forward (full), the
 * attention core 4·b·s²·h (selective: QK^T and ·V; softmax and dropout carry no GEMM FLOPs)
 * or 0 (none).
 */
PassFlops layerPassFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq, Recompute recompute);
/// The logit layer, one micro-batch: 2·b·s·h·V forward, 2× that backward, never recomputed.
PassFlops logitPassFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq);
/// The whole model (every layer plus the logit layer), one micro-batch.
PassFlops microBatchFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq, Recompute recompute);

/// FLOPs of one training iteration over the global batch.
struct IterationFlops {
  /// Without recomputation: the numerator of MFU.
  double model = 0;
  /// Including recomputation: the numerator of HFU and of Megatron's "achieved TFLOP/s".
  double hardware = 0;
};

/// One iteration of `config.global_batch` sequences with `recompute`.
IterationFlops iterationFlops(const ModelSpec& model, const TrainingConfig& config, Recompute recompute);

/**
 * Megatron's closed form (SC'21 eq. 3): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with full
 * recomputation, 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) without. Exact only for GPT-style
 * models (4h MLP, multi-head attention, dense).
 */
double megatronFormulaFlops(const ModelSpec& model, uint32_t global_batch, uint32_t seq, bool full_recompute);

}  // namespace mv
