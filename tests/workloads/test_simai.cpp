// SimAI/AICB workload files (workloads/simai.hpp, docs/simai.md).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "analytical/gpu.hpp"
#include "workloads/simai.hpp"

namespace mv {
namespace {

using Catch::Matchers::Contains;

std::string errorOf(const std::string& text) {
  try {
    parseSimaiWorkload(text, "w.txt");
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "<no WorkloadError thrown>";
}

constexpr const char* kHeader =
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 2 ga: 1 all_gpus: 4 "
    "checkpoints: 0 checkpoint_initiates: 0 pp_comm 0\n";

// Two layers on TP 2 x DP 2: forward all-gather / reduce-scatter pairs, input-gradient
// communication, a DP all-reduce of each layer's gradients, and one expert all-to-all.
const std::string kFile =
    std::string(kHeader) +
    "3\n"
    "embedding\t-1\t1000\tALLREDUCE\t1024\t2000\tNONE\t0\t3000\tALLREDUCE\t65536\t100\n"
    "attention\t-1\t5000\tALLGATHER\t1048576\t6000\tREDUCESCATTER\t1048576\t7000\tALLREDUCE\t"
    "8388608\t100\n"
    "mlp\t-1\t4000\tALLTOALL_EP\t262144\t8000\tNONE\t0\t9000\tREDUCESCATTER_DP_EP\t4194304\t100\n";

TEST_CASE("a SimAI workload file: header, layer lines, communication groups", "[workloads][simai]") {
  const SimaiWorkload w = parseSimaiWorkload(kFile, "w.txt");
  CHECK(w.tp == 2);
  CHECK(w.gpus == 4);
  CHECK(w.vpp == 2);
  REQUIRE(w.layers.size() == 3);
  CHECK(w.layers[0].name == "embedding");
  CHECK(w.layers[0].line == 3);
  CHECK(w.layers[1].forward_ns == 5000);
  CHECK(w.layers[1].forward.op == CollectiveOp::kAllGather);
  CHECK(w.layers[1].forward.group == SimaiGroup::kTp);
  CHECK(w.layers[1].weight_grad.group == SimaiGroup::kDp);
  CHECK(w.layers[1].weight_grad.bytes == 8388608);
  CHECK(w.layers[2].forward.group == SimaiGroup::kEp);
  CHECK(w.layers[2].forward.op == CollectiveOp::kAllToAll);
  CHECK(w.layers[2].weight_grad.group == SimaiGroup::kExpertDp);
  CHECK(w.layers[0].input_grad.none);
  CHECK(w.layers[2].update_ns == 100);
}

TEST_CASE("the program runs forward in file order, then each line's gradients in reverse", "[workloads][simai]") {
  const GpuSpec gpu = gpuByName("h100");
  const CollectiveModel tp_model = makeCollectiveModel(gpu);
  const double factor = 1.25;
  const TrainingProgram p = programFromSimai(parseSimaiWorkload(kFile, "w.txt"), tp_model, factor);
  REQUIRE(p.stages.size() == 1);
  const std::vector<TaskDef>& t = p.stages[0].tasks;
  // Forward: 3 compute tasks and the EP all-to-all after mlp; backward per line: input
  // gradient, weight gradient, its DP collective.
  REQUIRE(t.size() == 4 + 3 * 3 + 1);
  auto tp = [&](CollectiveOp op, int64_t bytes) {
    return std::llround(static_cast<double>(collectiveTime(tp_model, op, 2, Bytes{bytes}).ps) / factor);
  };
  CHECK(t[0].compute_ps == 1'000'000);
  // Forward communication is at least 4 KiB, as in SimAI.
  CHECK(t[0].tp_ps == tp(CollectiveOp::kAllReduce, 4096));
  CHECK(t[1].tp_ps == tp(CollectiveOp::kAllGather, 1048576));
  CHECK(t[3].kind == TaskKind::kCollective);
  CHECK(t[3].comm == CommKind::kEp);
  CHECK(t[3].stream == kComputeStream);
  // Backward starts with the last line: mlp's input gradient, weight gradient, then its
  // expert-DP reduce-scatter on the collective stream, waiting for the weight gradient.
  CHECK(t[4].compute_ps == 8'000'000);
  CHECK(t[5].compute_ps == 9'000'000);
  CHECK(t[6].comm == CommKind::kExpertDp);
  CHECK(t[6].op == CollectiveOp::kReduceScatter);
  CHECK(t[6].stream == kDpStream);
  CHECK(t[5].succ_count == 1);
  CHECK(p.stages[0].succs[t[5].succ_begin] == 6);
  CHECK(t[7].compute_ps == 6'000'000);
  CHECK(t[7].tp_ps == tp(CollectiveOp::kReduceScatter, 1048576));
  CHECK(t[9].comm == CommKind::kDp);
  CHECK(t[9].bytes == 8388608);
  CHECK(t[12].seq == 1);  // embedding's all-reduce: the second DP collective
  CHECK(p.stages[0].dp_collectives == 2);
  // The closing task waits for the three weight-gradient collectives.
  CHECK(t[13].compute_ps == 0);
  CHECK(t[13].dep_count == 3);
}

TEST_CASE("SimAI workload errors name the file and line", "[workloads][simai]") {
  CHECK(errorOf("") == "w.txt:1: empty file (expected the header line)");
  CHECK_THAT(errorOf("MICROBENCHMARK\n1\n"), Contains("w.txt:1: parallelism policy 'MICROBENCHMARK' is not"));
  CHECK(errorOf("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 0\n1\n") ==
        "w.txt:1: model_parallel_NPU_group: 0 is out of range [1, 1048576]");
  CHECK(errorOf("HYBRID_TRANSFORMER_FWD_IN_BCKWD tp: 2\n1\n") == "w.txt:1: unknown header key 'tp'");
  CHECK(errorOf("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 3 all_gpus: 4\n1\n") ==
        "w.txt:1: all_gpus 4 is not a multiple of model_parallel_NPU_group 3");
  CHECK(errorOf(std::string(kHeader)) == "w.txt:2: missing the number of layer lines");
  CHECK(errorOf(std::string(kHeader) + "2\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\n") ==
        "w.txt:3: 11 fields; a layer line has 12: name, -1, forward time, type, size, input-gradient time, type, "
        "size, weight-gradient time, type, size, update time");
  CHECK(errorOf(std::string(kHeader) + "1\nx\t-1\t1\tBROADCAST\t8\t1\tNONE\t0\t1\tNONE\t0\t0\n") ==
        "w.txt:3: forward communication type 'BROADCAST' is not NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or "
        "ALLTOALL (optionally _EP or _DP_EP)");
  CHECK(errorOf(std::string(kHeader) + "1\nx\t-1\t-5\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t0\n") ==
        "w.txt:3: forward compute time: -5 is out of range [0, 1000000000000]");
  CHECK(errorOf(std::string(kHeader) + "1\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t1e6\t0\n") ==
        "w.txt:3: weight-gradient communication size: '1e6' is not a whole number");
  CHECK(errorOf(std::string(kHeader) + "2\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t0\n") ==
        "w.txt:2: announces 2 layer lines; the file has 1");
  CHECK(errorOf(std::string(kHeader) + "1\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t0\ny\n") ==
        "w.txt:4: more layer lines than the 1 line 2 announces");
  const GpuSpec gpu = gpuByName("h100");
  const CollectiveModel tp_model = makeCollectiveModel(gpu);
  const std::string pp2 =
      "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 pp: 2 all_gpus: 2\n1\n"
      "x\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t0\n";
  CHECK_THROWS_WITH(programFromSimai(parseSimaiWorkload(pp2, "w.txt"), tp_model, 1),
                    "w.txt:1: pp 2: SimAI's pipeline stages are not imported (files with pp: 1)");
  CHECK_THAT(errorOf("HYBRID_TRANSFORMER_FWD_IN_BCKWD all_gpus: 2\n1\n"),
             Contains("w.txt:2: announces 1 layer lines; the file has 0"));
  const std::string tp16 =
      "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 16 all_gpus: 16\n1\n"
      "x\t-1\t1\tALLREDUCE\t4096\t1\tNONE\t0\t1\tNONE\t0\t0\n";
  CHECK_THROWS_WITH(programFromSimai(parseSimaiWorkload(tp16, "w.txt"), tp_model, 1),
                    "w.txt:1: model_parallel_NPU_group 16: tensor parallelism must stay inside a server of at most 8 "
                    "GPUs");
}

}  // namespace
}  // namespace mv
