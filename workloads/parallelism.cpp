/**
 * @file parallelism.cpp
 * Enum names, derived counts and the Megatron-LM validation rules.
 */
#include "workloads/parallelism.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace mv {

namespace {

template <class E, size_t N>
E parseEnum(std::string_view name, const std::array<std::pair<std::string_view, E>, N>& table, const char* what) {
  for (const auto& [n, v] : table) {
    if (n == name) return v;
  }
  std::string msg = "unknown ";
  msg.append(what).append(" '").append(name).append("'; valid:");
  for (const auto& entry : table) msg.append(" ").append(entry.first);
  throw WorkloadError(msg);
}

constexpr std::array<std::pair<std::string_view, TrainingPrecision>, 4> kPrecisions = {{
    {"bf16", TrainingPrecision::kBf16},
    {"fp16", TrainingPrecision::kFp16},
    {"fp8", TrainingPrecision::kFp8},
    {"fp32", TrainingPrecision::kFp32},
}};
constexpr std::array<std::pair<std::string_view, Recompute>, 3> kRecomputes = {{
    {"none", Recompute::kNone},
    {"selective", Recompute::kSelective},
    {"full", Recompute::kFull},
}};
constexpr std::array<std::pair<std::string_view, PipelineSchedule>, 2> kSchedules = {{
    {"1f1b", PipelineSchedule::k1F1B},
    {"interleaved", PipelineSchedule::kInterleaved},
}};

template <class E, size_t N>
std::string_view nameOf(E value, const std::array<std::pair<std::string_view, E>, N>& table) {
  for (const auto& [n, v] : table) {
    if (v == value) return n;
  }
  return "?";
}

std::string num(uint64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string_view toString(TrainingPrecision p) {
  return nameOf(p, kPrecisions);
}
std::string_view toString(Recompute r) {
  return nameOf(r, kRecomputes);
}
std::string_view toString(PipelineSchedule s) {
  return nameOf(s, kSchedules);
}
TrainingPrecision parseTrainingPrecision(std::string_view name) {
  return parseEnum(name, kPrecisions, "precision");
}
Recompute parseRecompute(std::string_view name) {
  return parseEnum(name, kRecomputes, "recompute mode");
}
PipelineSchedule parseSchedule(std::string_view name) {
  return parseEnum(name, kSchedules, "pipeline schedule");
}

uint32_t activationBytes(TrainingPrecision p) {
  return p == TrainingPrecision::kFp32 ? 4 : 2;
}

uint32_t gradReduceBytes(TrainingPrecision p, GradReduce g) {
  constexpr uint32_t kFp32Bytes = 4;
  switch (g) {
    case GradReduce::kFp32:
      return kFp32Bytes;
    case GradReduce::kParam:
      return activationBytes(p);
    case GradReduce::kAuto:
      break;
  }
  // Megatron-LM: "bfloat16 requires gradient accumulation and all-reduce to be done in
  // fp32"; fp8 training keeps bf16 parameters.
  return p == TrainingPrecision::kFp16 ? activationBytes(p) : kFp32Bytes;
}

uint32_t sequenceLength(const ModelSpec& model, const TrainingConfig& config) {
  return config.seq != 0 ? config.seq : model.seq;
}

uint32_t localSequence(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) {
  return sequenceLength(model, config) / std::max<uint32_t>(par.cp, 1);
}

double boundaryActivationBytes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par) {
  return static_cast<double>(config.micro_batch) * localSequence(model, config, par) * model.hidden *
         activationBytes(config.precision);
}

uint32_t dataParallelRanks(const Parallelism& par) {
  return par.dp * std::max<uint32_t>(par.cp, 1);
}

uint32_t gpuCount(const Parallelism& par) {
  return par.tp * par.cp * par.pp * par.dp;
}

uint32_t microBatchCount(const TrainingConfig& config, const Parallelism& par) {
  const uint64_t per_pipeline = static_cast<uint64_t>(config.micro_batch) * par.dp;
  return per_pipeline == 0 ? 0 : static_cast<uint32_t>(config.global_batch / per_pipeline);
}

bool sequenceParallelActive(const Parallelism& par) {
  return par.sequence_parallel && par.tp > 1;
}

std::vector<ConfigProblem> validateParallelism(const ModelSpec& model, const TrainingConfig& config,
                                               const Parallelism& par, uint32_t gpus) {
  std::vector<ConfigProblem> problems;
  auto add = [&](std::string key, std::string message) { problems.push_back({std::move(key), std::move(message)}); };

  for (auto& m : validateModel(model)) add("workload.model", std::move(m));
  const std::pair<const char*, uint32_t> sizes[] = {{"parallelism.tp", par.tp}, {"parallelism.cp", par.cp},
                                                    {"parallelism.pp", par.pp}, {"parallelism.dp", par.dp},
                                                    {"parallelism.ep", par.ep}, {"parallelism.vpp", par.vpp}};
  for (const auto& [key, v] : sizes) {
    if (v == 0) add(key, "must be >= 1");
  }
  if (config.global_batch == 0) add("workload.global_batch", "must be >= 1");
  if (config.micro_batch == 0) add("workload.micro_batch", "must be >= 1");
  if (sequenceLength(model, config) == 0) add("workload.seq", "must be >= 1 (the model gives no default)");
  if (!problems.empty()) return problems;  // the rules below divide by these

  const uint32_t seq = sequenceLength(model, config);
  const uint64_t product = static_cast<uint64_t>(par.tp) * par.cp * par.pp * par.dp;
  if (product != gpus) {
    // cp is named only when it is used.
    const std::string cp = par.cp > 1 ? "cp*" : "";
    const std::string cp_size = par.cp > 1 ? num(par.cp) + "*" : "";
    add("parallelism", "tp*" + cp + "pp*dp = " + num(par.tp) + "*" + cp_size + num(par.pp) + "*" + num(par.dp) + " = " +
                           num(product) + " but the cluster has " + num(gpus) + " GPUs; choose dp = gpus/(tp*" + cp +
                           "pp)");
  }
  if (model.heads % par.tp != 0) {
    add("parallelism.tp", "heads (" + num(model.heads) + ") must be divisible by tp (" + num(par.tp) + ")");
  }
  if (model.isGqa() && model.kv_heads % par.tp != 0) {
    add("parallelism.tp", "kv_heads (" + num(model.kv_heads) + ") must be divisible by tp (" + num(par.tp) +
                              "): Megatron splits the query groups over the TP ranks");
  }
  if (model.ffn % par.tp != 0) {
    add("parallelism.tp", "ffn (" + num(model.ffn) + ") must be divisible by tp (" + num(par.tp) + ")");
  }
  if (sequenceParallelActive(par) && seq % par.tp != 0) {
    add("parallelism.sp", "sequence parallelism needs seq (" + num(seq) + ") divisible by tp (" + num(par.tp) + ")");
  }
  if (par.cp > 1) {
    if (!config.flash_attention) {
      add("parallelism.cp",
          "context parallelism needs workload.flash_attention: true (Megatron-core runs ring "
          "attention inside Transformer Engine's fused attention kernel)");
    }
    const uint64_t split = uint64_t{2} * par.cp * (sequenceParallelActive(par) ? par.tp : 1);
    if (seq % split != 0) {
      add("parallelism.cp", "seq (" + num(seq) + ") must be divisible by " +
                                (sequenceParallelActive(par) ? "2*cp*tp (" : "2*cp (") + num(split) +
                                "): each context-parallel rank takes two of 2*cp chunks" +
                                (sequenceParallelActive(par) ? ", split again over tp by sequence parallelism" : ""));
    }
  }
  const uint64_t chunks = static_cast<uint64_t>(par.pp) * par.vpp;
  if (model.layers % chunks != 0) {
    add("parallelism.pp", "layers (" + num(model.layers) + ") must be divisible by pp*vpp (" + num(par.pp) + "*" +
                              num(par.vpp) + " = " + num(chunks) + ") so every model chunk has the same layers");
  } else if (par.offload_layers >= model.layers / chunks) {
    add("parallelism.offload_layers",
        "offload_layers (" + num(par.offload_layers) + ") must be less than the layers of a model chunk (" +
            num(model.layers / chunks) + "): the backward of a layer kept on the GPU hides the first reload");
  }
  const uint64_t per_step = static_cast<uint64_t>(config.micro_batch) * par.dp;
  if (config.global_batch % per_step != 0) {
    add("workload.global_batch", "global_batch (" + num(config.global_batch) +
                                     ") must be divisible by micro_batch*dp (" + num(config.micro_batch) + "*" +
                                     num(par.dp) + " = " + num(per_step) + ")");
  }
  const uint32_t m = microBatchCount(config, par);
  if (par.schedule == PipelineSchedule::kInterleaved) {
    if (par.vpp < 2) add("parallelism.vpp", "the interleaved schedule needs vpp >= 2 model chunks per GPU");
    if (par.pp < 2) add("parallelism.pp", "the interleaved schedule needs pp >= 2");
    if (par.pp > 1 && m % par.pp != 0) {
      add("workload.global_batch",
          "the interleaved schedule needs the micro-batch count (global_batch/(micro_batch*dp) = " + num(m) +
              ") divisible by pp (" + num(par.pp) + ")");
    }
  } else if (par.vpp > 1) {
    add("parallelism.vpp", "vpp = " + num(par.vpp) + " needs schedule: interleaved (1f1b runs one chunk per GPU)");
  }
  if (!par.dp_comm_overlap && par.zero >= Zero::kGradients) {
    add("parallelism.dp_comm_overlap", "false needs zero 0 or 1 (ZeRO-2 and -3 reduce gradients after every backward)");
  }
  if (model.isMoe()) {
    if (model.experts % par.ep != 0) {
      add("parallelism.ep", "experts (" + num(model.experts) + ") must be divisible by ep (" + num(par.ep) + ")");
    }
    if (dataParallelRanks(par) % par.ep != 0) {
      add("parallelism.ep", "ep (" + num(par.ep) + ") must divide " + (par.cp > 1 ? "dp*cp (" : "dp (") +
                                num(dataParallelRanks(par)) +
                                "): the expert-parallel group is part of the data-parallel group");
    }
  } else if (par.ep > 1) {
    add("parallelism.ep", "ep = " + num(par.ep) + " but the model is dense (experts = 1); use ep: 1");
  }
  return problems;
}

std::string formatProblems(const std::vector<ConfigProblem>& problems) {
  std::string text;
  for (const auto& p : problems) text += p.key + ": " + p.message + "\n";
  return text;
}

}  // namespace mv
