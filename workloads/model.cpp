/**
 * @file model.cpp
 * Parameter counting, the model zoo and the Megatron SC'21 table.
 */
#include "workloads/model.hpp"

#include <utility>

namespace mv {

namespace {

/// A GPT-3-style model: 4h GeLU MLP, biases, LayerNorm, tied embeddings, learned positions.
ModelSpec gptStyle(std::string name, uint32_t layers, uint32_t hidden, uint32_t heads, uint32_t vocab, uint32_t seq) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn = 4 * hidden;
  m.vocab = vocab;
  m.seq = seq;
  return m;
}

/// A LLaMA-style model: SwiGLU MLP of size `ffn`, no biases, RMSNorm, untied embeddings, rotary.
ModelSpec llamaStyle(std::string name, uint32_t layers, uint32_t hidden, uint32_t heads, uint32_t kv_heads,
                     uint32_t ffn, uint32_t vocab, uint32_t seq) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.vocab = vocab;
  m.seq = seq;
  m.gated_mlp = true;
  m.bias = false;
  m.tied_embeddings = false;
  m.learned_positions = false;
  return m;
}

ModelSpec mixtral8x7b() {
  ModelSpec m = llamaStyle("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096);
  m.experts = 8;
  m.top_k = 2;
  return m;
}

/// Megatron SC'21 Table 1 model: GPT-style, vocab 51,200, seq 2048.
ModelSpec megatronModel(std::string name, uint32_t layers, uint32_t hidden, uint32_t heads) {
  return gptStyle(std::move(name), layers, hidden, heads, 51200, 2048);
}

const std::vector<MegatronRow>& megatronRows() {
  // Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
  // Megatron-LM", SC'21, Table 1 (A100 80GB, seq 2048, vocab 51,200, full recomputation).
  // Micro-batch, layers per model chunk and DDP as in NVIDIA/Megatron-LM
  // examples/sc21/run_table_1.sh (MBS, --num-layers-per-virtual-pipeline-stage, DDP).
  static const std::vector<MegatronRow> rows = {
      {megatronModel("megatron-1.7b", 24, 2304, 24), 1.7e9, 1, 1, 32, 512, 137, 16, 1, true},
      {megatronModel("megatron-3.6b", 30, 3072, 32), 3.6e9, 2, 1, 64, 512, 138, 16, 1, true},
      {megatronModel("megatron-7.5b", 36, 4096, 32), 7.5e9, 4, 1, 128, 512, 142, 16, 1, true},
      {megatronModel("megatron-18.4b", 40, 6144, 48), 18.4e9, 8, 1, 256, 1024, 135, 8, 1, true},
      {megatronModel("megatron-39.1b", 48, 8192, 64), 39.1e9, 8, 2, 512, 1536, 138, 4, 1, false},
      {megatronModel("megatron-76.1b", 60, 10240, 80), 76.1e9, 8, 4, 1024, 1792, 140, 2, 3, false},
      {megatronModel("megatron-145.6b", 80, 12288, 96), 145.6e9, 8, 8, 1536, 2304, 148, 2, 2, false},
      {megatronModel("megatron-310.1b", 96, 16384, 128), 310.1e9, 8, 16, 1920, 2160, 155, 1, 2, false},
      {megatronModel("megatron-529.6b", 105, 20480, 128), 529.6e9, 8, 35, 2520, 2520, 163, 1, 3, false},
      {megatronModel("megatron-1008b", 128, 25600, 160), 1008.0e9, 8, 64, 3072, 3072, 163, 1, 1, false},
  };
  return rows;
}

const std::vector<ZooEntry>& zoo() {
  // Shapes: shared/reference/calibration.md "Model shapes (public)" (GPT-3 paper Table 2.1,
  // LLaMA / LLaMA-2 / Llama-3 / Llama-3.1 / Mixtral model cards and papers).
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> e = {
        {gptStyle("gpt3-13b", 40, 5120, 40, 50257, 2048), 13e9, "GPT-3 (Brown et al. 2020) Table 2.1"},
        {gptStyle("gpt3-175b", 96, 12288, 96, 50257, 2048), 175e9, "GPT-3 (Brown et al. 2020) Table 2.1"},
        {llamaStyle("llama-65b", 80, 8192, 64, 64, 22016, 32000, 2048), 65.2e9, "LLaMA (Touvron et al. 2023)"},
        {llamaStyle("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096), 70e9, "LLaMA-2 (Touvron et al. 2023)"},
        {llamaStyle("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192), 8e9, "Llama-3 model card"},
        {llamaStyle("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192), 70e9, "Llama-3 model card"},
        {llamaStyle("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192), 405e9, "Llama-3.1 (Dubey et al. 2024)"},
        {mixtral8x7b(), 46.7e9, "Mixtral of Experts (Jiang et al. 2024)"},
    };
    for (const auto& row : megatronRows())
      e.push_back({row.model, row.nominal_parameters, "Megatron-LM SC'21 Table 1"});
    return e;
  }();
  return entries;
}

}  // namespace

ParameterCount countParameters(const ModelSpec& model) {
  const double h = model.hidden;
  const double kv = model.kvWidth();
  const double f = model.ffn;
  ParameterCount p;
  p.attention_per_layer = h * (h + 2 * kv) + h * h;
  if (model.bias) p.attention_per_layer += h + 2 * kv + h;
  double one_mlp = (model.gated_mlp ? 3.0 : 2.0) * h * f;
  if (model.bias) one_mlp += (model.gated_mlp ? 2.0 : 1.0) * f + h;
  if (model.isMoe()) {
    p.expert_per_layer = one_mlp * model.experts;
    p.mlp_per_layer = p.expert_per_layer + h * model.experts;  // router
  } else {
    p.mlp_per_layer = one_mlp;
  }
  const double norm = model.bias ? 2 * h : h;  // LayerNorm weight+bias, or RMSNorm weight
  p.norms_per_layer = 2 * norm;
  p.embedding = static_cast<double>(model.vocab) * h;
  p.positions = model.learned_positions ? static_cast<double>(model.seq) * h : 0.0;
  p.output = model.tied_embeddings ? 0.0 : static_cast<double>(model.vocab) * h;
  p.final_norm = norm;
  return p;
}

double parameterCount(const ModelSpec& model) {
  return countParameters(model).total(model.layers);
}

double activeParameterCount(const ModelSpec& model) {
  const ParameterCount p = countParameters(model);
  if (!model.isMoe()) return p.total(model.layers);
  const double inactive = p.expert_per_layer * (model.experts - model.top_k) / model.experts;
  return p.total(model.layers) - inactive * model.layers;
}

std::span<const ZooEntry> modelZoo() {
  return zoo();
}

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  for (const auto& e : zoo()) names.push_back(e.model.name);
  return names;
}

ModelSpec modelByName(std::string_view name) {
  for (const auto& e : zoo()) {
    if (e.model.name == name) return e.model;
  }
  std::string msg = "unknown model '" + std::string(name) + "'; valid names:";
  for (const auto& n : modelNames()) msg += " " + n;
  msg += " (or give the shape inline: layers, hidden, heads, ...)";
  throw WorkloadError(msg);
}

std::vector<std::string> validateModel(const ModelSpec& m) {
  std::vector<std::string> problems;
  auto positive = [&](uint32_t v, const char* what) {
    if (v == 0) problems.push_back(std::string(what) + " must be > 0");
  };
  positive(m.layers, "layers");
  positive(m.hidden, "hidden");
  positive(m.heads, "heads");
  positive(m.kv_heads, "kv_heads");
  positive(m.ffn, "ffn");
  positive(m.vocab, "vocab");
  positive(m.seq, "seq");
  positive(m.experts, "experts");
  positive(m.top_k, "top_k");
  if (!problems.empty()) return problems;
  if (m.hidden % m.heads != 0) {
    problems.push_back("hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" +
                       std::to_string(m.heads) + ")");
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    problems.push_back("heads (" + std::to_string(m.heads) + ") must be a multiple of kv_heads (" +
                       std::to_string(m.kv_heads) + ")");
  }
  if (m.top_k > m.experts) {
    problems.push_back("top_k (" + std::to_string(m.top_k) + ") cannot exceed experts (" + std::to_string(m.experts) +
                       ")");
  }
  return problems;
}

std::span<const MegatronRow> megatronSc21Table() {
  return megatronRows();
}

std::span<const MegatronMfuRow> megatronSelectiveTable() {
  // MFU: NVIDIA/Megatron-LM README ("model (MFU) and hardware (HFU) FLOPs utilization",
  // measured with a data-parallel size of one). Shapes, PP, GPUs and batch: Korthikanti et
  // al. 2022, Table 3 (TP 8 throughout); the interleaved schedule with three model chunks
  // per GPU for 175B and 530B (their Section 6).
  static const std::vector<MegatronMfuRow> rows = {
      {megatronModel("megatron-22b", 48, 6144, 64), 1, 8, 4, 4, 1, 0.415, 1.42},
      {megatronModel("megatron-175b", 96, 12288, 96), 8, 64, 64, 1, 3, 0.514, 18.13},
      {megatronModel("megatron-530b", 105, 20480, 128), 35, 280, 280, 1, 3, 0.560, 49.05},
      {megatronModel("megatron-1t", 128, 25600, 160), 64, 512, 512, 1, 1, 0.563, 94.42},
  };
  return rows;
}

}  // namespace mv
