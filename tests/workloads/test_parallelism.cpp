/**
 * @file test_parallelism.cpp
 * Megatron-LM validation rules, one at a time, and the enum parsers.
 */
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "workloads/parallelism.hpp"

using namespace mv;
using Catch::Matchers::Contains;

namespace {

/// Whether some problem has `key` and mentions `text`.
bool hasProblem(const std::vector<ConfigProblem>& problems, const std::string& key, const std::string& text) {
  for (const auto& p : problems) {
    if (p.key == key && p.message.find(text) != std::string::npos) return true;
  }
  return false;
}

TrainingConfig batch(uint32_t global, uint32_t micro = 1) {
  TrainingConfig c;
  c.global_batch = global;
  c.micro_batch = micro;
  return c;
}

Parallelism split(uint32_t tp, uint32_t pp, uint32_t dp) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  return p;
}

}  // namespace

TEST_CASE("valid configurations have no problems", "[workloads][parallelism]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  Parallelism par = split(8, 8, 16);
  par.vpp = 3;
  par.schedule = PipelineSchedule::kInterleaved;
  par.sequence_parallel = true;
  CHECK(validateParallelism(gpt, batch(1536), par, 1024).empty());
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  Parallelism moe = split(2, 4, 8);
  moe.ep = 8;
  CHECK(validateParallelism(mixtral, batch(256, 2), moe, 64).empty());
  CHECK(microBatchCount(batch(1536), par) == 96);
  CHECK(gpuCount(par) == 1024);
}

TEST_CASE("each Megatron rule is reported with its key", "[workloads][parallelism]") {
  const ModelSpec gpt = modelByName("gpt3-175b");  // 96 layers, 96 heads
  SECTION("tp*pp*dp must equal the GPU count") {
    CHECK(hasProblem(validateParallelism(gpt, batch(64), split(8, 8, 2), 64), "parallelism", "128"));
  }
  SECTION("heads % tp") {
    const ModelSpec l8 = modelByName("llama3-8b");  // 32 heads, 8 KV heads
    CHECK(hasProblem(validateParallelism(l8, batch(64), split(3, 1, 1), 3), "parallelism.tp", "heads (32)"));
  }
  SECTION("kv_heads % tp with GQA") {
    const ModelSpec l70 = modelByName("llama3-70b");  // 64 heads, 8 KV heads
    const auto problems = validateParallelism(l70, batch(64), split(16, 1, 1), 16);
    CHECK(hasProblem(problems, "parallelism.tp", "kv_heads (8)"));
    CHECK_FALSE(hasProblem(problems, "parallelism.tp", "heads (64)"));
  }
  SECTION("layers % (pp*vpp)") {
    CHECK(hasProblem(validateParallelism(gpt, batch(64), split(8, 5, 1), 40), "parallelism.pp", "layers (96)"));
    Parallelism par = split(8, 8, 1);
    par.vpp = 5;
    par.schedule = PipelineSchedule::kInterleaved;
    CHECK(hasProblem(validateParallelism(gpt, batch(64), par, 64), "parallelism.pp", "pp*vpp"));
  }
  SECTION("global batch % (micro batch * dp)") {
    CHECK(hasProblem(validateParallelism(gpt, batch(100, 2), split(8, 1, 8), 64), "workload.global_batch",
                     "micro_batch*dp"));
  }
  SECTION("interleaving needs vpp > 1 and micro-batches % pp == 0") {
    Parallelism par = split(8, 8, 1);
    par.schedule = PipelineSchedule::kInterleaved;
    auto problems = validateParallelism(gpt, batch(60), par, 64);
    CHECK(hasProblem(problems, "parallelism.vpp", "vpp >= 2"));
    CHECK(hasProblem(problems, "workload.global_batch", "divisible by pp (8)"));
  }
  SECTION("vpp > 1 needs the interleaved schedule") {
    Parallelism par = split(8, 8, 1);
    par.vpp = 2;
    CHECK(hasProblem(validateParallelism(gpt, batch(64), par, 64), "parallelism.vpp", "interleaved"));
  }
  SECTION("sequence parallelism needs seq % tp") {
    Parallelism par = split(8, 1, 1);
    par.sequence_parallel = true;
    TrainingConfig c = batch(8);
    c.seq = 2044;
    CHECK(hasProblem(validateParallelism(gpt, c, par, 8), "parallelism.sp", "seq (2044)"));
  }
  SECTION("expert parallelism: experts % ep, dp % ep, dense models") {
    const ModelSpec mixtral = modelByName("mixtral-8x7b");
    Parallelism par = split(1, 1, 6);
    par.ep = 3;
    auto problems = validateParallelism(mixtral, batch(48), par, 6);
    CHECK(hasProblem(problems, "parallelism.ep", "experts (8)"));
    CHECK_FALSE(hasProblem(problems, "parallelism.ep", "must divide dp"));
    par = split(2, 1, 2);
    par.ep = 4;  // divides the experts but not dp (Megatron carves EP out of DP)
    problems = validateParallelism(mixtral, batch(8), par, 4);
    CHECK(hasProblem(problems, "parallelism.ep", "must divide dp (2)"));
    Parallelism dense = split(1, 1, 8);
    dense.ep = 2;
    CHECK(hasProblem(validateParallelism(gpt, batch(64), dense, 8), "parallelism.ep", "dense"));
  }
  SECTION("zero sizes stop further checks") {
    const auto problems = validateParallelism(gpt, batch(0), split(0, 1, 1), 8);
    CHECK(hasProblem(problems, "parallelism.tp", ">= 1"));
    CHECK(hasProblem(problems, "workload.global_batch", ">= 1"));
    CHECK(problems.size() == 2);
  }
  SECTION("model shape problems come first under workload.model") {
    ModelSpec bad = gpt;
    bad.hidden = 1000;
    CHECK(hasProblem(validateParallelism(bad, batch(64), split(8, 8, 1), 64), "workload.model", "hidden"));
  }
}

TEST_CASE("formatProblems prints one line per problem", "[workloads][parallelism]") {
  const std::string text = formatProblems({{"parallelism.tp", "a"}, {"parallelism.pp", "b"}});
  CHECK(text == "parallelism.tp: a\nparallelism.pp: b\n");
}

TEST_CASE("enum names round-trip and bad names list the valid ones", "[workloads][parallelism]") {
  for (auto p :
       {TrainingPrecision::kBf16, TrainingPrecision::kFp16, TrainingPrecision::kFp8, TrainingPrecision::kFp32}) {
    CHECK(parseTrainingPrecision(toString(p)) == p);
  }
  for (auto r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) CHECK(parseRecompute(toString(r)) == r);
  for (auto s : {PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved}) CHECK(parseSchedule(toString(s)) == s);
  CHECK_THROWS_WITH(parseRecompute("partial"), Contains("none selective full"));
  CHECK_THROWS_WITH(parseTrainingPrecision("int8"), Contains("bf16 fp16 fp8 fp32"));
  CHECK_THROWS_AS(parseSchedule("gpipe"), WorkloadError);
  CHECK(activationBytes(TrainingPrecision::kFp8) == 2);
  CHECK(activationBytes(TrainingPrecision::kFp32) == 4);
}

TEST_CASE("gradients are reduced in fp32 for bf16 parameters, as Megatron-LM does, unless told",
          "[workloads][parallelism]") {
  CHECK(gradReduceBytes(TrainingPrecision::kBf16, GradReduce::kAuto) == 4);
  CHECK(gradReduceBytes(TrainingPrecision::kFp8, GradReduce::kAuto) == 4);  // bf16 parameters
  CHECK(gradReduceBytes(TrainingPrecision::kFp16, GradReduce::kAuto) == 2);
  CHECK(gradReduceBytes(TrainingPrecision::kFp32, GradReduce::kAuto) == 4);
  CHECK(gradReduceBytes(TrainingPrecision::kBf16, GradReduce::kParam) == 2);
  CHECK(gradReduceBytes(TrainingPrecision::kFp16, GradReduce::kFp32) == 4);
  CHECK(TrainingConfig{}.grad_reduce == GradReduce::kAuto);
}

TEST_CASE("sequence length defaults to the model's", "[workloads][parallelism]") {
  const ModelSpec l8 = modelByName("llama3-8b");
  TrainingConfig c = batch(8);
  CHECK(sequenceLength(l8, c) == 8192);
  c.seq = 4096;
  CHECK(sequenceLength(l8, c) == 4096);
  Parallelism par;
  par.sequence_parallel = true;
  CHECK_FALSE(sequenceParallelActive(par));  // tp == 1: Megatron turns SP off
  par.tp = 2;
  CHECK(sequenceParallelActive(par));
}
