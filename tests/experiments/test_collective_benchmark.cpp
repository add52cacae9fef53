/**
 * @file test_collective_benchmark.cpp
 * `workload.collective` (nccl-tests' benchmarks, docs/sweep.md "Collective benchmarks") and
 * servers with more NICs than GPUs (`cluster.nics_per_server` a multiple of
 * gpus_per_server): what the reader accepts and refuses, and the bus bandwidth a ring
 * reaches against the NICs' goodput computed here from the RoCE frame sizes.
 */
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analytical/nccl_tuner.hpp"

#include "experiments/experiment_yaml.hpp"
#include "experiments/results.hpp"
#include "experiments/sweep.hpp"
#include "systems/training_sim.hpp"

using namespace mv;

namespace {

const std::filesystem::path kData = MV_TEST_DATA_DIR;

/// Reads every experiment of `yaml` (as data/inline.yaml); returns the problems.
Diagnostics readAll(const std::string& yaml, std::vector<TrainingExperiment>* out = nullptr) {
  Diagnostics diags;
  const Sweep s = parseSweep(yaml, kData / "inline.yaml", diags);
  if (diags.empty()) {
    readExperiments(s, diags, [&](TrainingExperiment&& x) {
      if (out) out->push_back(std::move(x));
    });
  }
  return diags;
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has(const Diagnostics& diags, const std::string& key, const std::string& text) {
  for (const Diagnostic& d : diags.items()) {
    if (d.key == key && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

/// An all-reduce of `bytes` over 2 servers of 8 GPUs with `nics` NICs each (100 Gb/s
/// rails), at `fidelity`, `iters` times, with `algorithm`.
std::string benchmark(const std::string& bytes, int nics, const std::string& fidelity, int iters = 1,
                      const std::string& algorithm = "ring") {
  return "base:\n"
         "  workload: {collective: {op: all_reduce, bytes: " + bytes + ", iters: " + std::to_string(iters) + "}}\n"
         "  cluster: {gpu: a100-40gb, gpus: 16, gpus_per_server: 8, nics_per_server: " + std::to_string(nics) + "}\n"
         "  topology: {kind: rail_optimized, servers: 2, nics_per_server: " + std::to_string(nics) +
         ", link_rate: 100Gbps}\n"
         "  network: {fidelity: " + fidelity + "}\n"
         "  collectives: {all_reduce: " + algorithm + ", qps_per_connection: 4}\n";
}

TrainingResult runYaml(const std::string& yaml, bool trace = false) {
  std::vector<TrainingExperiment> xs;
  const Diagnostics diags = readAll(yaml, &xs);
  INFO(diags.format());
  REQUIRE(diags.empty());
  REQUIRE(xs.size() == 1);
  SimulationOptions o;
  o.threads = 2;
  o.trace = trace;
  const TrainingResult r = simulateTraining(xs, o).front();
  REQUIRE(r.error.empty());
  return r;
}

/// One NIC's goodput in GB/s at flow level: 100 Gb/s × a full RoCE packet's payload share
/// (4096 B in 4096 + 82 B on the wire, docs/network.md).
constexpr double kNicGoodput = 100e9 / 8 * 4096.0 / (4096 + 82) / 1e9;

}  // namespace

TEST_CASE("a collective workload is nccl-tests' benchmark over every GPU", "[sweep][collective]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics ok = readAll(benchmark("16MiB", 16, "packet", 3), &xs);
  INFO(ok.format());
  REQUIRE(ok.empty());
  const TrainingExperiment& x = xs.front();
  CHECK(x.collective.enabled);
  CHECK(x.collective.op == CollectiveOp::kAllReduce);
  CHECK(x.collective.bytes.count == 16 << 20);
  CHECK(x.collective.iters == 3);
  CHECK(x.parallelism.tp == 1);
  CHECK(x.parallelism.pp == 1);
  CHECK(x.parallelism.dp == 16);
  // nccl-tests' out-of-place buffers: input and output.
  CHECK(peakStageMemory(x).total().count == 2 * (16 << 20));

  const std::string cluster =
      "  cluster: {gpu: a100-40gb, gpus: 16, gpus_per_server: 8, nics_per_server: 16}\n"
      "  topology: {kind: rail_optimized, servers: 2, nics_per_server: 16}\n";
  CHECK(has(readAll("base:\n  workload: {collective: {op: all_reduce}}\n" + cluster), "workload.collective.bytes",
            "missing"));
  CHECK(has(readAll("base:\n  workload: {collective: {bytes: 1MiB}}\n" + cluster), "workload.collective.op", "missing"));
  CHECK(has(readAll("base:\n  workload: {collective: {op: broadcast, bytes: 1MiB}}\n" + cluster),
            "workload.collective.op", "all_to_all"));
  CHECK(has(readAll("base:\n  workload: {collective: {op: all_reduce, bytes: 0B}}\n" + cluster),
            "workload.collective.bytes", ""));
  CHECK(has(readAll("base:\n  workload: {collective: {op: all_reduce, bytes: 1MiB, iters: 0}}\n" + cluster),
            "workload.collective.iters", ""));
  CHECK(has(readAll("base:\n  workload: {collective: {op: all_reduce, bytes: 1MiB}, model: gpt3-13b}\n" + cluster),
            "workload.model", "no training program"));
  CHECK(has(readAll("base:\n  workload: {collective: {op: all_reduce, bytes: 1MiB}}\n  parallelism: {dp: 16}\n" +
                    cluster),
            "parallelism", "leave parallelism out"));
}

TEST_CASE("NICs per server divide the GPUs or are a multiple of them", "[sweep][collective]") {
  CHECK(readAll(benchmark("1MiB", 16, "flow")).empty());
  CHECK(readAll(benchmark("1MiB", 4, "flow")).empty());
  CHECK(has(readAll(benchmark("1MiB", 12, "flow")), "cluster.nics_per_server", "multiple"));
}

TEST_CASE("two NICs per GPU carry two channels each: a ring's bus bandwidth doubles", "[sweep][collective]") {
  // 16 channels (one per NIC of a server) against 8: at 8 GiB the ring's bus bandwidth is
  // the NICs' goodput, 2(n−1)/n · S crossing each server's NICs in each direction.
  const TrainingResult two = runYaml(benchmark("8GiB", 16, "flow"));
  const TrainingResult one = runYaml(benchmark("8GiB", 8, "flow"));
  CHECK(two.collective_bytes == int64_t{8} << 30);
  CHECK(two.busbw_gbps == Approx(16 * kNicGoodput).epsilon(0.02));
  CHECK(one.busbw_gbps == Approx(8 * kNicGoodput).epsilon(0.02));
  CHECK(two.algbw_gbps == Approx(two.busbw_gbps * 16 / 30).epsilon(1e-9));  // busbw = algbw · 2(n−1)/n
  CHECK(two.collective_time.ps == two.iteration.ps);
  // At packet level the connections of the channels leave by both NICs of each GPU: the same
  // bandwidth (ACKs take their share too), not half of it.
  const TrainingResult packet = runYaml(benchmark("1GiB", 16, "packet"));
  const TrainingResult fluid = runYaml(benchmark("1GiB", 16, "flow"));
  CHECK(packet.busbw_gbps == Approx(fluid.busbw_gbps).epsilon(0.03));
  CHECK(packet.network.ecn_marks == 0);  // a non-blocking fabric, one channel per NIC
}

TEST_CASE("a benchmark's time is the mean of its collectives", "[sweep][collective]") {
  const TrainingResult one = runYaml(benchmark("4MiB", 16, "packet"));
  const TrainingResult three = runYaml(benchmark("4MiB", 16, "packet", 3));
  CHECK(three.collective_time.ps == three.iteration.ps / 3);
  CHECK(three.collective_time.ps == Approx(static_cast<double>(one.collective_time.ps)).epsilon(0.05));
  CHECK(three.mfu == 0);
  CHECK(three.tokens_per_second == 0);
}

TEST_CASE("the collective table prints benchmarks as nccl-tests does", "[experiments][collective]") {
  ExperimentRecord bench;
  bench.name = "1MiB-packet";
  bench.swept = {{"workload.collective.bytes", "1MiB"}, {"network.fidelity", "packet"}};
  bench.result.iteration = Picoseconds{85'580'000};
  bench.result.collective_time = Picoseconds{85'580'000};
  bench.result.collective_bytes = 1 << 20;
  bench.result.algbw_gbps = 12.2526;
  bench.result.busbw_gbps = 22.9736;
  ExperimentRecord training;
  training.name = "gpt";
  training.swept = bench.swept;
  training.result.iteration = Picoseconds{1'000'000'000};
  CHECK(collectiveTable({training}).empty());
  const std::string table = collectiveTable({training, bench});
  CHECK_THAT(table, Catch::Contains("busbw (GB/s)") && Catch::Contains("network.fidelity"));
  CHECK_THAT(table, Catch::Contains("1048576") && Catch::Contains("85.58") && Catch::Contains("12.25") &&
                        Catch::Contains("22.97") && Catch::Contains("1MiB-packet"));
  CHECK(table.find("gpt") == std::string::npos);
  CHECK(table.find("workload.collective.bytes") == std::string::npos);  // the size column says it
}

TEST_CASE("NCCL's tree over two servers meets the real nccl-tests log at its ends", "[sweep][collective]") {
  // ../shared/external/nccl_tests_oci_a100_roce/all_reduce_perf_2nodes_16ranks_8B-8GB.log,
  // out-of-place: 36.47 us at 8 B (the latency floor), busbw 219.12 GB/s at 1 GiB and
  // 237.94 at 8 GiB, where NCCL runs its tree with the Simple protocol.
  const TrainingResult small = runYaml(benchmark("8B", 16, "packet", 1, "tree"));
  CHECK(static_cast<double>(small.collective_time.ps) * 1e-6 == Approx(36.47).epsilon(0.2));
  const TrainingResult gib = runYaml(benchmark("1GiB", 16, "packet", 1, "tree"));
  CHECK(gib.busbw_gbps == Approx(219.12).epsilon(0.1));
  const TrainingResult large = runYaml(benchmark("8GiB", 16, "packet", 1, "tree"));
  CHECK(large.busbw_gbps == Approx(237.94).epsilon(0.1));
  // The ring caps at the NICs' goodput, below what the tree and NCCL reach there.
  const TrainingResult ring = runYaml(benchmark("8GiB", 16, "packet"));
  CHECK(ring.busbw_gbps < 16 * kNicGoodput);
  CHECK(ring.busbw_gbps < 0.85 * 237.94);
}

TEST_CASE("the fidelities agree on the ring and the tree within 5 %", "[sweep][collective]") {
  for (const char* algorithm : {"ring", "tree"}) {
    for (const char* bytes : {"8B", "1MiB", "16MiB", "1GiB"}) {
      INFO(algorithm << " " << bytes);
      const double packet = static_cast<double>(runYaml(benchmark(bytes, 16, "packet", 1, algorithm)).iteration.ps);
      for (const char* fidelity : {"flow", "analytical"}) {
        INFO(fidelity);
        const double other = static_cast<double>(runYaml(benchmark(bytes, 16, fidelity, 1, algorithm)).iteration.ps);
        CHECK(other == Approx(packet).epsilon(0.05));
      }
    }
  }
}

TEST_CASE("NCCL's ring loops: a small buffer serializes them, and the fidelities agree", "[sweep][collective]") {
  // A 4 MiB ring all-reduce over 4 servers of one GPU: a member's 1 MiB share is one loop of
  // two slices with the default 4 MiB buffer, 32 loops of two 16 KiB slices with a 64 KiB
  // one (32 KiB chunks, at most 32 loops). Each loop's chain of 6 hops waits for the one
  // before, a step latency and a round trip a hop: 32 chains cost more than the NIC's 6 MiB.
  const auto yaml = [](const std::string& buffer, const std::string& fidelity) {
    return "base:\n"
           "  workload: {collective: {op: all_reduce, bytes: 4MiB}}\n"
           "  cluster: {gpu: a100-40gb, gpus: 4, gpus_per_server: 1, nics_per_server: 1}\n"
           "  topology: {kind: rail_optimized, servers: 4, nics_per_server: 1, link_rate: 100Gbps}\n"
           "  network: {fidelity: " + fidelity + "}\n"
           "  collectives: {all_reduce: ring, buffer: " + buffer + "}\n";
  };
  const double one_loop = static_cast<double>(runYaml(yaml("4MiB", "packet")).iteration.ps);
  const double loops = static_cast<double>(runYaml(yaml("64KiB", "packet")).iteration.ps);
  INFO("packet level: one loop " << one_loop << " ps, 32 loops " << loops << " ps");
  // 6 MiB through the NIC at 100 Gb/s: 0.5 ms; 32 chains of 6 hops of a few µs: more.
  CHECK(one_loop < 0.6e9);
  CHECK(loops > 1.5 * one_loop);
  for (const char* fidelity : {"flow", "analytical"}) {
    INFO(fidelity);
    CHECK(static_cast<double>(runYaml(yaml("4MiB", fidelity)).iteration.ps) == Approx(one_loop).epsilon(0.05));
  }
  CHECK(static_cast<double>(runYaml(yaml("64KiB", "analytical")).iteration.ps) == Approx(loops).epsilon(0.05));
  // The fluid messages skip what a packet waits at the switch: a hop of a 16 KiB slice is
  // one 4 KiB packet (4,178 B on the wire: 0.33 µs at 100 Gb/s) behind, on each of 32 × 6 hops.
  const double fluid = static_cast<double>(runYaml(yaml("64KiB", "flow")).iteration.ps);
  const double packet_ps = 4178.0 * 8 / 100e9 * 1e12;
  CHECK(loops - fluid == Approx(32 * 6 * packet_ps).epsilon(0.1));
}

TEST_CASE("auto runs what NCCL's tuner picks, and the manifest says what it picked", "[sweep][collective]") {
  // On the nccl-tests cluster the tuner takes the tree with LL at 8 B (analytical/nccl_tuner.hpp).
  const TrainingResult chosen = runYaml(benchmark("8B", 16, "packet", 1, "auto"), true);
  REQUIRE(chosen.collective_choices.size() == 1);
  const CollectiveChoice& c = chosen.collective_choices.front();
  CHECK(c.op == CollectiveOp::kAllReduce);
  CHECK(c.ranks == 16);
  CHECK(c.bytes == 8);
  CHECK(c.algorithm == CollectiveAlgorithm::kTree);
  CHECK(c.protocol == static_cast<uint8_t>(NcclProtocol::kLl));
  CHECK(c.channels == 16);
  CHECK(c.count == 1);
  // The trace's collective spans say so too.
  CHECK(chosen.chrome_trace.find("\"algorithm\":\"tree\",\"protocol\":\"LL\",\"channels\":16") != std::string::npos);
  const TrainingResult tree = runYaml(benchmark("8B", 16, "packet", 1, "tree"));
  CHECK(chosen.iteration == tree.iteration);
  CHECK(tree.collective_choices.front().protocol == CollectiveChoice::kNoProtocol);  // given, not chosen

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mv_test_collective_choices";
  std::filesystem::remove_all(dir);
  ResultsWriter writer;
  writer.open(dir, OpenMode::kCreate);
  ExperimentRecord record;
  record.name = "auto-8B";
  record.id = 42;
  record.resolved_config = "name: auto-8B\n";
  record.result = chosen;
  writer.write(record);
  const ExperimentRecord back = parseManifest(readFile(dir / "experiments" / "auto-8B" / "manifest.json"));
  std::filesystem::remove_all(dir);
  REQUIRE(back.result.collective_choices.size() == 1);
  const CollectiveChoice& b = back.result.collective_choices.front();
  CHECK(b.algorithm == c.algorithm);
  CHECK(b.protocol == c.protocol);
  CHECK(b.channels == c.channels);
  CHECK(b.bytes == c.bytes);
  CHECK(back.result.collective_bytes == 8);
  CHECK(back.result.busbw_gbps == chosen.busbw_gbps);
}

TEST_CASE("auto across servers of one GPU: the tree for small all-reduces, the ring for DP buckets", "[sweep][collective]") {
  // 16 servers of one GPU and one NIC (a TP 8 job's DP group): the ring in one channel, the
  // tree in two sharing the NIC; NCCL's tuner keeps the ring where the bandwidth counts.
  auto choice = [](const std::string& bytes) {
    const std::string yaml = "base:\n"
                             "  workload: {collective: {op: all_reduce, bytes: " + bytes + "}}\n"
                             "  cluster: {gpu: a100-80gb, gpus: 16, gpus_per_server: 1, nics_per_server: 1}\n"
                             "  network: {fidelity: analytical}\n";
    const TrainingResult r = runYaml(yaml);
    REQUIRE(r.collective_choices.size() == 1);
    return r.collective_choices.front();
  };
  CHECK(choice("8B").algorithm == CollectiveAlgorithm::kTree);
  const CollectiveChoice bucket = choice("160MB");
  CHECK(bucket.algorithm == CollectiveAlgorithm::kRing);
  CHECK(bucket.protocol == static_cast<uint8_t>(NcclProtocol::kSimple));
  CHECK(bucket.channels == 1);
}
