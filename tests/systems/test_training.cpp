#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "network/nic_system.hpp"
#include "systems/calibration.hpp"
#include "systems/training_components.hpp"
#include "systems/training_sim.hpp"
#include "tests/systems/training_fixture.hpp"
#include "workloads/compute_model.hpp"

namespace mv {
namespace {

using test::runOne;

double rel(double a, double b) { return std::abs(a - b) / b; }

TEST_CASE("1F1B with near-free communication: iteration and bubble follow the pipeline formula") {
  TrainingExperiment x = test::tinyExperiment(1, 4, 1, 8, 4);
  x.model = test::tinyGpt(16, 2048);
  x.model.seq = 256;
  x.fidelity = NetworkFidelity::kAnalytical;
  // A flat GEMM efficiency keeps the stages' times proportional to their FLOPs.
  x.cluster.compute.gemm = GemmEfficiency{0.7, 1, false};
  const TrainingResult r = runOne(x);
  const IterationTime it = ComputeModel(a100Compute(), x.cluster.compute).iterationTime(x.model, x.training, x.parallelism);
  INFO("simulated " << r.iteration.ps << " ps, formula " << it.total.ps << " ps");
  CHECK(rel(static_cast<double>(r.iteration.ps), static_cast<double>(it.total.ps)) < 0.01);
  CHECK(rel(static_cast<double>(r.bubble.ps), static_cast<double>(it.bubble.ps)) < 0.03);
  const double pipelined = static_cast<double>(r.iteration.ps - it.optimizer.ps);
  CHECK(std::abs(static_cast<double>(r.bubble.ps) / pipelined - 3.0 / 11.0) < 0.02);
  CHECK(r.exposed_dp.ps == 0);
  CHECK(r.mfu > 0.1);
  CHECK(r.mfu < 0.7);
}

TEST_CASE("a pipeline message beyond what one flow carries (16 TiB) is refused when the experiment is built") {
  // 2^24 tokens of 2^20 bf16 values: a 32 TiB message between the two stages, on GPUs
  // given the memory to hold the model and the speed to compute it inside the horizon (a
  // packet's sequence number covers 16 TiB).
  TrainingExperiment x = test::tinyExperiment(1, 2, 1, 2, 1);
  x.model = test::tinyGpt(2, 1u << 20);
  x.model.seq = 1u << 24;
  x.training.flash_attention = true;
  x.fidelity = NetworkFidelity::kAnalytical;
  x.cluster.gpu_overrides.hbm_capacity = Bytes{int64_t{1} << 62};
  x.cluster.gpu_overrides.hbm_bandwidth = BitsPerSecond{int64_t{1} << 62};
  x.cluster.gpu_overrides.bf16_tflops = 1e9;
  REQUIRE(checkTrainingExperiment(x).empty());
  CHECK_THROWS_WITH(runOne(x), Catch::Contains("a pipeline message of 32.0 TiB per rank is more than 16 TiB"));
}

TEST_CASE("an iteration whose compute passes the horizon is refused before any time is summed") {
  // A kernel far beyond the horizon (one layer of 2^24 tokens at hidden 2^20 on an A100:
  // about 10^6 s), and kernels of about 60 µs added up past it (2^20 layers of hidden 1,024,
  // 2^16 micro-batches: about 10^7 s, beyond int64 picoseconds).
  TrainingExperiment huge = test::tinyExperiment(1, 1, 1, 1, 1);
  huge.model = test::tinyGpt(1, 1u << 20);
  huge.model.seq = 1u << 24;
  huge.training.flash_attention = true;
  TrainingExperiment many = test::tinyExperiment(1, 1, 1, 1u << 16, 1);
  many.model = test::tinyGpt(1u << 20);
  for (TrainingExperiment* x : {&huge, &many}) {
    x->cluster.gpu_overrides.hbm_capacity = Bytes{int64_t{1} << 62};
    const std::vector<std::string> problems = checkTrainingExperiment(*x);
    INFO(x->model.layers << " layers");
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems.front(), Catch::StartsWith("workload: one iteration's compute and tensor-parallel "
                                                   "communication would take longer than the engine's horizon of "
                                                   "100000 s"));
    CHECK_THROWS_WITH(runOne(*x), Catch::Contains("horizon"));
  }
  // A tensor-parallel all-reduce of 32 TiB (2^24 tokens of 2^20 bf16 values) is refused
  // before the intra-server model is asked for its time.
  TrainingExperiment tp_wide = test::tinyExperiment(2, 1, 1, 1, 2);
  tp_wide.model = test::tinyGpt(1, 1u << 20);
  tp_wide.model.seq = 1u << 24;
  const std::vector<std::string> tp_problems = checkTrainingExperiment(tp_wide);
  REQUIRE(tp_problems.size() == 1);
  CHECK_THAT(tp_problems.front(),
             Catch::StartsWith("workload: a tensor-parallel collective would move 32 TiB per rank"));
  // The memory model holds each part at 1 EiB, so such a shape is out of memory, not a wrap.
  TrainingExperiment wide = huge;
  wide.model.hidden = 1u << 24;
  wide.model.layers = 1u << 20;
  const MemoryBreakdown mb = peakStageMemory(wide);
  CHECK(mb.weights.count == int64_t{1} << 60);
  CHECK(mb.total().count > 0);
  CHECK_FALSE(mb.fits(Bytes{int64_t{1} << 62}));
}

TEST_CASE("the compute bound covers every stage program's compute and the compute model's iteration") {
  // The calibration runs: 1F1B and interleaved, micro-batches of 1 to 16, pp 1 to 64.
  for (const CalibrationRun& run : megatronCalibrationRuns()) {
    const TrainingExperiment& x = run.experiment;
    const ComputeModel cm(computeSpecOf(clusterGpu(x.cluster)), x.cluster.compute, x.operator_times);
    const double bound = cm.iterationComputePs(x.model, x.training, x.parallelism);
    const IterationTime it = cm.iterationTime(x.model, x.training, x.parallelism);
    INFO(x.name);
    CHECK(bound >= static_cast<double>((it.busy + it.bubble).ps));
    CHECK(bound < 2.0 * static_cast<double>(it.total.ps));
    const TrainingProgram program = trainingProgramOf(x);
    for (const StageProgram& stage : program.stages) {
      const Picoseconds optimizer = cm.stageTimes(x.model, x.training, x.parallelism, stage.stage).optimizer;
      CHECK(static_cast<double>(stage.computePs() - optimizer.ps) <= bound);
    }
  }
}

TEST_CASE("host overhead adds once per iteration, data loading once per micro-batch where data is loaded") {
  // One stage, one replica: nothing overlaps the host time.
  TrainingExperiment x = test::tinyExperiment(1, 1, 1, 4, 1);
  x.fidelity = NetworkFidelity::kAnalytical;
  const int64_t base = runOne(x).iteration.ps;
  x.training.host_overhead_ps = 7'000'000;
  CHECK(runOne(x).iteration.ps == base + 7'000'000);
  x.training.host_overhead_ps = 0;
  x.training.data_loading_ps = 3'000'000;
  CHECK(runOne(x).iteration.ps == base + 4 * 3'000'000);
  // Two stages: the first stage's loading delays its forwards and so the whole pipeline by at
  // least one micro-batch's loading; the last stage's loading hides in its wait for
  // activations, so the pipeline pays less than both stages' sum.
  TrainingExperiment y = test::tinyExperiment(1, 2, 1, 4, 1);
  y.fidelity = NetworkFidelity::kAnalytical;
  const int64_t pipe = runOne(y).iteration.ps;
  y.training.data_loading_ps = 3'000'000;
  const int64_t loaded = runOne(y).iteration.ps;
  CHECK(loaded - pipe >= 3'000'000);
  CHECK(loaded - pipe < 2 * 4 * 3'000'000);
}

TEST_CASE("compute jitter: seeded, bounded, and costlier the larger the synchronous group") {
  auto run = [](uint32_t dp, double jitter, uint64_t seed, int threads) {
    TrainingExperiment x = test::tinyExperiment(1, 1, dp, 4, 1);
    x.fidelity = NetworkFidelity::kAnalytical;
    x.cluster.compute_jitter = jitter;
    x.seed = seed;
    return runOne(x, threads);
  };
  for (const uint32_t dp : {1u, 16u}) {
    const TrainingResult plain = run(dp, 0, 1, 2);
    const TrainingResult jit = run(dp, 0.2, 1, 2);
    INFO("dp " << dp << ": " << plain.iteration.ps << " ps plain, " << jit.iteration.ps << " ps with jitter 0.2");
    // Every kernel lies within ±20 % of its time, so the critical rank's compute does too.
    CHECK(rel(static_cast<double>(jit.compute.ps), static_cast<double>(plain.compute.ps)) <= 0.2);
    CHECK(jit.compute != plain.compute);
    // The same seed gives the same run on any thread count; another seed another draw.
    CHECK(run(dp, 0.2, 1, 1).iteration == jit.iteration);
    CHECK(run(dp, 0.2, 2, 2).iteration != jit.iteration);
  }
  // One rank has nothing to wait for: its iteration moves with the mean of its draws (a
  // few per cent at most). Sixteen ranks meet at every DP gradient bucket and wait for the
  // slowest: the iteration grows by more.
  const double alone =
      static_cast<double>(run(1, 0.2, 1, 2).iteration.ps) / static_cast<double>(run(1, 0, 1, 2).iteration.ps);
  const double group =
      static_cast<double>(run(16, 0.2, 1, 2).iteration.ps) / static_cast<double>(run(16, 0, 1, 2).iteration.ps);
  INFO("iteration ratio alone " << alone << ", in a group of 16 " << group);
  CHECK(std::abs(alone - 1) < 0.05);
  CHECK(group > 1.0);
  CHECK(group > alone);
}

TEST_CASE("without DP overlap every gradient bucket waits for the whole backward") {
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 2, 1);
  // About 400 MB of bf16 gradients (ten 40 MiB buckets, about 50 ms of ring all-reduce),
  // and a last backward long enough (sequences of 16,384) to hide most of them.
  x.model = test::tinyGpt(4, 2048);
  x.model.seq = 16384;
  x.training.flash_attention = true;
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingResult overlapped = runOne(x);
  x.parallelism.dp_comm_overlap = false;
  const TrainingResult waiting = runOne(x);
  // The same reduction as one bucket, which cannot start before the backward ends either.
  x.parallelism.dp_comm_overlap = true;
  x.collectives.dp_bucket = mebibytes(1024);
  const TrainingResult one_bucket = runOne(x);
  INFO("exposed DP: overlapped " << overlapped.exposed_dp.ps << ", waiting " << waiting.exposed_dp.ps << ", one bucket "
                                 << one_bucket.exposed_dp.ps << " ps");
  CHECK(waiting.exposed_dp.ps > 2 * overlapped.exposed_dp.ps);
  CHECK(waiting.iteration > overlapped.iteration);
  CHECK(rel(static_cast<double>(waiting.exposed_dp.ps), static_cast<double>(one_bucket.exposed_dp.ps)) < 0.05);
  CHECK(rel(static_cast<double>(waiting.iteration.ps), static_cast<double>(one_bucket.iteration.ps)) < 0.01);
  // ZeRO-2 reduces after every backward: it cannot wait for the last one.
  x.parallelism.dp_comm_overlap = false;
  x.parallelism.zero = Zero::kGradients;
  const std::vector<std::string> problems = checkTrainingExperiment(x);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.front(), Catch::StartsWith("parallelism.dp_comm_overlap: false needs zero 0 or 1"));
}

TEST_CASE("a rank's completions posted while it runs its pass wake it in the next window") {
  // Windows of 100 ps; every communication lasts at least a step latency (here 50 ps), so a
  // completion posted in a window lies at or after its end.
  train::RankStreams st;
  st.wake_self = train::kNever;
  // Window [0, 100): after this rank's pass another rank completes its collective at 150.
  st.postCompletion(150);
  CHECK(st.nextWake() == 150);
  // Window [100, 200): 150 is due, so the rank runs a full pass and takes its completions;
  // it reads done_ps 150 and finishes the collective. While it runs, another rank's send to
  // it arrives (posted at 260): its receive was not yet started, so the pass did not see it.
  REQUIRE(st.nextWake() < 200);
  st.takeCompletions();
  st.postCompletion(260);
  st.wake_self = train::kNever;
  // Window [200, 300): the receive is due at 260 and must not have been lost to the 150
  // the pass consumed.
  CHECK(st.nextWake() == 260);
  // Posts keep the earliest, in any order; a pass takes them all.
  st.postCompletion(240);
  st.postCompletion(270);
  CHECK(st.nextWake() == 240);
  st.takeCompletions();
  CHECK(st.nextWake() == train::kNever);
}

/// Start and end (ps) of the first span called `name` on trace process `pid` (rank + 1) of
/// `r`'s Chrome trace.
std::pair<int64_t, int64_t> tracedSpan(const TrainingResult& r, uint32_t pid, const std::string& name) {
  const nlohmann::json trace = nlohmann::json::parse(r.chrome_trace);
  for (const nlohmann::json& ev : trace.at("traceEvents")) {
    if (ev.at("ph") == "X" && ev.at("pid") == pid && ev.at("name") == name) {
      const int64_t ts = std::llround(ev.at("ts").get<double>() * 1e6);
      return {ts, ts + std::llround(ev.at("dur").get<double>() * 1e6)};
    }
  }
  FAIL("no task " << name << " on rank " << pid);
  return {};
}

/// Duration (ps) of the first span called `name` on trace process `pid`.
int64_t tracedPs(const TrainingResult& r, uint32_t pid, const std::string& name) {
  const auto [start, end] = tracedSpan(r, pid, name);
  return end - start;
}

TEST_CASE("synchronous pipeline messages: two stages and two micro-batches pay one message more") {
  // 1F1B over two stages: the second forward of stage 0 waits for the first one's message,
  // the second backward of stage 1 for the first one's, and the pipeline's last message
  // arrives one message time c later than when sends overlap compute (the schedule worked
  // through with stage times f0, b0, f1, b1: the overlapped iteration ends at f0 + 2c +
  // 2(f1 + b1) + b0, the synchronous one at f0 + 3c + 2(f1 + b1) + b0).
  TrainingExperiment x = test::tinyExperiment(1, 2, 1, 2, 1);
  x.fidelity = NetworkFidelity::kAnalytical;
  x.training.host_overhead_ps = 0;
  x.training.data_loading_ps = 0;
  SimulationOptions o;
  o.trace = true;
  auto run = [&]() { return simulateTraining(std::vector<TrainingExperiment>{x}, o).front(); };
  const TrainingResult overlapped = run();
  x.parallelism.pp_comm_overlap = false;
  const TrainingResult synchronous = run();
  const int64_t c = tracedPs(overlapped, 1, "send fwd mb0 chunk0");
  CHECK(tracedPs(overlapped, 2, "send bwd mb0 chunk0") == c);
  INFO("message " << c << " ps; overlapped " << overlapped.iteration.ps << ", synchronous "
                  << synchronous.iteration.ps);
  CHECK(c > 0);
  CHECK(synchronous.iteration.ps - overlapped.iteration.ps == c);
  // The waits are exposed pipeline communication, not bubble.
  CHECK(synchronous.exposed_pp.ps > overlapped.exposed_pp.ps);
}

TEST_CASE("synchronous pipeline steps load their batch after the step's wait, as Megatron's forward step does") {
  TrainingExperiment x = test::tinyExperiment(1, 2, 1, 2, 1);
  x.fidelity = NetworkFidelity::kAnalytical;
  x.training.host_overhead_ps = 0;
  const int64_t load = 3'000'000;  // 3 µs
  x.training.data_loading_ps = load;
  x.parallelism.pp_comm_overlap = false;
  SimulationOptions o;
  o.trace = true;
  const TrainingResult r = simulateTraining(std::vector<TrainingExperiment>{x}, o).front();
  // Stage 0 (rank 0) loads micro-batch 1 once its first forward's message arrived; the last
  // stage (rank 1) loads micro-batch 0 once that message is in. Each load is the first span
  // of its forward, and lasts the knob's time.
  const auto sent = tracedSpan(r, 1, "send fwd mb0 chunk0");
  const auto load0 = tracedSpan(r, 1, "compute fwd mb1 chunk0");
  CHECK(load0.second - load0.first == load);
  CHECK(load0.first >= sent.second);
  const auto received = tracedSpan(r, 2, "recv fwd mb0 chunk0");
  const auto load1 = tracedSpan(r, 2, "compute fwd mb0 chunk0");
  CHECK(load1.second - load1.first == load);
  CHECK(load1.first >= received.second);
  // Overlapped sends: the load runs while the message is under way.
  x.parallelism.pp_comm_overlap = true;
  const TrainingResult overlapped = simulateTraining(std::vector<TrainingExperiment>{x}, o).front();
  CHECK(tracedSpan(overlapped, 2, "compute fwd mb0 chunk0").first <
        tracedSpan(overlapped, 2, "recv fwd mb0 chunk0").second);
}

TEST_CASE(
    "synchronous interleaved pipeline: a steady step's forward is sent with its backward, and the next step "
    "waits for both") {
  TrainingExperiment x = test::tinyExperiment(1, 4, 1, 8, 1);
  x.parallelism.vpp = 2;
  x.parallelism.schedule = PipelineSchedule::kInterleaved;
  x.parallelism.pp_comm_overlap = false;
  const TrainingProgram program = trainingProgramOf(x);
  size_t paired_sends = 0;
  for (const StageProgram& stage : program.stages) {
    std::vector<std::vector<uint32_t>> preds(stage.tasks.size());
    for (uint32_t t = 0; t < stage.tasks.size(); ++t) {
      const TaskDef& d = stage.tasks[t];
      for (uint32_t k = 0; k < d.succ_count; ++k) preds[stage.succs[d.succ_begin + k]].push_back(t);
    }
    const std::vector<ScheduleItem> order = pipelineOrder(stage.stage, 4, 8, 2);
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      if (!order[i].forward || !order[i + 1].paired) continue;
      // The forward's send follows the backward's last compute task.
      for (uint32_t t = 0; t < stage.tasks.size(); ++t) {
        const TaskDef& d = stage.tasks[t];
        if (d.kind != TaskKind::kSend || !d.forward || d.micro_batch != order[i].micro_batch ||
            d.chunk != order[i].chunk) {
          continue;
        }
        REQUIRE(preds[t].size() == 1);
        const TaskDef& before = stage.tasks[preds[t].front()];
        CHECK(before.kind == TaskKind::kCompute);
        CHECK_FALSE(before.forward);
        CHECK(before.micro_batch == order[i + 1].micro_batch);
        // The next step's first compute task waits for it.
        bool gates = false;
        for (uint32_t k = 0; k < d.succ_count; ++k) {
          gates = gates || stage.tasks[stage.succs[d.succ_begin + k]].kind == TaskKind::kCompute;
        }
        CHECK(gates == (i + 2 < order.size()));
        ++paired_sends;
      }
    }
  }
  CHECK(paired_sends > 0);
  // Waiting costs time, the same at 1 and 2 threads.
  x.parallelism.pp_comm_overlap = true;
  const TrainingResult overlapped = runOne(x);
  x.parallelism.pp_comm_overlap = false;
  const TrainingResult synchronous = runOne(x);
  CHECK(synchronous.iteration > overlapped.iteration);
  CHECK(runOne(x, 1).iteration == synchronous.iteration);
}

TEST_CASE("ring all-reduce over the packet network takes 2(n-1)/n S/B plus its latency terms") {
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 1, 1);
  x.model = test::tinyGpt(4, 512);
  x.collectives.dp_bucket = mebibytes(1024);  // one bucket: the whole all-reduce is exposed
  const TrainingResult r = runOne(x);
  const double params = parameterCount(x.model);
  const double s_bytes = params * 4;  // a bf16 model's gradients, reduced in fp32 (grad_reduce: auto)
  const double n = 4;
  // Each link of the ring carries one flow's data and the next flow's ACKs (one per packet).
  const double wire =
      static_cast<double>(net::dataWireBytes(x.network.payload_bytes, x.network.cc) + net::kAckBytes) /
      x.network.payload_bytes;
  const double transfer_ps = 2 * (n - 1) / n * s_bytes * wire * 8 / 100e9 * 1e12;
  const double latency_ps = 2 * (n - 1) * (2e6 + 4e6);  // step latency + round trip per step
  INFO("exposed DP " << r.exposed_dp.ps << " ps, formula " << transfer_ps + latency_ps << " ps");
  CHECK(rel(static_cast<double>(r.exposed_dp.ps), transfer_ps + latency_ps) < 0.03);
  CHECK(r.network.drops == 0);
  CHECK(r.network.flows_done > 0);
}

/// Column `name` of CSV `text` (header line first) as numbers, one per row.
std::vector<double> csvColumn(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::istringstream h(line);
  for (std::string cell; std::getline(h, cell, ',');) header.push_back(cell);
  const auto at = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  REQUIRE(at < header.size());
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string cell;
    for (size_t c = 0; c <= at; ++c) std::getline(row, cell, ',');
    out.push_back(std::stod(cell));
  }
  return out;
}

TEST_CASE("a packet-level run records its links, queues and flows, and recording changes nothing") {
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 1, 1);
  x.model = test::tinyGpt(4, 512);
  x.collectives.dp_bucket = mebibytes(1024);
  const TrainingResult plain = runOne(x);
  CHECK(plain.links_csv.empty());
  CHECK(plain.queues_csv.empty());
  SimulationOptions o;
  o.threads = 2;
  o.network_detail = true;
  double link_bytes = -1;
  // A bin of several steps, and one of a fraction of a step (several bins close per step).
  for (const int64_t bin : {int64_t{3'000'000}, int64_t{250'000}}) {
    x.network.link_bin_ps = bin;
    const TrainingResult r = simulateTraining(std::vector<TrainingExperiment>{x}, o).front();
    INFO("link_bin " << bin << " ps");
    REQUIRE(r.error.empty());
    CHECK(r.iteration.ps == plain.iteration.ps);
    const std::vector<double> links = csvColumn(r.links_csv, "link");
    const std::vector<double> starts = csvColumn(r.links_csv, "bin_start_ps");
    const std::vector<double> bytes = csvColumn(r.links_csv, "bytes");
    const std::vector<double> use = csvColumn(r.links_csv, "utilisation");
    REQUIRE(!bytes.empty());
    std::set<std::pair<double, double>> bins;
    for (size_t i = 0; i < links.size(); ++i) {
      CHECK(std::fmod(starts[i], static_cast<double>(bin)) == 0);
      CHECK(starts[i] < static_cast<double>(r.iteration.ps));
      CHECK(bins.insert({links[i], starts[i]}).second);  // each bin of each link once
    }
    // The ring keeps its links near line rate (a bin counts the packets that started in it).
    CHECK(*std::max_element(use.begin(), use.end()) > 0.9);
    CHECK(*std::max_element(use.begin(), use.end()) < 1.2);
    // On a star every byte crosses a NIC's uplink and one switch port's downlink: the links
    // carry twice what the switch ports sent (their own counters, queues.csv).
    const double total = std::accumulate(bytes.begin(), bytes.end(), 0.0);
    const std::vector<double> sent = csvColumn(r.queues_csv, "tx_bytes");
    CHECK(sent.size() == 4);
    CHECK(total == 2 * std::accumulate(sent.begin(), sent.end(), 0.0));
    if (link_bytes >= 0) CHECK(total == link_bytes);
    link_bytes = total;
    for (double u : csvColumn(r.queues_csv, "utilisation")) CHECK(u > 0.05);
    // A row per finished flow, none faster than alone in the idle network, in start order.
    const std::vector<double> fct = csvColumn(r.flows_csv, "fct_ps");
    const std::vector<double> ideal = csvColumn(r.flows_csv, "ideal_fct_ps");
    const std::vector<double> start = csvColumn(r.flows_csv, "start_ps");
    CHECK(static_cast<int64_t>(fct.size()) == r.network.flows_done);
    CHECK(std::is_sorted(start.begin(), start.end()));
    for (size_t i = 0; i < fct.size(); ++i) CHECK(fct[i] >= ideal[i]);
    CHECK(static_cast<size_t>(std::count(r.fct_txt.begin(), r.fct_txt.end(), '\n')) == fct.size());
  }
  // At flow level the same flows are logged (no queues: no packets).
  x.network.link_bin_ps = 0;
  x.fidelity = NetworkFidelity::kFlow;
  const TrainingResult fluid = simulateTraining(std::vector<TrainingExperiment>{x}, o).front();
  CHECK(fluid.queues_csv.empty());
  CHECK(static_cast<int64_t>(csvColumn(fluid.flows_csv, "fct_ps").size()) == fluid.network.flows_done);
  CHECK(fluid.network.flows_done > 0);
  x.network.link_bin_ps = 250'000;
  // Recorded at packet level only.
  x.fidelity = NetworkFidelity::kFlow;
  CHECK_THROWS_WITH(runOne(x), Catch::Contains("network.link_bin: links are recorded at packet fidelity only"));
}

TEST_CASE("a ring over 512 ranks (more than 2^18 transfers) runs generated, at the alpha-beta time") {
  // 2·511·512 = 523,264 transfers per chunk of one all-reduce: refused before rings were
  // generated. A member's share, under 2 MiB and above NCCL's 32 KiB slice floor, is one loop
  // of two slices: 1,046,528 transfers.
  TrainingExperiment x = test::tinyExperiment(1, 1, 512, 1, 1);
  x.model = test::tinyGpt(4, 512);
  x.collectives.dp_bucket = mebibytes(1024);  // one bucket: the whole all-reduce is exposed
  x.fidelity = NetworkFidelity::kFlow;
  const TrainingResult flow = runOne(x);
  REQUIRE(flow.error.empty());
  CHECK(flow.network.flows_done == 2 * 2 * 511 * 512);
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingResult alpha_beta = runOne(x);
  INFO("exposed DP: flow level " << flow.exposed_dp.ps << " ps, alpha-beta " << alpha_beta.exposed_dp.ps << " ps");
  CHECK(rel(static_cast<double>(flow.exposed_dp.ps), static_cast<double>(alpha_beta.exposed_dp.ps)) < 0.05);
}

TEST_CASE("training results do not depend on the thread count, the step or the batch") {
  TrainingExperiment packet = test::tinyExperiment(2, 2, 2, 4, 2);
  packet.model = test::tinyGpt(8, 512);
  packet.collectives.dp_bucket = mebibytes(8);
  TrainingExperiment dcqcn = packet;
  dcqcn.network.cc = net::CcKind::kDcqcn;
  dcqcn.id = 8;
  TrainingExperiment analytical = packet;
  analytical.fidelity = NetworkFidelity::kAnalytical;
  analytical.id = 9;
  const TrainingResult one = runOne(packet, 1);
  const TrainingResult two = runOne(packet, 2);
  CHECK(one.iteration.ps == two.iteration.ps);
  const TrainingResult half = runOne(packet, 2, nanoseconds(500));
  CHECK(half.iteration.ps == one.iteration.ps);
  CHECK(half.exposed_dp.ps == one.exposed_dp.ps);
  CHECK(half.network.packet_hops == one.network.packet_hops);
  CHECK(one.exposed_pp.ps == two.exposed_pp.ps);
  CHECK(one.network.packet_hops == two.network.packet_hops);
  TrainingExperiment flow = packet;
  flow.fidelity = NetworkFidelity::kFlow;
  flow.id = 10;
  const std::vector<TrainingExperiment> batch{packet, dcqcn, analytical, flow};
  SimulationOptions o;
  o.threads = 2;
  const std::vector<TrainingResult> mixed = simulateTraining(batch, o);
  CHECK(mixed[0].iteration.ps == one.iteration.ps);
  CHECK(mixed[1].iteration.ps == runOne(dcqcn).iteration.ps);
  CHECK(mixed[2].iteration.ps == runOne(analytical).iteration.ps);
  CHECK(mixed[3].iteration.ps == runOne(flow).iteration.ps);
  CHECK(mixed[3].network.flows_done == one.network.flows_done);  // the same flows, counted at both levels
  CHECK(one.network.flows_done > 0);
  CHECK(mixed[3].iteration.ps == runOne(flow, 1, nanoseconds(500)).iteration.ps);
  CHECK(rel(static_cast<double>(mixed[3].iteration.ps), static_cast<double>(one.iteration.ps)) < 0.05);
  // The fidelities agree on an uncongested job.
  INFO("packet: iteration " << one.iteration.ps << " compute " << one.compute.ps << " tp " << one.exposed_tp.ps
                            << " pp " << one.exposed_pp.ps << " dp " << one.exposed_dp.ps << " bubble " << one.bubble.ps);
  INFO("analytical: iteration " << mixed[2].iteration.ps << " compute " << mixed[2].compute.ps << " pp "
                                << mixed[2].exposed_pp.ps << " dp " << mixed[2].exposed_dp.ps << " bubble "
                                << mixed[2].bubble.ps);
  CHECK(rel(static_cast<double>(mixed[2].iteration.ps), static_cast<double>(one.iteration.ps)) < 0.05);
  CHECK(one.exposed_pp.ps > 0);
  CHECK(one.exposed_dp.ps > 0);
}

TEST_CASE("an experiment that cannot fit is reported OOM and not simulated") {
  TrainingExperiment big = test::tinyExperiment(1, 1, 8, 1, 8);
  big.model = modelByName("gpt3-175b");
  big.training.global_batch = 8;
  const TrainingResult r = runOne(big);
  CHECK(r.oom);
  CHECK(r.iteration.ps == 0);
  CHECK(r.peak_memory.total().count > int64_t{80} * 1000 * 1000 * 1000);
  const TrainingResult small = runOne(test::tinyExperiment(1, 1, 2, 2, 2));
  CHECK_FALSE(small.oom);
  CHECK(small.iteration.ps > 0);
}

TEST_CASE("invalid experiments are refused with the key at fault") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.topology = makeStar(2);
  auto problems = checkTrainingExperiment(x);
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().rfind("topology:", 0) == 0);
  x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.parallelism.tp = 4;
  x.cluster.gpus = 16;
  problems = checkTrainingExperiment(x);
  REQUIRE_FALSE(problems.empty());
  x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.collectives.channels = kMaxRingChannels + 1;
  problems = checkTrainingExperiment(x);
  REQUIRE(problems.size() == 1);
  CHECK(problems.front().rfind("collectives.channels:", 0) == 0);
}

TEST_CASE("auto channels: one per GPU of the group on a server, one ring where the group does not split by server") {
  // DP 4 over 2 servers of 2 GPUs: auto is 2 channels, so twice the flows in flight of one.
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 1, 2);
  x.fidelity = NetworkFidelity::kFlow;
  auto flows = [&](uint32_t channels) {
    x.collectives.channels = channels;
    return measureFootprint(x).flows_per_step;
  };
  const int64_t one = flows(1);
  CHECK(flows(0) > one);
  CHECK(flows(0) == flows(2));
  // PP 2 × DP 6 on servers of 4: stage 0's group is 4 + 2 GPUs, stage 1's 2 + 4, not whole
  // servers of equal share, so auto is the one ring.
  x = test::tinyExperiment(1, 2, 6, 2, 4);
  x.fidelity = NetworkFidelity::kFlow;
  REQUIRE(checkTrainingExperiment(x).empty());
  CHECK(flows(0) == flows(1));
  CHECK(flows(4) > flows(1));
}

}  // namespace
}  // namespace mv

namespace mv {
namespace {

/// Adds `x` to `batch` under a new id; it must pass the experiment check.
void addChecked(std::vector<TrainingExperiment>& batch, TrainingExperiment& x) {
  x.id += 1;
  REQUIRE(checkTrainingExperiment(x).empty());
  batch.push_back(x);
}

/// Simulates `batch` on 2 threads; every experiment must run without error.
std::vector<TrainingResult> runBatch(const std::vector<TrainingExperiment>& batch) {
  SimulationOptions o;
  o.threads = 2;
  std::vector<TrainingResult> r = simulateTraining(batch, o);
  for (const TrainingResult& t : r) CHECK(t.error.empty());
  return r;
}

TEST_CASE("every all-reduce algorithm runs at packet level; hierarchical wins when GPUs share a NIC") {
  // 8 data-parallel GPUs, 4 per server behind one NIC: two servers.
  TrainingExperiment x = test::tinyExperiment(1, 1, 8, 1, 4);
  x.model = test::tinyGpt(4, 256);
  x.collectives.dp_bucket = mebibytes(1024);
  std::vector<TrainingExperiment> batch;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                                CollectiveAlgorithm::kHalvingDoubling, CollectiveAlgorithm::kHierarchical}) {
    x.collectives.all_reduce = a;
    addChecked(batch, x);
  }
  const std::vector<TrainingResult> r = runBatch(batch);
  for (const TrainingResult& t : r) CHECK(t.exposed_dp.ps > 0);
  // Ring (4 channels, all through the server's one NIC): 14 steps of S/8, the two
  // server-crossing hops each carrying one of them per step: 14/8 S/B at the NIC. Hierarchical: 4 rails × 2 steps × S/8
  // through each NIC = S/B.
  const double ring = static_cast<double>(r[0].exposed_dp.ps);
  const double hier = static_cast<double>(r[3].exposed_dp.ps);
  INFO("ring " << ring << " ps, hierarchical " << hier << " ps");
  CHECK(hier < 0.7 * ring);
  CHECK(hier > 0.45 * ring);
}

TEST_CASE("the ring's channels leave each server on every NIC, at packet level as in the α-β time") {
  // 8 data-parallel GPUs, 4 per server, each with its own NIC.
  TrainingExperiment x = test::tinyExperiment(1, 1, 8, 1, 4);
  x.model = test::tinyGpt(4, 512);
  x.cluster.nics_per_server = 4;
  x.topology = makeStar(8);
  x.collectives.dp_bucket = mebibytes(1024);
  std::vector<TrainingExperiment> batch;
  for (NetworkFidelity f : {NetworkFidelity::kPacket, NetworkFidelity::kAnalytical}) {
    for (uint32_t channels : {1u, 0u}) {  // one ring; auto: one per GPU of a server
      x.fidelity = f;
      x.collectives.channels = channels;
      addChecked(batch, x);
    }
  }
  const std::vector<TrainingResult> r = runBatch(batch);
  const double one = static_cast<double>(r[0].exposed_dp.ps);
  const double four = static_cast<double>(r[1].exposed_dp.ps);
  const double one_ab = static_cast<double>(r[2].exposed_dp.ps);
  const double four_ab = static_cast<double>(r[3].exposed_dp.ps);
  INFO("packet: 1 channel " << one << " ps, 4 channels " << four << " ps; α-β: " << one_ab << ", " << four_ab);
  // One ring: 14 steps of S/8 through each server's exit NIC; four channels: a quarter of
  // that through each of its four NICs, the same 14 step latencies.
  CHECK(four < 0.45 * one);
  CHECK(four > 0.25 * one);
  CHECK(four_ab == Approx(four).epsilon(0.15));
  CHECK(one_ab == Approx(one).epsilon(0.15));
}

}  // namespace
}  // namespace mv

#include <filesystem>
#include <map>

#include "analytical/gpu.hpp"
#include "tests/support/temp_dir.hpp"
#include "workloads/chakra_program.hpp"

namespace mv {
namespace {

TEST_CASE("Chakra traces written by the project and read back give the same iteration") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 512);
  x.parallelism.zero = mv::Zero::kOptimizer;
  x.collectives.dp_bucket = mebibytes(4);
  ProgramOptions po;
  po.dp_bucket = x.collectives.dp_bucket;
  po.tp_model = makeCollectiveModel(gpuByName(x.cluster.gpu), x.cluster.intra);
  const TrainingProgram program =
      buildTrainingProgram(x.model, x.training, x.parallelism, ComputeModel(a100Compute()), po);
  const test::TempDir tmp;
  const std::filesystem::path dir = tmp.path("");
  const std::vector<ChakraTrace> traces = programToChakra(program, x.parallelism);
  REQUIRE(traces.size() == 8);
  for (size_t r = 0; r < traces.size(); ++r) {
    writeChakraFile(dir / ("job." + std::to_string(r) + (r % 2 == 0 ? ".et" : ".json")), traces[r]);
  }
  TrainingExperiment replay = x;
  replay.chakra = (dir / "job").string();
  replay.id = 99;
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    replay.fidelity = f;
    const TrainingResult a = runOne(x);
    const TrainingResult b = runOne(replay);
    CHECK(a.iteration.ps == b.iteration.ps);
    CHECK(a.exposed_dp.ps == b.exposed_dp.ps);
    CHECK(a.exposed_pp.ps == b.exposed_pp.ps);
  }
  // A rank whose program differs from its stage's is refused.
  std::vector<ChakraTrace> broken = traces;
  broken[1].nodes.pop_back();
  CHECK_THROWS_AS(programFromChakra(broken, x.parallelism), WorkloadError);
  // Every rank of stage 1 (ranks 4-7) waits for a message nobody sends: refused, naming it.
  std::vector<ChakraTrace> orphan = traces;
  for (size_t r = 4; r < 8; ++r) {
    ChakraNode n;
    n.id = 1'000'000;
    n.type = ChakraNodeType::kCommRecv;
    n.setCommSrc(static_cast<uint32_t>(r - 4));  // its TP and DP position in stage 0
    n.setCommTag(424242);
    n.setCommSize(64);
    orphan[r].nodes.push_back(n);
  }
  CHECK_THROWS_WITH(programFromChakra(orphan, x.parallelism),
                    "rank 4: node 1000000: receives from rank 0 with tag 424242, but no send of that rank matches it");
  // A rank whose send goes to another position than its stage's first rank's does: refused,
  // naming the rank and the node.
  std::vector<ChakraTrace> crossed = traces;
  for (ChakraNode& n : crossed[1].nodes) {
    if (n.type == ChakraNodeType::kCommSend) n.setCommDst(*n.commDst() + 1);
  }
  CHECK_THROWS_WITH(programFromChakra(crossed, x.parallelism),
                    Catch::StartsWith("rank 1: node ") && Catch::Contains("differs from rank 0"));
  // Stage 0's first send waits for its last receive (a backward that needs that send's
  // forward): a deadlock across ranks, refused through the send.
  std::vector<ChakraTrace> looped = traces;
  uint64_t send = 0;
  uint64_t last_recv = 0;
  for (const ChakraNode& n : looped[0].nodes) {
    if (n.type == ChakraNodeType::kCommSend && send == 0) send = n.id;
    if (n.type == ChakraNodeType::kCommRecv) last_recv = n.id;
  }
  REQUIRE(send < last_recv);
  for (size_t r = 0; r < 4; ++r) {
    for (ChakraNode& n : looped[r].nodes) {
      if (n.id == send) n.data_deps.push_back(last_recv);
    }
  }
  CHECK_THROWS_WITH(programFromChakra(looped, x.parallelism),
                    Catch::Contains("rank 0: node ") && Catch::Contains("deadlock across ranks"));
}

}  // namespace
}  // namespace mv

namespace mv {
namespace {

TEST_CASE("a Chrome trace has one complete event per task of every rank, within the iteration") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 512);
  SimulationOptions o;
  o.threads = 2;
  o.trace = true;
  const std::vector<TrainingExperiment> one{x};
  const TrainingResult r = simulateTraining(one, o).front();
  const TrainingFootprint f = measureFootprint(x);
  size_t events = 0;
  for (size_t at = r.chrome_trace.find("\"ph\":\"X\""); at != std::string::npos;
       at = r.chrome_trace.find("\"ph\":\"X\"", at + 1)) {
    ++events;
  }
  CHECK(events == static_cast<size_t>(f.rank_tasks));
  CHECK(r.chrome_trace.find("\"name\":\"compute fwd mb0 chunk0\"") != std::string::npos);
  // Valid JSON; one named process per rank, none with pid 0 (Perfetto's idle process); every
  // task says what it computed or moved.
  const nlohmann::json trace = nlohmann::json::parse(r.chrome_trace);
  size_t processes = 0;
  size_t with_args = 0;
  for (const nlohmann::json& ev : trace.at("traceEvents")) {
    CHECK(ev.at("pid").get<int>() >= 1);
    if (ev.at("name") == "process_name") {
      ++processes;
      CHECK(ev.at("args").at("name").get<std::string>().rfind("rank ", 0) == 0);
    }
    if (ev.at("ph") == "X") {
      const nlohmann::json& args = ev.at("args");
      with_args += args.contains("compute_us") || args.at("bytes").get<int64_t>() > 0 ? 1 : 0;
    }
  }
  CHECK(processes == static_cast<size_t>(x.cluster.gpus));
  CHECK(with_args == events);
  // An arrow per pipeline message: from a "pp send" slice at its start to a "pp recv" slice of
  // the rank of the same TP and DP position in the other stage, inside that slice, later.
  std::map<int64_t, nlohmann::json> starts;
  std::map<int64_t, nlohmann::json> ends;
  for (const nlohmann::json& ev : trace.at("traceEvents")) {
    if (ev.at("ph") == "s") starts[ev.at("id").get<int64_t>()] = ev;
    if (ev.at("ph") == "f") ends[ev.at("id").get<int64_t>()] = ev;
  }
  // 4 micro-batches cross the one stage boundary each way on each of the 4 TP·DP positions.
  CHECK(starts.size() == 2u * 4u * 4u);
  REQUIRE(ends.size() == starts.size());
  auto enclosing = [&](const nlohmann::json& at) {
    int found = 0;
    for (const nlohmann::json& ev : trace.at("traceEvents")) {
      if (ev.at("ph") != "X" || ev.at("pid") != at.at("pid") || ev.at("tid") != at.at("tid")) continue;
      const double ts = ev.at("ts").get<double>();
      const double t = at.at("ts").get<double>();
      found += t >= ts && t <= ts + ev.at("dur").get<double>() ? 1 : 0;
    }
    return found;
  };
  for (const auto& [id, s] : starts) {
    const nlohmann::json& end = ends.at(id);
    CHECK(s.at("tid") == 1);    // pp send
    CHECK(end.at("tid") == 2);  // pp recv
    const int from = s.at("pid").get<int>() - 1;
    const int to = end.at("pid").get<int>() - 1;
    CHECK(from % 4 == to % 4);  // same TP and DP position (tp 2 × dp 2 ranks per stage)
    CHECK(from / 4 != to / 4);
    CHECK(end.at("ts").get<double>() > s.at("ts").get<double>());
    CHECK(enclosing(s) == 1);
    CHECK(enclosing(end) == 1);
  }
  // Tracing does not change the result.
  SimulationOptions plain = o;
  plain.trace = false;
  CHECK(simulateTraining(one, plain).front().iteration.ps == r.iteration.ps);
}

}  // namespace
}  // namespace mv

namespace mv {
namespace {

TEST_CASE("compute overlapping a DP collective is slowed by the overlap factor, and nothing else is") {
  // DP inside one server (fast NVLink collectives, so compute stays on the critical path);
  // many buckets, so early reductions overlap the rest of the last backward.
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, 4, 4);
  x.model = test::tinyGpt(8, 512);
  x.collectives.dp_bucket = mebibytes(1);
  x.fidelity = NetworkFidelity::kAnalytical;
  x.training.grad_reduce = GradReduce::kParam;  // bf16 gradients: the reductions stay short
  x.cluster.overlap_slowdown = 1;
  const TrainingResult off = runOne(x);
  x.cluster.overlap_slowdown = 2;
  const TrainingResult on = runOne(x);
  const int64_t extra = on.compute.ps - off.compute.ps;
  const StageTimes st = ComputeModel(a100Compute()).stageTimes(x.model, x.training, x.parallelism, 0);
  INFO("extra compute " << extra << " ps, last backward " << st.backward.ps << " ps");
  CHECK(extra > 0);
  CHECK(extra < st.backward.ps);  // only pieces of the last micro-batch's backward overlap DP
  CHECK(on.iteration.ps > off.iteration.ps);
  x.cluster.overlap_slowdown = 0;  // the A100 default, ×1.15
  const TrainingResult dflt = runOne(x);
  CHECK(dflt.compute.ps > off.compute.ps);
  CHECK(dflt.compute.ps < on.compute.ps);
}

TEST_CASE("a run stopped by a time limit counts only finished tasks: its breakdown adds up") {
  TrainingExperiment x = test::tinyExperiment(2, 1, 4, 4, 2);
  x.parallelism.zero = Zero::kParameters;
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingResult full = runOne(x);
  SimulationOptions o;
  o.threads = 2;
  o.time_limit = Picoseconds{full.iteration.ps / 2};
  const std::vector<TrainingExperiment> one{x};
  const TrainingResult cut = simulateTraining(one, o).front();
  CHECK(cut.bubble.ps >= 0);
  CHECK(cut.compute.ps + cut.exposed_tp.ps <= o.time_limit.ps);
  CHECK(cut.compute.ps < full.compute.ps);
}

TEST_CASE("a compute task is slowed only while the DP stream communicates, at every fidelity") {
  // ZeRO-3 over 4 servers, TP 2 inside each: every layer's compute overlaps gathers and
  // reduce-scatters for part of its time. With factor f = 2 a task's kernels advance at half
  // speed while a DP collective runs, and its TP collectives, which follow its kernels, not
  // at all: each task takes its kernel and TP time plus half the wall time its kernel part
  // overlapped DP communication (within the trace's 1 ns rounding per event).
  TrainingExperiment x = test::tinyExperiment(2, 1, 4, 2, 2);
  x.model = test::tinyGpt(4, 1024);
  x.parallelism.zero = Zero::kParameters;
  x.cluster.overlap_slowdown = 2;
  SimulationOptions o;
  o.threads = 2;
  o.trace = true;
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    const std::vector<TrainingExperiment> one{x};
    const TrainingResult r = simulateTraining(one, o).front();
    REQUIRE(r.error.empty());
    const nlohmann::json trace = nlohmann::json::parse(r.chrome_trace);
    std::map<int, std::vector<std::pair<double, double>>> dp;  // per rank: DP collectives' [start, end) in µs
    for (const nlohmann::json& ev : trace.at("traceEvents")) {
      if (ev.at("ph") != "X" || ev.at("tid") != int{kDpStream}) continue;
      const double ts = ev.at("ts").get<double>();
      dp[ev.at("pid").get<int>()].emplace_back(ts, ts + ev.at("dur").get<double>());
    }
    int slowed = 0;
    int tasks = 0;
    for (const nlohmann::json& ev : trace.at("traceEvents")) {
      if (ev.at("ph") != "X" || ev.at("tid") != int{kComputeStream} || !ev.at("args").contains("compute_us")) continue;
      const double ts = ev.at("ts").get<double>();
      const double tp = ev.at("args").at("tp_us").get<double>();
      const double end = ts + ev.at("dur").get<double>() - tp;  // the kernels' end; TP follows
      double overlap = 0;
      for (auto [a, b] : dp[ev.at("pid").get<int>()]) overlap += std::max(0.0, std::min(b, end) - std::max(a, ts));
      const double alone = ev.at("args").at("compute_us").get<double>() + tp;
      INFO("fidelity " << static_cast<int>(f) << ", " << ev.at("name") << " at " << ts << " us");
      CHECK(ev.at("dur").get<double>() - alone == Approx(overlap / 2).margin(0.005));
      slowed += overlap > 0 && overlap < ev.at("dur").get<double>() ? 1 : 0;
      tasks += 1;
    }
    CHECK(tasks == 8 * 2 * 2 * 4 + 8);  // 8 ranks × 2 micro-batches × 2 passes × 4 layers, + optimizer steps
    CHECK(slowed > 0);                  // some tasks overlap communication for part of their time
  }
}

}  // namespace
}  // namespace mv

namespace mv {
namespace {

TEST_CASE("a MoE job runs end to end with expert-DP groups, identically at 1 and 2 threads") {
  TrainingExperiment x = test::tinyExperiment(1, 2, 4, 4, 4);
  x.model.experts = 4;
  x.model.top_k = 2;
  x.parallelism.ep = 2;
  x.parallelism.zero = mv::Zero::kOptimizer;
  x.collectives.dp_bucket = mebibytes(4);
  REQUIRE(checkTrainingExperiment(x).empty());
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    const TrainingResult one = runOne(x, 1);
    const TrainingResult two = runOne(x, 2);
    INFO("fidelity " << static_cast<int>(f));
    CHECK(one.error.empty());
    CHECK(one.iteration.ps > 0);
    CHECK(one.exposed_ep.ps > 0);
    CHECK(one.iteration.ps == two.iteration.ps);
    CHECK(one.exposed_dp.ps == two.exposed_dp.ps);
  }
}

TEST_CASE("a measured operator time replaces the roofline's") {
  TrainingExperiment x = test::tinyExperiment(1, 1, 1, 2, 1);
  x.fidelity = NetworkFidelity::kAnalytical;
  x.operator_times["optimizer"] = milliseconds(3);
  const TrainingResult a = runOne(x);
  x.operator_times["optimizer"] = milliseconds(5);
  const TrainingResult b = runOne(x);
  // The optimizer step ends the iteration: 2 ms more optimizer, 2 ms more iteration.
  CHECK(b.iteration.ps - a.iteration.ps == milliseconds(2).ps);
  x.operator_times["qkv"] = milliseconds(1);
  const TrainingResult c = runOne(x);
  // 4 layers × 2 micro-batches × (1 forward + 2 backward (the default factor)) qkv kernels of 1 ms.
  const ComputeModel roofline(a100Compute());
  const Operator qkv = layerOperators(x.model, x.training, x.parallelism)[1];
  REQUIRE(qkv.name == "qkv");
  const int64_t before = roofline.forwardTime(qkv, x.training.precision).ps + roofline.backwardTime(qkv, x.training.precision).ps;
  CHECK(c.compute.ps - b.compute.ps == 4 * 2 * (3 * milliseconds(1).ps - before));
}

TEST_CASE("an experiment whose packet storage runs out starts again with more and gives the same results") {
  TrainingExperiment roomy = test::tinyExperiment(2, 2, 2, 4, 2);
  roomy.model = test::tinyGpt(8, 512);
  roomy.collectives.dp_bucket = mebibytes(8);
  TrainingExperiment tight = roomy;
  tight.id = 1;
  tight.network.switch_pool_slots = 1;  // far too small: doubled until the run fits
  tight.network.link_ring_factor = 1;
  SimulationOptions o;
  o.threads = 2;
  const std::vector<TrainingExperiment> batch{roomy, tight};
  std::vector<uint32_t> reported(2, 0);
  const std::vector<TrainingResult> r =
      simulateTraining(batch, o, [&](size_t i, const TrainingResult& res) { reported[i] = res.storage_retries + 1; });
  CHECK(r[1].storage_retries >= 2);
  CHECK(r[0].storage_retries == r[1].storage_retries);  // its batch stopped too: it ran again, as it was
  CHECK(reported[1] == r[1].storage_retries + 1);  // the callback saw the final result
  CHECK(r[1].iteration.ps == r[0].iteration.ps);
  CHECK(r[1].exposed_dp.ps == r[0].exposed_dp.ps);
  CHECK(r[1].network.packet_hops == r[0].network.packet_hops);
  CHECK(r[1].network.ecn_marks == r[0].network.ecn_marks);
}

}  // namespace
}  // namespace mv

namespace mv {
namespace {

TEST_CASE("counting the task states and packet pools gives the bytes that building them holds") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 512);
  const auto [fidelity, cc, trace] = GENERATE(table<NetworkFidelity, net::CcKind, bool>({
      {NetworkFidelity::kAnalytical, net::CcKind::kDcqcn, false},
      {NetworkFidelity::kFlow, net::CcKind::kDcqcn, true},
      {NetworkFidelity::kPacket, net::CcKind::kDcqcn, false},
      {NetworkFidelity::kPacket, net::CcKind::kHpcc, true},
  }));
  x.fidelity = fidelity;
  x.network.cc = cc;
  SimulationOptions o;
  o.trace = trace;
  const TrainingFootprint counted = measureFootprint(x, o, FootprintMethod::kCount);
  const TrainingFootprint built = measureFootprint(x, o, FootprintMethod::kBuild);
  INFO("fidelity " << static_cast<int>(fidelity) << ", trace " << trace);
  CHECK(counted.rank_tasks == built.rank_tasks);
  CHECK(counted.rank_tasks >= 8 * 4 * 2);  // 8 ranks, each at least a forward and a backward per micro-batch
  CHECK(counted.flows_per_step == built.flows_per_step);
  CHECK(counted.rank_bytes == built.rank_bytes);
  CHECK(counted.network_bytes == built.network_bytes);
  CHECK(counted.run_bytes == built.run_bytes);
  CHECK(counted.total_bytes == built.total_bytes);
  // The counted parts are most of the bytes of a packet-level experiment.
  if (fidelity == NetworkFidelity::kPacket) CHECK(built.network_bytes > built.total_bytes / 2);
}

TEST_CASE("the structure bytes follow the cluster and the parallelism, not the experiment's other knobs") {
  TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 512);
  x.fidelity = NetworkFidelity::kPacket;
  const TrainingFootprint base = measureFootprint(x);
  CHECK(base.structure_bytes > base.program_bytes);  // routing and collective members too
  CHECK(base.structure_bytes < base.total_bytes / 4);
  TrainingExperiment other = x;  // another seed, congestion control and micro-batch count
  other.seed = 7;
  other.network.cc = net::CcKind::kHpcc;
  other.training.global_batch *= 2;
  const TrainingFootprint same = measureFootprint(other);
  CHECK(same.structure_bytes == base.structure_bytes + (same.program_bytes - base.program_bytes));
  TrainingExperiment wider = test::tinyExperiment(2, 2, 4, 4, 2);  // twice the replicas: more members, routes
  wider.model = x.model;
  wider.fidelity = x.fidelity;
  CHECK(measureFootprint(wider).structure_bytes > base.structure_bytes);
}

TEST_CASE("ZeRO-2 and ZeRO-3 run at every fidelity: more DP traffic, less memory, the same at 1 and 2 threads") {
  // One stage, 4 replicas on 4 servers behind 10 Gb/s links: the DP collectives are the
  // iteration. A reduce-scatter or all-gather of all gradients takes about the same time T
  // (a ring moves (n-1)/n of the bytes either way), so the DP stream is busy about 2T with
  // ZeRO-1 (one of each), (m + 1)T with ZeRO-2 (a reduce-scatter per micro-batch) and 3mT
  // with ZeRO-3 (per micro-batch: gathers for both passes and a reduce-scatter).
  const uint32_t m = 4;
  TrainingExperiment x = test::tinyExperiment(1, 1, 4, m, 1);
  x.model = test::tinyGpt(4, 1024);
  x.topology = makeStar(4, gigabitsPerSecond(10));
  x.collectives.dp_bucket = mebibytes(25);  // about a layer, ZeRO-3's bucket
  x.training.grad_reduce = GradReduce::kParam;  // gradients as large as the parameters gathered
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kFlow, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    std::vector<TrainingResult> r;
    for (Zero zero : {Zero::kNone, Zero::kOptimizer, Zero::kGradients, Zero::kParameters}) {
      x.parallelism.zero = zero;
      REQUIRE(checkTrainingExperiment(x).empty());
      r.push_back(runOne(x, 1));
      INFO("fidelity " << static_cast<int>(f) << ", zero " << static_cast<int>(zero));
      CHECK(r.back().error.empty());
      const TrainingResult two = runOne(x, 2);
      CHECK(two.iteration.ps == r.back().iteration.ps);
      CHECK(two.exposed_dp.ps == r.back().exposed_dp.ps);
    }
    INFO("fidelity " << static_cast<int>(f));
    const double t = static_cast<double>(r[1].iteration.ps) / 2;
    CHECK(rel(static_cast<double>(r[2].iteration.ps), (m + 1) * t) < 0.1);
    CHECK(rel(static_cast<double>(r[3].iteration.ps), 3 * m * t) < 0.1);
    // Each stage shards more: weights, then gradients, then parameters.
    for (size_t z = 1; z < r.size(); ++z) CHECK(r[z].peak_memory.total() < r[z - 1].peak_memory.total());
  }
}

}  // namespace
}  // namespace mv
