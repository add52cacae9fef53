/**
 * @file flops.cpp
 * FLOP counts per layer, micro-batch and iteration (Narayanan et al. SC'21; Korthikanti et al. 2022).
 */
#include "workloads/flops.hpp"

namespace mv {

LayerFlops layerForwardFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq) {
  const double tokens = static_cast<double>(micro_batch) * seq;
  const double h = model.hidden;
  const double kv = model.kvWidth();
  const double f = model.ffn;
  LayerFlops lf;
  lf.qkv = 2 * tokens * h * (h + 2 * kv);
  lf.attention = 2 * 2 * tokens * static_cast<double>(seq) * h;  // QK^T and scores·V, each 2·b·s²·h
  lf.projection = 2 * tokens * h * h;
  const double gemms = model.gated_mlp ? 3.0 : 2.0;
  lf.mlp = gemms * 2 * tokens * h * f * model.top_k;
  if (model.isMoe()) lf.router = 2 * tokens * h * model.experts;
  return lf;
}

double logitForwardFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq) {
  return 2.0 * micro_batch * seq * static_cast<double>(model.hidden) * model.vocab;
}

PassFlops layerPassFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq, Recompute recompute) {
  const LayerFlops lf = layerForwardFlops(model, micro_batch, seq);
  PassFlops p;
  p.forward = lf.total();
  p.backward = 2 * p.forward;
  switch (recompute) {
    case Recompute::kNone:
      p.recompute = 0;
      break;
    case Recompute::kSelective:
      p.recompute = lf.attention;
      break;
    case Recompute::kFull:
      p.recompute = p.forward;
      break;
  }
  return p;
}

PassFlops logitPassFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq) {
  PassFlops p;
  p.forward = logitForwardFlops(model, micro_batch, seq);
  p.backward = 2 * p.forward;
  return p;
}

PassFlops microBatchFlops(const ModelSpec& model, uint32_t micro_batch, uint32_t seq, Recompute recompute) {
  const PassFlops layer = layerPassFlops(model, micro_batch, seq, recompute);
  const PassFlops logit = logitPassFlops(model, micro_batch, seq);
  const double l = model.layers;
  PassFlops p;
  p.forward = layer.forward * l + logit.forward;
  p.backward = layer.backward * l + logit.backward;
  p.recompute = layer.recompute * l + logit.recompute;
  return p;
}

IterationFlops iterationFlops(const ModelSpec& model, const TrainingConfig& config, Recompute recompute) {
  const uint32_t seq = sequenceLength(model, config);
  // Per-sequence counts scale linearly with the batch, so count one sequence and multiply.
  const PassFlops one = microBatchFlops(model, 1, seq, recompute);
  IterationFlops it;
  it.model = one.model() * config.global_batch;
  it.hardware = one.total() * config.global_batch;
  return it;
}

double megatronFormulaFlops(const ModelSpec& model, uint32_t global_batch, uint32_t seq, bool full_recompute) {
  const double b = global_batch;
  const double s = seq;
  const double l = model.layers;
  const double h = model.hidden;
  const double v = model.vocab;
  if (full_recompute) return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
}

}  // namespace mv
