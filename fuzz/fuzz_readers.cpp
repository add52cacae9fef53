/**
 * @file fuzz_readers.cpp
 * One fuzzing entry point for every reader of user input (docs/fuzzing.md). The reader is
 * chosen by MV_FUZZ_READER: sweep, netsim, flows, topology, chakra_et, chakra_json, simai,
 * constraint (one constraint expression, parsed and evaluated), report_sweep (a sweep's
 * summary.json) and report_netsim (one file as a netsim variant's flows.csv, queues.csv and
 * links.csv at once). Each
 * input is written to a file and read as the command line reads it; a reader may report
 * problems (diagnostics, or the one exception type it documents) but must not crash, hang,
 * trip a sanitizer or throw anything else.
 *
 * Built with clang and -fsanitize=fuzzer (the `sanitize` preset) it is a libFuzzer target;
 * built otherwise it replays the files named on its command line (the regression tests).
 * With MV_FUZZ_SEEDS=DIR the Chakra and report readers first write seeds into DIR.
 */
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "analytical/gpu.hpp"
#include "experiments/config_reader.hpp"
#include "experiments/experiment_yaml.hpp"
#include "experiments/netsim.hpp"
#include "experiments/network_yaml.hpp"
#include "experiments/report.hpp"
#include "experiments/sweep.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"
#include "workloads/chakra.hpp"
#include "workloads/chakra_program.hpp"
#include "workloads/simai.hpp"

namespace {

using namespace mv;

enum class Reader {
  kSweep,
  kNetsim,
  kFlows,
  kTopology,
  kChakraBinary,
  kChakraJson,
  kSimai,
  kConstraint,
  kReportSweep,
  kReportNetsim
};

/// A scratch folder of this process: inputs are files there, as users give them.
std::filesystem::path scratch() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("mv_fuzz_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

std::filesystem::path writeInput(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch() / name;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

/// A small trace with one node of each kind a stage program uses, dependencies included.
ChakraTrace seedTrace() {
  auto attr = [](std::string_view name, ChakraValueKind kind, int64_t v) {
    ChakraAttribute a;
    a.name = std::string(name);
    a.kind = kind;
    if (kind == ChakraValueKind::kUint64) {
      a.uints = {static_cast<uint64_t>(v)};
    } else {
      a.ints = {v};
    }
    return a;
  };
  ChakraTrace t;
  t.source = "seed";
  ChakraNode comp;
  comp.id = 1;
  comp.name = "gemm";
  comp.type = ChakraNodeType::kComp;
  comp.duration_micros = 120;
  ChakraNode coll;
  coll.id = 2;
  coll.name = "all_reduce";
  coll.type = ChakraNodeType::kCommColl;
  coll.data_deps = {1};
  coll.setAttribute(attr(chakra_attr::kCommType, ChakraValueKind::kInt64, 0));
  coll.setAttribute(attr(chakra_attr::kCommSize, ChakraValueKind::kUint64, 1 << 20));
  ChakraNode send;
  send.id = 3;
  send.name = "send";
  send.type = ChakraNodeType::kCommSend;
  send.ctrl_deps = {1};
  send.setAttribute(attr(chakra_attr::kCommSize, ChakraValueKind::kUint64, 4096));
  send.setAttribute(attr(chakra_attr::kCommDst, ChakraValueKind::kInt32, 0));
  ChakraNode recv;
  recv.id = 4;
  recv.name = "recv";
  recv.type = ChakraNodeType::kCommRecv;
  recv.data_deps = {2, 3};
  recv.setAttribute(attr(chakra_attr::kCommSize, ChakraValueKind::kUint64, 4096));
  recv.setAttribute(attr(chakra_attr::kCommSrc, ChakraValueKind::kInt32, 0));
  t.nodes = {comp, coll, send, recv};
  return t;
}

/// A netsim variant's CSV files in one: every column flows.csv, queues.csv and links.csv need.
constexpr std::string_view kNetsimCsvSeed =
    "flow,src,dst,bytes,start_ps,finish_ps,fct_ps,ideal_fct_ps,port,max_bytes,link,bin_start_ps,utilisation\n"
    "0,1,0,1000,0,900,900,450,0,8000,0-1,0,0.5\n1,2,0,1000,0,1200,1200,450,1,4000,1-0,1000,1\n";

void writeSeeds(Reader reader, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  if (reader == Reader::kReportNetsim) {
    std::ofstream(dir / "seed.csv", std::ios::binary) << kNetsimCsvSeed;
    return;
  }
  const ChakraTrace t = seedTrace();
  const std::string bytes = reader == Reader::kChakraBinary ? encodeChakraBinary(t) : encodeChakraJson(t);
  std::ofstream(dir / (reader == Reader::kChakraBinary ? "seed.et" : "seed.json"), std::ios::binary) << bytes;
}

Reader g_reader = Reader::kSweep;

/// The topology flow lists are read against: a k=4 fat tree (16 NICs, nodes 0-15, then 20
/// switches), so both NIC indices and ns-3 node ids have meaning.
const Topology& flowTopology() {
  static const Topology topo = makeFatTree(FatTreeParams{});
  return topo;
}

void readOne(const uint8_t* data, size_t size) {
  switch (g_reader) {
    case Reader::kSweep: {
      Diagnostics diags;
      const Sweep sweep = readSweep(writeInput("sweep.yaml", data, size), diags);
      if (diags.empty()) readExperiments(sweep, diags, [](TrainingExperiment&&) {});
      return;
    }
    case Reader::kNetsim: {
      Diagnostics diags;
      checkNetsimFile(writeInput("netsim.yaml", data, size), int64_t{1} << 30, diags);
      return;
    }
    case Reader::kFlows: {
      Diagnostics diags;
      readFlowFile(writeInput("flows.txt", data, size), flowTopology(), diags);
      return;
    }
    case Reader::kTopology:
      try {
        const Topology topo = loadNs3Topology(writeInput("topology.txt", data, size));
        validateTopology(topo, 2);
        computeRouting(topo);
      } catch (const TopologyError&) {
      }
      return;
    case Reader::kChakraBinary:
    case Reader::kChakraJson:
      try {
        const std::string_view text(reinterpret_cast<const char*>(data), size);
        const ChakraTrace t = g_reader == Reader::kChakraBinary ? decodeChakraBinary(text, "f.et")
                                                                : decodeChakraJson(text, "f.json");
        validateChakraTrace(t);
        try {
          programFromChakra({t}, Parallelism{});
        } catch (const WorkloadError&) {
        }
        // As per-rank programs too: two ranks running it, with and without communicator groups
        // (a pair, so that sends and receives without a peer find one).
        static const ComputeModel compute(h100Compute());
        try {
          programFromRankTraces({t, t}, CommGroups{}, compute, TrainingPrecision::kBf16);
        } catch (const WorkloadError&) {
        }
        static const CommGroups groups{{"0", {0, 1}}, {"1", {1}}, {"dp", {0, 1}}};
        programFromRankTraces({t, t}, groups, compute, TrainingPrecision::kBf16);
      } catch (const WorkloadError&) {
      }
      return;
    case Reader::kSimai:
      try {
        static const CollectiveModel tp_model = makeCollectiveModel(gpuByName("h100"));
        const std::string text(reinterpret_cast<const char*>(data), size);
        programFromSimai(parseSimaiWorkload(text, "w.txt"), tp_model, 1.25);
      } catch (const WorkloadError&) {
      }
      return;
    case Reader::kConstraint:
      try {
        const Expression e(std::string_view(reinterpret_cast<const char*>(data), size));
        e.evaluate([](const std::string& key) -> std::optional<ExprValue> {
          if (key == "parallelism.tp") return ExprValue{int64_t{8}};
          if (key == "network.cc") return ExprValue{std::string("hpcc")};
          if (key == "cluster.compute_jitter") return ExprValue{0.5};
          return std::nullopt;
        });
      } catch (const ExpressionError&) {
      }
      return;
    case Reader::kReportSweep:
    case Reader::kReportNetsim:
      try {
        if (g_reader == Reader::kReportSweep) {
          writeInput("summary.json", data, size);
          sweepReport(scratch());
        } else {
          // One variant, "e", whose three files are the input.
          std::filesystem::create_directories(scratch() / "e");
          for (const char* file : {"e/flows.csv", "e/queues.csv", "e/links.csv"}) writeInput(file, data, size);
          netsimReport(scratch());
        }
      } catch (const ReportError&) {
      }
      return;
  }
}

bool chooseReader() {
  static constexpr std::pair<std::string_view, Reader> kReaders[] = {
      {"sweep", Reader::kSweep},       {"netsim", Reader::kNetsim},          {"flows", Reader::kFlows},
      {"topology", Reader::kTopology}, {"chakra_et", Reader::kChakraBinary}, {"chakra_json", Reader::kChakraJson},
      {"simai", Reader::kSimai},       {"constraint", Reader::kConstraint},  {"report_sweep", Reader::kReportSweep},
      {"report_netsim", Reader::kReportNetsim}};
  const char* env = std::getenv("MV_FUZZ_READER");
  const std::string_view wanted = env != nullptr ? env : "";
  const auto* it = std::find_if(std::begin(kReaders), std::end(kReaders), [&](const auto& r) { return r.first == wanted; });
  if (it == std::end(kReaders)) {
    std::cerr << "mv_fuzz: set MV_FUZZ_READER to sweep, netsim, flows, topology, chakra_et, chakra_json, simai, "
                 "constraint, report_sweep or report_netsim\n";
    return false;
  }
  g_reader = it->second;
  if (g_reader == Reader::kNetsim) {  // the flow lists the examples name, beside the input
    for (const char* file : {"incast_flows.csv", "flows.csv"}) {
      std::ofstream(scratch() / file) << "src,dst,bytes,start_us\n1,0,10000,0\n2,0,10000,0.5\n";
    }
  }
  if (g_reader == Reader::kReportNetsim) {  // the summary naming the one variant
    std::ofstream(scratch() / "summary.csv")
        << "experiment,cc,load_balance,flows,finished,last_finish_ps,mean_slowdown,p99_slowdown,packet_hops,ecn_marks,"
           "cnps,pauses,paused_ps,drops,retransmits,timeouts,wall_s\n"
           "e,hpcc,ecmp,2,2,1200,2.3,2.6,8,0,0,0,0,0,0,0,0.01\n";
  }
  if (const char* seeds = std::getenv("MV_FUZZ_SEEDS");
      seeds != nullptr && (g_reader == Reader::kChakraBinary || g_reader == Reader::kChakraJson ||
                           g_reader == Reader::kReportNetsim)) {
    writeSeeds(g_reader, seeds);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!chooseReader()) std::exit(2);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  readOne(data, size);
  return 0;
}

#ifndef MV_LIBFUZZER
/// Without libFuzzer: reads each file named on the command line once, as a regression test.
int main(int argc, char** argv) {
  if (!chooseReader()) return 2;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::cerr << "mv_fuzz: cannot read " << argv[i] << "\n";
      return 2;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    readOne(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::cout << "mv_fuzz: " << argv[i] << " read\n";
  }
  std::filesystem::remove_all(scratch());
  return 0;
}
#endif
