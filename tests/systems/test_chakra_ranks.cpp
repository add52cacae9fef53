// Per-rank programs from general Chakra traces (docs/chakra.md "Per-rank programs").
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "systems/training_sim.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/systems/training_fixture.hpp"
#include "workloads/chakra_program.hpp"

namespace mv {
namespace {

TrainingResult runOne(const TrainingExperiment& x) {
  SimulationOptions o;
  o.threads = 2;
  const std::vector<TrainingExperiment> one{x};
  return simulateTraining(one, o).front();
}

ChakraNode compute(uint64_t id, uint64_t micros, std::vector<uint64_t> deps = {}) {
  ChakraNode n;
  n.id = id;
  n.name = "gemm";
  n.type = ChakraNodeType::kComp;
  n.duration_micros = micros;
  n.data_deps = std::move(deps);
  return n;
}

ChakraNode collective(uint64_t id, ChakraCollectiveType type, uint64_t bytes, const std::string& group,
                      std::vector<uint64_t> deps = {}) {
  ChakraNode n;
  n.id = id;
  n.name = "coll";
  n.type = ChakraNodeType::kCommColl;
  n.setCommType(type);
  n.setCommSize(bytes);
  if (!group.empty()) n.setPgName(group);
  n.data_deps = std::move(deps);
  return n;
}

ChakraNode message(uint64_t id, ChakraNodeType type, uint32_t peer, uint32_t tag, uint64_t bytes,
                   std::vector<uint64_t> deps = {}) {
  ChakraNode n;
  n.id = id;
  n.name = type == ChakraNodeType::kCommSend ? "send" : "recv";
  n.type = type;
  if (type == ChakraNodeType::kCommSend) {
    n.setCommDst(peer);
  } else {
    n.setCommSrc(peer);
  }
  n.setCommTag(tag);
  n.setCommSize(bytes);
  n.data_deps = std::move(deps);
  return n;
}

std::vector<ChakraTrace> job(std::vector<std::vector<ChakraNode>> ranks) {
  std::vector<ChakraTrace> out;
  for (size_t r = 0; r < ranks.size(); ++r) {
    ChakraTrace t;
    t.source = "job." + std::to_string(r) + ".et";
    t.nodes = std::move(ranks[r]);
    out.push_back(std::move(t));
  }
  return out;
}

/// Writes `traces` as `<dir>/job.<r>.et` and returns the prefix.
std::string writeJob(const std::filesystem::path& dir, const std::vector<ChakraTrace>& traces) {
  for (size_t r = 0; r < traces.size(); ++r) writeChakraFile(dir / ("job." + std::to_string(r) + ".et"), traces[r]);
  return (dir / "job").string();
}

const ComputeModel& a100() {
  static const ComputeModel model(a100Compute());
  return model;
}

/// Runs x's generated program and its Chakra traces as per-rank programs, each of its groups
/// a communicator of its own (nameCommunicators, in a group file): the same iteration at
/// every fidelity, and the same exposed DP time when `dp_only` (EP waits count as DP then).
void checkPerRankReplay(TrainingExperiment x, bool dp_only) {
  std::vector<ChakraTrace> traces = programToChakra(trainingProgramOf(x), x.parallelism);
  const CommGroups groups = nameCommunicators(traces, x.parallelism);
  const test::TempDir tmp;
  TrainingExperiment replay = x;
  replay.id = 99;
  replay.simai.clear();
  replay.chakra = writeJob(tmp.path(""), traces);
  replay.chakra_groups = tmp.path("groups.json").string();
  writeCommGroups(replay.chakra_groups, groups);
  CHECK(readCommGroups(replay.chakra_groups, x.cluster.gpus) == groups);
  REQUIRE(trainingProgramOf(replay).per_rank);
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kFlow, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    replay.fidelity = f;
    const TrainingResult a = runOne(x);
    const TrainingResult b = runOne(replay);
    INFO("fidelity " << static_cast<int>(f));
    CHECK(b.error.empty());
    CHECK(b.iteration.ps == a.iteration.ps);
    CHECK(b.exposed_pp.ps == a.exposed_pp.ps);
    if (dp_only) CHECK(b.exposed_dp.ps == a.exposed_dp.ps);
  }
}

TEST_CASE("Megatron traces run as per-rank programs give the stage programs' iteration") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 512);
  x.parallelism.zero = Zero::kOptimizer;
  x.collectives.dp_bucket = mebibytes(4);
  std::vector<ChakraTrace> traces = programToChakra(trainingProgramOf(x), x.parallelism);
  // Each DP group (stage, TP index) becomes a communicator of its own, in ring order.
  CHECK(nameCommunicators(traces, x.parallelism) ==
        CommGroups{{"dp.0.0", {0, 2}}, {"dp.0.1", {1, 3}}, {"dp.1.0", {4, 6}}, {"dp.1.1", {5, 7}}});
  checkPerRankReplay(x, true);
}

TEST_CASE("a MoE job's EP and expert-DP groups run as communicators of their own") {
  TrainingExperiment x = test::tinyExperiment(1, 2, 4, 4, 2);
  x.model.experts = 4;
  x.model.top_k = 2;
  x.parallelism.ep = 2;
  x.parallelism.zero = Zero::kOptimizer;
  x.collectives.dp_bucket = mebibytes(4);
  std::vector<ChakraTrace> traces = programToChakra(trainingProgramOf(x), x.parallelism);
  const CommGroups groups = nameCommunicators(traces, x.parallelism);
  CHECK(groups.at("ep.0.0.1") == std::vector<uint32_t>{2, 3});
  CHECK(groups.at("expert_dp.1.0.1") == std::vector<uint32_t>{5, 7});
  CHECK(groups.at("dp.1.0") == std::vector<uint32_t>{4, 5, 6, 7});
  checkPerRankReplay(x, false);
}

TEST_CASE("a SimAI workload runs as its loop orders it, and as per-rank Chakra traces gives the same iteration") {
  const test::TempDir tmp;
  // One GPU, no communication: the iteration is the sum of the compute times.
  std::ofstream(tmp.path("one.txt")) << "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: 1 "
                                        "vpp: 1 ga: 1 all_gpus: 1 checkpoints: 0 checkpoint_initiates: 0 pp_comm 0\n"
                                        "2\n"
                                        "a\t-1\t1000\tNONE\t0\t2000\tNONE\t0\t3000\tNONE\t0\t100\n"
                                        "b\t-1\t4000\tNONE\t0\t5000\tNONE\t0\t6000\tNONE\t0\t100\n";
  TrainingExperiment one = test::tinyExperiment(1, 1, 1, 1, 1);
  one.simai = tmp.path("one.txt").string();
  CHECK(runOne(one).iteration.ps == 21'000'000);
  // TP 2 x DP 2 on two servers: TP folded into compute, DP all-reduces over the network.
  std::ofstream(tmp.path("four.txt"))
      << "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 2 ga: 2 all_gpus: 4 "
         "checkpoints: 0 checkpoint_initiates: 0 pp_comm 0\n4\n"
         "attention\t-1\t50000\tALLGATHER\t1048576\t60000\tREDUCESCATTER\t1048576\t70000\tALLREDUCE\t8388608\t100\n"
         "mlp\t-1\t40000\tALLREDUCE\t1048576\t80000\tALLREDUCE\t1048576\t90000\tALLREDUCE\t16777216\t100\n"
         "attention\t-1\t50000\tALLGATHER\t1048576\t60000\tREDUCESCATTER\t1048576\t70000\tNONE\t0\t100\n"
         "mlp\t-1\t40000\tALLREDUCE\t1048576\t80000\tALLREDUCE\t1048576\t90000\tNONE\t0\t100\n";
  TrainingExperiment x = test::tinyExperiment(2, 1, 2, 2, 2);
  x.simai = tmp.path("four.txt").string();
  const TrainingProgram p = trainingProgramOf(x);
  int64_t compute = 0;
  for (const TaskDef& t : p.stages[0].tasks) compute += t.compute_ps + t.tp_ps;
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingResult r = runOne(x);
  // The DP all-reduces overlap the remaining backward; the next iteration waits for the last
  // ones (issued after the first two lines' weight gradients): exposed DP time.
  CHECK(r.iteration.ps > compute);
  CHECK(r.exposed_dp.ps > 0);
  checkPerRankReplay(x, true);
}

TEST_CASE("a per-rank collective its algorithm cannot run is refused before it is built, at every fidelity") {
  const auto ar = ChakraCollectiveType::kAllReduce;
  // Three ranks as three stages of the traced job, so its parallelism has no DP group to check.
  TrainingExperiment x = test::tinyExperiment(1, 3, 1, 1, 1);
  x.collectives.all_reduce = CollectiveAlgorithm::kHalvingDoubling;
  const test::TempDir tmp;
  x.chakra = writeJob(
      tmp.path(""),
      job({{collective(1, ar, 1 << 20, "")}, {collective(1, ar, 1 << 20, "")}, {collective(1, ar, 1 << 20, "")}}));
  x.chakra_layout = ChakraLayout::kRanks;
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kFlow, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    CHECK_THROWS_WITH(runOne(x),
                      "collectives: halving_doubling cannot run all_reduce over 3 ranks, 1 on the first "
                      "one's server");
  }
}

TEST_CASE("per-rank compute: durations, the roofline of num_ops and tensor_size, host ops left out") {
  const ComputeModel& gpu = a100();
  ChakraNode cpu = compute(2, 5'000'000, {1});  // a host op of 5 s: takes no time
  cpu.setAttribute(
      ChakraAttribute{std::string(chakra_attr::kIsCpuOp), "", ChakraValueKind::kBool, false, {1}, {}, {}, {}});
  ChakraNode roofline = compute(3, 0, {2});  // waits for the host op, so for node 1
  roofline.setAttribute(ChakraAttribute{
      std::string(chakra_attr::kNumOps), "", ChakraValueKind::kInt64, false, {int64_t{1} << 40}, {}, {}, {}});
  roofline.setAttribute(ChakraAttribute{
      std::string(chakra_attr::kTensorSize), "", ChakraValueKind::kUint64, false, {}, {uint64_t{1} << 20}, {}, {}});
  ChakraNode meta = compute(4, 0, {3});
  meta.type = ChakraNodeType::kMetadata;
  const std::vector<ChakraTrace> traces = job({{compute(1, 100), cpu, roofline, meta, compute(5, 7, {4})}});
  const TrainingProgram p = programFromRankTraces(traces, {}, gpu, TrainingPrecision::kBf16);
  REQUIRE(p.per_rank);
  REQUIRE(p.stages.size() == 1);
  const std::vector<TaskDef>& t = p.stages[0].tasks;
  REQUIRE(t.size() == 3);
  CHECK(t[0].compute_ps == 100'000'000);
  // 2^40 FLOPs at 312 TFLOP/s × the GEMM ceiling, far above 1 MiB at the HBM bandwidth.
  const double seconds = std::ldexp(1.0, 40) / (a100Compute().peak_flops * gpu.params().gemm.ceiling);
  CHECK(t[1].compute_ps == static_cast<int64_t>(std::ceil(seconds * 1e12)) + gpu.params().kernel_overhead.ps);
  CHECK(t[1].compute_ps == gpu.opaqueKernelTime(std::ldexp(1.0, 40), 1 << 20, TrainingPrecision::kBf16).ps);
  CHECK(t[2].compute_ps == 7'000'000);

  // The job on one GPU takes exactly the sum.
  TrainingExperiment x = test::tinyExperiment(1, 1, 1, 1, 1);
  const test::TempDir tmp;
  x.chakra = writeJob(tmp.path(""), traces);
  x.chakra_layout = ChakraLayout::kRanks;
  CHECK(runOne(x).iteration.ps == t[0].compute_ps + t[1].compute_ps + t[2].compute_ps);
}

TEST_CASE("per-rank communicators: members wait for the slowest, other groups do not") {
  // Ranks 0-3, one per server. Communicators a = {0, 1} and b = {2, 3}; rank 3 computes
  // longer, which delays b's all-reduce and nothing of a's.
  const auto ar = ChakraCollectiveType::kAllReduce;
  auto rank = [&](uint64_t micros, const std::string& group) {
    return std::vector<ChakraNode>{compute(1, micros), collective(2, ar, 1 << 20, group, {1}), compute(3, 10, {2})};
  };
  const CommGroups groups{{"a", {0, 1}}, {"b", {2, 3}}};
  const std::vector<ChakraTrace> even = job({rank(100, "a"), rank(100, "a"), rank(100, "b"), rank(100, "b")});
  const std::vector<ChakraTrace> slow = job({rank(100, "a"), rank(100, "a"), rank(100, "b"), rank(400, "b")});
  const TrainingProgram p = programFromRankTraces(slow, groups, a100(), TrainingPrecision::kBf16);
  REQUIRE(p.group_collectives.size() == 2);
  CHECK(p.group_collectives[0].ranks == std::vector<uint32_t>{0, 1});
  CHECK(p.group_collectives[1].ranks == std::vector<uint32_t>{2, 3});

  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 1, 1);
  x.fidelity = NetworkFidelity::kAnalytical;
  const test::TempDir tmp;
  std::filesystem::create_directories(tmp.path("even"));
  std::filesystem::create_directories(tmp.path("slow"));
  { std::ofstream(tmp.path("groups.json")) << R"({"a": [0, 1], "b": [2, 3]})"; }
  x.chakra_groups = tmp.path("groups.json").string();
  x.chakra = writeJob(tmp.path("even"), even);
  const TrainingResult base = runOne(x);
  x.chakra = writeJob(tmp.path("slow"), slow);
  const TrainingResult late = runOne(x);
  CHECK(late.iteration.ps - base.iteration.ps == 300'000'000);
  // A job that ends in its all-reduce: the time after the last kernel is exposed DP
  // communication, as a wait for it would be, not bubble.
  std::filesystem::create_directories(tmp.path("tail"));
  x.chakra = writeJob(tmp.path("tail"), job({{compute(1, 100), collective(2, ar, 1 << 20, "a", {1})},
                                             {compute(1, 100), collective(2, ar, 1 << 20, "a", {1})},
                                             {compute(1, 100), collective(2, ar, 1 << 20, "b", {1})},
                                             {compute(1, 100), collective(2, ar, 1 << 20, "b", {1})}}));
  const TrainingResult tail = runOne(x);
  CHECK(tail.exposed_dp.ps > 0);
  CHECK(tail.exposed_dp.ps == tail.iteration.ps - 100'000'000);
  CHECK(tail.bubble.ps == 0);
  // Without the group file every collective spans every rank: one all-reduce over 4.
  x.chakra_groups.clear();
  x.chakra = writeJob(tmp.path("even"), job({rank(100, "0"), rank(100, "0"), rank(100, "0"), rank(100, "0")}));
  CHECK(runOne(x).iteration.ps > base.iteration.ps);
}

TEST_CASE("per-rank messages between any two ranks, and the errors of per-rank jobs") {
  const auto ar = ChakraCollectiveType::kAllReduce;
  const auto ag = ChakraCollectiveType::kAllGather;
  const CommGroups groups{{"a", {0, 1}}, {"b", {0, 1}}};
  auto programOf = [&](std::vector<std::vector<ChakraNode>> ranks) {
    return programFromRankTraces(job(std::move(ranks)), groups, a100(), TrainingPrecision::kBf16);
  };
  // Rank 0 sends to rank 2 (no pipeline between them), rank 2 answers rank 1.
  const TrainingProgram p = programOf(
      {{compute(1, 5), message(2, ChakraNodeType::kCommSend, 2, 7, 4096, {1})},
       {message(1, ChakraNodeType::kCommRecv, 2, 9, 64)},
       {message(1, ChakraNodeType::kCommRecv, 0, 7, 4096), message(2, ChakraNodeType::kCommSend, 1, 9, 64, {1})}});
  CHECK(p.stages[0].tasks[1].peer_stage == 2);
  CHECK(p.stages[0].tasks[1].peer_task == 0);
  CHECK(p.stages[2].tasks[1].peer_stage == 1);

  CHECK_THROWS_WITH(programOf({{collective(1, ar, 64, "a")}, {collective(1, ar, 64, "a"), collective(2, ar, 64, "a")}}),
                    "job.1.et: 2 collectives of process group 'a', but job.0.et has 1 (the members of a "
                    "communicator run the same collectives in the same order)");
  CHECK_THROWS_WITH(programOf({{collective(1, ar, 64, "a")}, {collective(5, ag, 64, "a")}}),
                    "job.1.et: node 5: collective #0 of process group 'a' is an all-gather of 64 bytes, but "
                    "job.0.et: node 1 is an all-reduce of 64 bytes");
  CHECK_THROWS_WITH(programOf({{collective(1, ar, 64, "c")}, {}}),
                    "job.0.et: node 1: process group 'c' is not among the communicator groups");
  CHECK_THROWS_WITH(programFromRankTraces(job({{}, {}, {collective(3, ar, 64, "a")}}), {{"a", {0, 1}}}, a100(),
                                          TrainingPrecision::kBf16),
                    Catch::StartsWith("job.2.et: node 3: a collective of process group 'a' (ranks 0, 1), which rank "
                                      "2 is not in"));
  // Two communicators over the same ranks, met in opposite orders: a deadlock.
  CHECK_THROWS_WITH(programOf({{collective(1, ar, 64, "a"), collective(2, ar, 64, "b", {1})},
                               {collective(1, ar, 64, "b"), collective(2, ar, 64, "a", {1})}}),
                    Catch::Contains("job.0.et: node 2: can never start") && Catch::Contains("deadlock"));
  CHECK_THROWS_WITH(programOf({{message(1, ChakraNodeType::kCommSend, 5, 0, 64)}, {}}),
                    "job.0.et: node 1: sends to rank 5, but the job has 2 ranks");
  ChakraNode load = compute(1, 1);
  load.type = ChakraNodeType::kMemLoad;
  CHECK_THROWS_WITH(programOf({{load}, {}}), "job.0.et: node 1: node type MEM_LOAD_NODE cannot be simulated");

  // As the PyTorch converter writes them: no peer and no tag, only the process group; the
  // peer is the other member of a two-rank group, and messages match in order.
  auto untagged = [](uint64_t id, ChakraNodeType type, uint64_t bytes, std::vector<uint64_t> deps = {}) {
    ChakraNode n;
    n.id = id;
    n.type = type;
    n.setCommSize(bytes);
    n.setPgName("p2p");
    n.data_deps = std::move(deps);
    return n;
  };
  const CommGroups pairs{{"p2p", {0, 1}}, {"three", {0, 1, 2}}};
  const TrainingProgram pt = programFromRankTraces(
      job({{compute(1, 3), untagged(2, ChakraNodeType::kCommSend, 100, {1}),
            untagged(3, ChakraNodeType::kCommSend, 200, {2})},
           {untagged(1, ChakraNodeType::kCommRecv, 100), untagged(2, ChakraNodeType::kCommRecv, 200, {1})}}),
      pairs, a100(), TrainingPrecision::kBf16);
  CHECK(pt.stages[0].tasks[1].peer_stage == 1);
  CHECK(pt.stages[0].tasks[1].peer_task == 0);
  CHECK(pt.stages[0].tasks[2].peer_task == 1);
  CHECK(pt.stages[1].tasks[1].peer_stage == 0);
  // Matched in order, sizes must agree as for tagged messages.
  CHECK_THROWS_WITH(
      programFromRankTraces(
          job({{untagged(1, ChakraNodeType::kCommSend, 100)}, {untagged(1, ChakraNodeType::kCommRecv, 200)}}), pairs,
          a100(), TrainingPrecision::kBf16),
      "job.0.et: node 1: sends 100 bytes to rank 1, whose matching receive (job.1.et: node 1) expects 200");
  CHECK_THROWS_WITH(programFromRankTraces(job({{untagged(1, ChakraNodeType::kCommSend, 100)}, {}}), pairs, a100(),
                                          TrainingPrecision::kBf16),
                    "job.0.et: node 1: no receive on rank 1 matches its untagged message #0 (matched in order)");
  ChakraNode wide = untagged(1, ChakraNodeType::kCommSend, 100);
  wide.setPgName("three");
  CHECK_THROWS_WITH(programFromRankTraces(job({{wide}, {}, {}}), pairs, a100(), TrainingPrecision::kBf16),
                    "job.0.et: node 1: COMM_SEND_NODE without comm_dst, and its process group 'three' (ranks 0, 1, "
                    "2) is not a pair holding rank 0, so the peer is unknown");

  // A chain of host ops, each also waiting for a kernel of its own: what each stands for
  // stays one task per stream, so the program and its edges grow linearly.
  std::vector<ChakraNode> chain;
  for (uint64_t i = 0; i < 20000; ++i) {
    ChakraNode gpu_op = compute(2 * i + 1, 1);
    ChakraNode host = compute(2 * i + 2, 1, {2 * i + 1});
    if (i > 0) host.data_deps.push_back(2 * i);
    host.setAttribute(
        ChakraAttribute{std::string(chakra_attr::kIsCpuOp), "", ChakraValueKind::kBool, false, {1}, {}, {}, {}});
    chain.push_back(gpu_op);
    chain.push_back(host);
  }
  chain.push_back(collective(50000, ar, 64, "", {39999 + 1}));
  const TrainingProgram chained = programFromRankTraces(job({chain}), {}, a100(), TrainingPrecision::kBf16);
  CHECK(chained.stages[0].tasks.size() == 20001);
  CHECK(chained.stages[0].succs.size() == 1);  // only the collective waits across streams
  // Work so large it would not fit in 64-bit picoseconds is refused, not wrapped.
  ChakraNode huge = compute(1, 0);
  huge.setAttribute(ChakraAttribute{
      std::string(chakra_attr::kTensorSize), "", ChakraValueKind::kUint64, false, {}, {~uint64_t{0}}, {}, {}});
  CHECK_THROWS_WITH(programFromRankTraces(job({{huge}}), {}, a100(), TrainingPrecision::kBf16),
                    "job.0.et: node 1: num_ops and tensor_size take more than 1,000 s");

  // The communicator-group file.
  const test::TempDir tmp;
  auto groupsFrom = [&](const std::string& text) {
    std::ofstream(tmp.path("g.json")) << text;
    return readCommGroups(tmp.path("g.json"), 4);
  };
  CHECK(groupsFrom(R"({"0": [3, 1], "7": [0, 1, 2, 3]})") == CommGroups{{"0", {3, 1}}, {"7", {0, 1, 2, 3}}});
  CHECK_THROWS_WITH(groupsFrom(R"({"0": [0, 4]})"),
                    Catch::EndsWith("g.json: group '0': 4 is not a rank of the job (0 to 3)"));
  CHECK_THROWS_WITH(groupsFrom(R"({"0": [1, 1]})"), Catch::EndsWith("g.json: group '0': rank 1 listed twice"));
  CHECK_THROWS_WITH(groupsFrom(R"({"0": []})"), Catch::EndsWith("group '0': expected a non-empty list of ranks"));
  CHECK_THROWS_WITH(groupsFrom(R"([0, 1])"), Catch::Contains("g.json: expected an object of rank lists"));
  CHECK_THROWS_WITH(groupsFrom(R"({"0": [0,)"), Catch::Contains("g.json: invalid JSON"));
  CHECK_THROWS_WITH(groupsFrom(R"({"0": [[[[0]]]]})"),
                    Catch::EndsWith("group '0': a JSON array is not a rank of the job (0 to 3)"));
}

}  // namespace
}  // namespace mv
