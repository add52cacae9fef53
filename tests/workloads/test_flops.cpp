/**
 * @file test_flops.cpp
 * FLOP counts against the closed forms of Narayanan et al. SC'21 and Korthikanti et al. 2022.
 */
#include <catch2/catch.hpp>

#include "workloads/flops.hpp"

using namespace mv;

TEST_CASE("a GPT layer's forward pass is 24bsh^2 + 4bs^2h", "[workloads][flops]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  const double b = 2, s = 2048, h = 12288;
  const LayerFlops lf = layerForwardFlops(gpt, 2, 2048);
  CHECK(lf.total() == 24 * b * s * h * h + 4 * b * s * s * h);
  CHECK(lf.qkv == 6 * b * s * h * h);
  CHECK(lf.projection == 2 * b * s * h * h);
  CHECK(lf.mlp == 16 * b * s * h * h);
  CHECK(lf.attention == 4 * b * s * s * h);
  CHECK(lf.router == 0);
  CHECK(logitForwardFlops(gpt, 2, 2048) == 2 * b * s * h * 50257);
}

TEST_CASE("iteration FLOPs equal Megatron's 96/72 formulas for GPT-style models", "[workloads][flops]") {
  std::vector<ModelSpec> models = {modelByName("gpt3-13b"), modelByName("gpt3-175b")};
  for (const auto& row : megatronSc21Table()) models.push_back(row.model);
  for (const auto& m : models) {
    TrainingConfig c;
    c.global_batch = 1536;
    c.seq = 2048;
    const double B = c.global_batch, s = 2048, l = m.layers, h = m.hidden, V = m.vocab;
    INFO(m.name);
    // Full recomputation: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) (SC'21 eq. 3).
    const IterationFlops full = iterationFlops(m, c, Recompute::kFull);
    const double f96 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    CHECK(full.hardware == Approx(f96).epsilon(1e-12));
    CHECK(megatronFormulaFlops(m, c.global_batch, 2048, true) == Approx(f96).epsilon(1e-15));
    // Without recomputation every term is 3× forward, logits included: 72·…·(1 + s/(6h) + V/(12·l·h)).
    const IterationFlops none = iterationFlops(m, c, Recompute::kNone);
    const double f72 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    CHECK(none.hardware == Approx(f72).epsilon(1e-12));
    CHECK(none.model == none.hardware);
    CHECK(full.model == Approx(f72).epsilon(1e-12));  // MFU never counts recomputation
    CHECK(megatronFormulaFlops(m, c.global_batch, 2048, false) == Approx(f72).epsilon(1e-15));
  }
}

TEST_CASE("selective recomputation adds only the attention core", "[workloads][flops]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  const double s = 2048, h = 12288, l = 96;
  const PassFlops layer = layerPassFlops(gpt, 1, 2048, Recompute::kSelective);
  CHECK(layer.recompute == 4 * s * s * h);
  CHECK(layer.backward == 2 * layer.forward);
  TrainingConfig c;
  c.global_batch = 8;
  const IterationFlops it = iterationFlops(gpt, c, Recompute::kSelective);
  CHECK(it.hardware - it.model == Approx(8 * l * 4 * s * s * h).epsilon(1e-9));
  const PassFlops logit = logitPassFlops(gpt, 1, 2048);
  CHECK(logit.recompute == 0);
  CHECK(logit.total() == 3 * 2 * s * h * 50257);
}

TEST_CASE("GQA shrinks K and V; gated MLPs have three GEMMs", "[workloads][flops]") {
  const ModelSpec l8 = modelByName("llama3-8b");  // h 4096, 32 heads, 8 KV heads, f 14336
  const double s = 8192, h = 4096, f = 14336;
  const LayerFlops lf = layerForwardFlops(l8, 1, 8192);
  CHECK(lf.qkv == 2 * s * h * (h + 2 * h / 4));
  CHECK(lf.mlp == 3 * 2 * s * h * f);
  CHECK(lf.attention == 4 * s * s * h);  // queries still attend with every head
  CHECK(lf.projection == 2 * s * h * h);
}

TEST_CASE("MoE layers run the top-k experts' MLPs and a router per token", "[workloads][flops]") {
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  ModelSpec dense = mixtral;
  dense.experts = 1;
  dense.top_k = 1;
  const LayerFlops moe = layerForwardFlops(mixtral, 1, 4096);
  const LayerFlops one = layerForwardFlops(dense, 1, 4096);
  CHECK(moe.mlp == 2 * one.mlp);
  CHECK(moe.router == 2.0 * 4096 * 4096 * 8);
  CHECK(moe.qkv == one.qkv);
  // Forward FLOPs per token ≈ 2 × active parameters (without attention scores and embeddings).
  const double per_token = (moe.total() - moe.attention) / 4096 * mixtral.layers + logitForwardFlops(mixtral, 1, 1);
  CHECK(per_token == Approx(2 * (activeParameterCount(mixtral) - 32000.0 * 4096)).epsilon(0.001));
}
