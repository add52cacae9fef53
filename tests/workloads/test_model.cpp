/**
 * @file test_model.cpp
 * Model zoo: parameter counts against nominal sizes and exact published counts, name
 * lookup and its error, shape validation.
 */
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "workloads/model.hpp"

using namespace mv;
using Catch::Matchers::Contains;

TEST_CASE("every zoo model's parameter count is within 3% of its nominal size", "[workloads][model]") {
  for (const auto& entry : modelZoo()) {
    INFO(entry.model.name << ": " << parameterCount(entry.model) << " vs " << entry.nominal_parameters);
    CHECK(validateModel(entry.model).empty());
    CHECK(std::fabs(parameterCount(entry.model) / entry.nominal_parameters - 1) < 0.03);
  }
}

TEST_CASE("parameter counts match published exact counts", "[workloads][model]") {
  // Llama-3 8B: 8,030,261,248 parameters (Hugging Face model card / safetensors index).
  CHECK(parameterCount(modelByName("llama3-8b")) == 8030261248.0);
  // LLaMA-2 70B: 68,976,648,192 (GQA with 8 KV heads, untied embeddings).
  CHECK(parameterCount(modelByName("llama2-70b")) == 68976648192.0);
  // Mixtral 8x7B: 46,702,792,704 total, about 12.9B active (top-2 of 8 experts).
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  CHECK(parameterCount(mixtral) == 46702792704.0);
  CHECK(activeParameterCount(mixtral) == Approx(12.88e9).epsilon(0.005));
  CHECK(activeParameterCount(modelByName("gpt3-175b")) == parameterCount(modelByName("gpt3-175b")));
}

TEST_CASE("Megatron table models follow the SC'21 parameter formula", "[workloads][model]") {
  // P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)); the zoo also counts the final LayerNorm (2h).
  for (const auto& row : megatronSc21Table()) {
    const ModelSpec& m = row.model;
    const double l = m.layers, h = m.hidden, v = m.vocab, s = m.seq;
    const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
    INFO(m.name);
    CHECK(parameterCount(m) == Approx(formula + 2 * h).epsilon(1e-12));
    CHECK(m.vocab == 51200);
    CHECK(m.seq == 2048);
    CHECK(m.ffn == 4 * m.hidden);
  }
  CHECK(megatronSc21Table().size() == 10);
}

TEST_CASE("zoo shapes carry GQA, gated MLP and MoE flags", "[workloads][model]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  CHECK_FALSE(gpt.isGqa());
  CHECK_FALSE(gpt.gated_mlp);
  CHECK(gpt.ffn == 4 * 12288);
  const ModelSpec l3 = modelByName("llama3-70b");
  CHECK(l3.isGqa());
  CHECK(l3.kvWidth() == 1024);
  CHECK(l3.gated_mlp);
  CHECK_FALSE(l3.tied_embeddings);
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  CHECK(mixtral.isMoe());
  CHECK(mixtral.experts == 8);
  CHECK(mixtral.top_k == 2);
  CHECK(modelByName("llama3.1-405b").layers == 126);
  CHECK(modelByName("megatron-1008b").hidden == 25600);
}

TEST_CASE("an unknown model name lists the valid names", "[workloads][model]") {
  std::string message;
  try {
    modelByName("gpt5");
  } catch (const WorkloadError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("unknown model 'gpt5'"));
  for (const char* name : {"gpt3-13b", "gpt3-175b", "llama-65b", "llama2-70b", "llama3-8b", "llama3-70b",
                           "llama3.1-405b", "mixtral-8x7b"}) {
    CHECK_THAT(message, Contains(name));
  }
}

TEST_CASE("validateModel reports impossible shapes", "[workloads][model]") {
  ModelSpec m = modelByName("llama3-8b");
  m.hidden = 4100;  // not a multiple of 32 heads
  m.kv_heads = 5;   // 32 % 5 != 0
  m.top_k = 3;      // dense model, experts = 1
  const auto problems = validateModel(m);
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Contains("hidden"));
  CHECK_THAT(problems[1], Contains("kv_heads"));
  CHECK_THAT(problems[2], Contains("top_k"));
  m = ModelSpec{};
  CHECK(validateModel(m).size() == 7);  // layers, hidden, heads, kv_heads, ffn, vocab and seq are all 0
}
