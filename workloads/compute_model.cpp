/**
 * @file compute_model.cpp
 * Kernel decomposition of a transformer layer, the roofline with its fitted GEMM efficiency,
 * and stage / iteration times with the pipeline bubble.
 */
#include "workloads/compute_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "workloads/memory.hpp"

namespace mv {

namespace {

/// Seconds to picoseconds, rounded up so that no kernel takes zero time, and held at the
/// engine's horizon: an experiment with a kernel that long is refused
/// (iterationComputePs), and a layer's few dozen kernels, each at most the horizon, add up
/// far inside int64.
Picoseconds fromSeconds(double seconds) {
  const double ps = seconds * 1e12;
  return Picoseconds{ps < static_cast<double>(kTimeHorizonPs) ? static_cast<int64_t>(std::ceil(ps)) : kTimeHorizonPs};
}

/// `count` kernels of `t` each, held at the horizon as fromSeconds is.
Picoseconds times(Picoseconds t, uint32_t count) {
  return Picoseconds{static_cast<int64_t>(std::min<Int128>(Int128{t.ps} * count, kTimeHorizonPs))};
}

/// A GEMM of m×k by k×n, `batch` times in one kernel, `e` bytes per element.
Operator gemm(std::string_view name, double m, double n, double k, double e, double batch = 1) {
  Operator op;
  op.name = name;
  op.kind = OpKind::kGemm;
  op.shape = GemmShape{m, n, k, batch};
  op.flops = op.shape.flops();
  op.bytes = e * batch * (m * k + k * n + m * n);
  op.backward_factor = 2;
  return op;
}

/// A memory-bound kernel moving `bytes`, whose backward moves `backward_factor` × as many.
Operator memoryOp(std::string_view name, double bytes, double backward_factor) {
  Operator op;
  op.name = name;
  op.kind = OpKind::kMemory;
  op.bytes = bytes;
  op.backward_factor = backward_factor;
  return op;
}

/// Shape numbers shared by the kernel lists.
struct Dims {
  double e;    // activation element bytes
  double s;    // sequence length on this GPU (s / cp)
  double b;    // micro-batch
  double tok;  // tokens per micro-batch on this GPU, b·s / cp
  double h;
  double t;  // tensor-parallel size
  double r;  // divisor of the LayerNorm/dropout region (t with SP, else 1)
};

Dims dims(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) {
  Dims d;
  d.e = activationBytes(config.precision);
  d.s = localSequence(model, config, par);
  d.b = config.micro_batch;
  d.tok = d.s * d.b;
  d.h = model.hidden;
  d.t = std::max<uint32_t>(par.tp, 1);
  d.r = sequenceParallelActive(par) ? d.t : 1.0;
  return d;
}

}  // namespace

double GpuComputeSpec::peakFlops(TrainingPrecision precision) const {
  switch (precision) {
    case TrainingPrecision::kFp8:
      return peak_flops_fp8 > 0 ? peak_flops_fp8 : peak_flops;
    case TrainingPrecision::kFp32:
      return peak_flops_fp32 > 0 ? peak_flops_fp32 : peak_flops / 2;
    case TrainingPrecision::kBf16:
    case TrainingPrecision::kFp16:
      break;
  }
  return peak_flops;
}

GpuComputeSpec computeSpecOf(const GpuSpec& gpu) {
  constexpr double kTera = 1e12;
  return {gpu.name,
          gpu.bf16_tflops * kTera,
          gpu.fp8_tflops * kTera,
          gpu.tf32_tflops * kTera,
          static_cast<double>(gpu.hbm_bandwidth.bps) / 8,
          gpu.sms};
}

GpuComputeSpec gpuComputeByName(std::string_view name) {
  if (const GpuSpec* gpu = findGpu(name)) return computeSpecOf(*gpu);
  throw WorkloadError("unknown GPU '" + std::string(name) + "'; valid: " + gpuNameList());
}

GpuComputeSpec a100Compute() {
  return gpuComputeByName("a100-80gb");
}
GpuComputeSpec h100Compute() {
  return gpuComputeByName("h100");
}
GpuComputeSpec h200Compute() {
  return gpuComputeByName("h200");
}
GpuComputeSpec b200Compute() {
  return gpuComputeByName("b200");
}

std::vector<Operator> layerOperators(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) {
  const Dims d = dims(model, config, par);
  const double e = d.e, tok = d.tok, h = d.h, t = d.t, r = d.r, s = d.s;
  const double kv = model.kvWidth();
  const double heads_local = model.heads / t;
  const double hd = model.headDim();
  const double f = model.ffn;
  const double mask = 1;

  std::vector<Operator> ops;
  // LayerNorm: read x, write y; backward reads x and dy, writes dx.
  ops.push_back(memoryOp("input_norm", 2 * e * tok * h / r, 1.5));
  ops.push_back(gemm("qkv", tok, (h + 2 * kv) / t, h, e));
  if (config.flash_attention) {
    // One fused kernel: QK^T and ·V on chip, HBM traffic only Q, K, V and the output. The
    // causal mask lets it skip the tiles above the diagonal: its two products cost what one
    // full one does. FlashAttention-2's backward recomputes the scores: 5 GEMMs against 2
    // forward. With context parallelism, ring attention runs one kernel per ring step: the
    // local queries against the keys and values of one rank's s / cp tokens, half of whose
    // pairs the mask keeps once each rank holds two of 2·cp chunks.
    Operator flash = gemm("flash_attention", s, s, hd, e, d.b * heads_local);
    flash.bytes = e * tok * (2 * h + 2 * kv) / t;
    flash.backward_factor = 2.5;
    flash.attention_core = true;
    flash.count = std::max<uint32_t>(par.cp, 1);
    ops.push_back(flash);
  } else {
    Operator scores = gemm("attention_scores", s, s, hd, e, d.b * heads_local);
    scores.attention_core = true;
    ops.push_back(scores);
    // Causal fused scale-mask-softmax reads the lower triangle (e/2) and writes e; dropout
    // reads e, writes e and a 1-byte mask. Backward: softmax 3e, dropout 2e + mask.
    Operator softmax =
        memoryOp("softmax_dropout", d.b * heads_local * s * s * (3.5 * e + mask), (5 * e + mask) / (3.5 * e + mask));
    softmax.attention_core = true;
    ops.push_back(softmax);
    Operator values = gemm("attention_values", s, hd, s, e, d.b * heads_local);
    values.attention_core = true;
    ops.push_back(values);
  }
  ops.push_back(gemm("projection", tok, h, h / t, e));
  // Fused bias-dropout-add: read output and residual, write sum and mask; backward reads dy
  // and the mask, writes dx.
  ops.push_back(memoryOp("attention_residual", tok * h * (3 * e + mask) / r, (2 * e + mask) / (3 * e + mask)));
  ops.push_back(memoryOp("mlp_norm", 2 * e * tok * h / r, 1.5));

  double expert_tokens = tok;  // tokens through one MLP kernel
  uint32_t kernels = 1;
  if (model.isMoe()) {
    const double ep = std::max<uint32_t>(par.ep, 1);
    const double k = model.top_k;
    ops.push_back(gemm("router", tok / r, model.experts, h, e));
    ops.push_back(memoryOp("dispatch", 2 * e * tok * k * h / r, 1.0));
    // Balanced routing: each local expert sees tok·k·ep/experts tokens; experts/ep per GPU.
    expert_tokens = tok * k * ep / model.experts;
    kernels = static_cast<uint32_t>(std::max(1.0, model.experts / ep));
  }
  const double up_width = f * (model.gated_mlp ? 2 : 1) / t;
  Operator up = gemm("mlp_up", expert_tokens, up_width, h, e);
  up.count = kernels;
  ops.push_back(up);
  // GeLU: read e, write e (backward 3e); SwiGLU: read 2e, write e (backward 5e).
  Operator act = model.gated_mlp ? memoryOp("activation", 3 * e * expert_tokens * f / t, 5.0 / 3.0)
                                 : memoryOp("activation", 2 * e * expert_tokens * f / t, 1.5);
  act.count = kernels;
  ops.push_back(act);
  Operator down = gemm("mlp_down", expert_tokens, h, f / t, e);
  down.count = kernels;
  ops.push_back(down);
  if (model.isMoe()) ops.push_back(memoryOp("combine", 2 * e * tok * model.top_k * h / r, 1.0));
  ops.push_back(memoryOp("mlp_residual", tok * h * (3 * e + mask) / r, (2 * e + mask) / (3 * e + mask)));
  return ops;
}

std::vector<Operator> firstStageOperators(const ModelSpec& model, const TrainingConfig& config,
                                          const Parallelism& par) {
  const Dims d = dims(model, config, par);
  // Gather the token rows (and position rows), write the sum; backward scatter-adds.
  const double tensors = model.learned_positions ? 3 : 2;
  return {memoryOp("embedding", tensors * d.e * d.tok * d.h, 1.5)};
}

std::vector<Operator> lastStageOperators(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) {
  const Dims d = dims(model, config, par);
  const double vocab_local = static_cast<double>(model.vocab) / d.t;
  return {
      memoryOp("final_norm", 2 * d.e * d.tok * d.h / d.r, 1.5),
      gemm("logits", d.tok, vocab_local, d.h, d.e),
      // Vocab-parallel cross-entropy in fp32: read the logits, write and re-read fp32 softmax.
      memoryOp("cross_entropy", d.tok * vocab_local * (d.e + 8), 1.0),
  };
}

double GemmEfficiency::quantizationFactor(const GemmShape& g, uint32_t sms) const {
  if (!quantization || sms == 0 || g.flops() <= 0) return 1;
  struct Tile {
    double rows, cols, speed;
  };
  const double s1 = small_tile, s2 = s1 * s1, s3 = s2 * s1;
  const Tile tiles[] = {{256, 128, 1}, {128, 256, 1}, {128, 128, s1}, {256, 64, s1},
                        {64, 256, s1}, {128, 64, s2}, {64, 128, s2},  {64, 64, s3}};
  const double slots = sms;
  double best = 0;
  for (const Tile& t : tiles) {
    const double count = std::ceil(g.m / t.rows) * std::ceil(g.n / t.cols) * g.batch;
    const double padding = g.m * g.n * g.batch / (count * t.rows * t.cols);
    const double split =
        count < slots ? std::max(1.0, std::min(std::floor(slots / count), std::floor(g.k / kMinSplitK))) : 1;
    const double units = count * split;
    const double fill = units / (std::ceil(units / slots) * slots);
    best = std::max(best, t.speed * padding * fill);
  }
  return best;
}

double GemmEfficiency::operator()(const GemmShape& g, uint32_t sms) const {
  return ceiling * quantizationFactor(g, sms);
}

ComputeModelParams megatronA100Params() {
  // Fitted end to end by bench/fit_compute.cpp (systems/calibration.hpp) jointly with
  // kMegatronTpBandwidthFactor against Megatron-LM SC'21 Table 1, the Megatron-LM README's
  // MFU table and Korthikanti et al. 2022 (Tables 4 and 5, Section 6.3): whole simulated
  // iterations (this roofline plus the simulated TP, PP and DP communication, analytical
  // fidelity) and per-layer times, minimising the largest relative error over the 19 runs and
  // 10 layer passes; per-run and leave-one-out errors in docs/workloads.md "Calibration".
  ComputeModelParams p;
  p.gemm.ceiling = 0.758;
  p.gemm.small_tile = 1.0;
  p.gemm.gradient = 0.925;
  p.gemm.quantization = true;
  p.memory_efficiency = 0.652;
  p.kernel_overhead = Picoseconds{0};
  p.optimizer_bytes_per_param = 30;
  return p;
}

std::vector<std::string> operatorTimeKeys() {
  static const char* const kOperators[] = {
      "input_norm", "qkv",  "attention_scores", "softmax_dropout", "attention_values", "flash_attention",
      "projection", "attention_residual", "mlp_norm", "router", "dispatch", "mlp_up", "activation", "mlp_down",
      "combine", "mlp_residual", "embedding", "final_norm", "logits", "cross_entropy"};
  std::vector<std::string> keys;
  for (const char* op : kOperators) {
    keys.emplace_back(op);
    keys.push_back(std::string(op) + ".backward");
  }
  keys.emplace_back("optimizer");
  return keys;
}

ComputeModel::ComputeModel(GpuComputeSpec gpu, ComputeModelParams params, OperatorTimes overrides)
    : gpu_(std::move(gpu)), params_(params), overrides_(std::move(overrides)) {}

double ComputeModel::gemmEfficiency(const GemmShape& shape) const {
  return params_.gemm(shape, gpu_.sms);
}

double ComputeModel::rooflineSeconds(OpKind kind, const GemmShape& shape, double flops, double bytes,
                                     TrainingPrecision precision, bool gradient) const {
  double seconds = bytes / (gpu_.hbm_bandwidth * params_.memory_efficiency);
  if (kind == OpKind::kGemm && flops > 0) {
    const double efficiency = gemmEfficiency(shape) * (gradient ? params_.gemm.gradient : 1.0);
    seconds = std::max(seconds, flops / (gpu_.peakFlops(precision) * efficiency));
  }
  return seconds;
}

Picoseconds ComputeModel::kernelTime(OpKind kind, const GemmShape& shape, double bytes,
                                     TrainingPrecision precision) const {
  return fromSeconds(rooflineSeconds(kind, shape, shape.flops(), bytes, precision)) + params_.kernel_overhead;
}

Picoseconds ComputeModel::opaqueKernelTime(double flops, double bytes, TrainingPrecision precision) const {
  const double seconds = std::max(bytes / (gpu_.hbm_bandwidth * params_.memory_efficiency),
                                  flops / (gpu_.peakFlops(precision) * params_.gemm.ceiling));
  return fromSeconds(seconds) + params_.kernel_overhead;
}

Picoseconds ComputeModel::forwardTime(const Operator& op, TrainingPrecision precision) const {
  if (const auto it = overrides_.find(op.name); it != overrides_.end()) return times(it->second, op.count);
  return times(fromSeconds(rooflineSeconds(op.kind, op.shape, op.flops, op.bytes, precision)) + params_.kernel_overhead,
               op.count);
}

Picoseconds ComputeModel::backwardTime(const Operator& op, TrainingPrecision precision) const {
  std::string key(op.name);
  key += ".backward";
  if (const auto it = overrides_.find(key); it != overrides_.end()) return times(it->second, op.count);
  if (const auto it = overrides_.find(op.name); it != overrides_.end()) {
    const double ps = std::ceil(static_cast<double>(it->second.ps) * op.backward_factor);
    return times(Picoseconds{static_cast<int64_t>(ps)}, op.count);
  }
  if (op.kind == OpKind::kGemm && op.backward_factor == 2 && op.flops == op.shape.flops()) {
    // The input- and weight-gradient GEMMs, each at its own shape's efficiency.
    const double seconds = rooflineSeconds(op.kind, op.shape.inputGradient(), op.flops, op.bytes, precision, true) +
                           rooflineSeconds(op.kind, op.shape.weightGradient(), op.flops, op.bytes, precision, true);
    return times(fromSeconds(seconds) + params_.kernel_overhead * 2, op.count);
  }
  if (op.kind == OpKind::kGemm) {
    // A fused kernel (FlashAttention): backward_factor × the forward work at its efficiency.
    const double seconds = op.backward_factor * rooflineSeconds(op.kind, op.shape, op.flops, op.bytes, precision);
    const auto kernels = static_cast<int64_t>(std::ceil(op.backward_factor));
    return times(fromSeconds(seconds) + params_.kernel_overhead * kernels, op.count);
  }
  return times(kernelTime(op.kind, GemmShape{}, op.bytes * op.backward_factor, precision), op.count);
}

Picoseconds ComputeModel::gradientGemmTime(const Operator& op, TrainingPrecision precision, bool weight) const {
  const bool overridden = overrides_.contains(op.name) || overrides_.contains(std::string(op.name) + ".backward");
  if (!overridden && op.kind == OpKind::kGemm && op.backward_factor == 2 && op.flops == op.shape.flops()) {
    const GemmShape shape = weight ? op.shape.weightGradient() : op.shape.inputGradient();
    return times(
        fromSeconds(rooflineSeconds(op.kind, shape, op.flops, op.bytes, precision, true)) + params_.kernel_overhead,
        op.count);
  }
  return Picoseconds{backwardTime(op, precision).ps / 2};
}

LayerTimes ComputeModel::layerTimes(const ModelSpec& model, const TrainingConfig& config,
                                    const Parallelism& par) const {
  LayerTimes lt;
  for (const Operator& op : layerOperators(model, config, par)) {
    const Picoseconds fwd = forwardTime(op, config.precision);
    lt.forward += fwd;
    lt.backward += backwardTime(op, config.precision);
    if (par.recompute == Recompute::kFull || (par.recompute == Recompute::kSelective && op.attention_core)) {
      lt.recompute += fwd;
    }
  }
  return lt;
}

StageTimes ComputeModel::stageTimes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                                    uint32_t stage) const {
  StageTimes st;
  st.stage = stage;
  st.layers = stageLayers(model, par, stage);
  const LayerTimes lt = layerTimes(model, config, par);
  st.forward = lt.forward * st.layers;
  st.backward = lt.backward * st.layers;
  st.recompute = lt.recompute * st.layers;
  auto add = [&](const std::vector<Operator>& ops) {
    for (const Operator& op : ops) {
      st.forward += forwardTime(op, config.precision);
      st.backward += backwardTime(op, config.precision);
    }
  };
  if (stage == 0) add(firstStageOperators(model, config, par));
  if (stage + 1 == std::max<uint32_t>(par.pp, 1)) add(lastStageOperators(model, config, par));

  // Adam on the parameters this GPU updates (its shard from ZeRO-1 on).
  const StageParameters params = stageParameters(model, par, stage);
  const double updated = par.zero >= Zero::kOptimizer ? shardedParameters(params, par) : params.total();
  if (const auto it = overrides_.find(std::string_view("optimizer")); it != overrides_.end()) {
    st.optimizer = it->second;
  } else {
    const double norm_bytes = config.grad_clip ? kGradNormBytesPerParam : 0;
    st.optimizer = kernelTime(OpKind::kMemory, GemmShape{}, updated * (params_.optimizer_bytes_per_param + norm_bytes),
                              config.precision);
  }
  return st;
}

double ComputeModel::iterationComputePs(const ModelSpec& model, const TrainingConfig& config,
                                        const Parallelism& par) const {
  const LayerTimes lt = layerTimes(model, config, par);
  const double layer =
      static_cast<double>(lt.forward.ps) + static_cast<double>(lt.backward.ps) + static_cast<double>(lt.recompute.ps);
  auto passes = [&](const std::vector<Operator>& ops) {
    double sum = 0;
    for (const Operator& op : ops) {
      sum += static_cast<double>(forwardTime(op, config.precision).ps) +
             static_cast<double>(backwardTime(op, config.precision).ps);
    }
    return sum;
  };
  const uint32_t p = std::max<uint32_t>(par.pp, 1);
  const double first = passes(firstStageOperators(model, config, par));
  const double last = passes(lastStageOperators(model, config, par));
  double sum = 0;
  double slowest = 0;
  for (uint32_t stage = 0; stage < p; ++stage) {
    const double t = stageLayers(model, par, stage) * layer + (stage == 0 ? first : 0) + (stage + 1 == p ? last : 0);
    sum += t;
    slowest = std::max(slowest, t);
  }
  return sum - slowest + static_cast<double>(microBatchCount(config, par)) * slowest;
}

IterationTime ComputeModel::iterationTime(const ModelSpec& model, const TrainingConfig& config,
                                          const Parallelism& par) const {
  IterationTime it;
  it.micro_batches = microBatchCount(config, par);
  const uint32_t p = std::max<uint32_t>(par.pp, 1);
  Picoseconds sum;
  Picoseconds slowest;
  for (uint32_t stage = 0; stage < p; ++stage) {
    StageTimes st = stageTimes(model, config, par, stage);
    sum += st.perMicroBatch();
    if (st.perMicroBatch() > slowest) {
      slowest = st.perMicroBatch();
      it.slowest_stage = stage;
    }
    it.optimizer = maxTime(it.optimizer, st.optimizer);
    it.stages.push_back(st);
  }
  const int64_t v = par.schedule == PipelineSchedule::kInterleaved ? std::max<uint32_t>(par.vpp, 1) : 1;
  it.busy = slowest * it.micro_batches;
  it.bubble = (sum - slowest) / v;
  it.total = it.busy + it.bubble + it.optimizer;
  return it;
}

double IterationTime::bubbleFraction() const {
  return total.ps > 0 ? static_cast<double>(bubble.ps) / static_cast<double>(total.ps) : 0.0;
}

double achievedFlopsPerGpu(double flops, uint32_t gpus, Picoseconds time) {
  if (gpus == 0 || time.ps <= 0) return 0;
  return flops / (static_cast<double>(gpus) * time.toSeconds());
}

}  // namespace mv
