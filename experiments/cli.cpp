/**
 * @file cli.cpp
 * Command-line parsing with CLI11 and dispatch to the commands.
 */
#include "experiments/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "ecs/quantity.hpp"
#include "ecs/text.hpp"
#include "experiments/config_reader.hpp"
#include "experiments/estimate.hpp"
#include "experiments/experiment_yaml.hpp"
#include "experiments/netsim.hpp"
#include "experiments/report.hpp"
#include "experiments/run_sweep.hpp"
#include "experiments/sweep.hpp"
#include "experiments/version.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "systems/training_sim.hpp"
#include "workloads/chakra_program.hpp"

namespace mv {

namespace {

/// `--threads` held to the cores this process may use, with a note when it asked for more:
/// threads beyond them only wait for one another (64 on 2 cores made a 0.24 s sweep take
/// 67 s; 1024 ran out of what libgomp can start).
int threadsWithinCores(int requested) {
  const int cores = availableCpuCores();
  if (requested <= cores) return requested;
  std::cerr << "multiverse: note: --threads " << requested << ": this process may use " << cores << " core"
            << (cores == 1 ? "" : "s") << "; running " << cores << " thread" << (cores == 1 ? "" : "s") << "\n";
  return cores;
}

/// A CLI11 check that a real option is a finite number (its Range check lets NaN through).
const CLI::Validator kFinite(
    [](std::string& text) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return std::isfinite(v) ? std::string() : "must be a finite number, got '" + text + "'";
    },
    "FINITE");

/// The sweep in `file` and its experiments, read into `xs` (problems into `diags`).
Sweep readSweepExperiments(const std::filesystem::path& file, Diagnostics& diags, std::vector<TrainingExperiment>& xs) {
  Sweep sweep = readSweep(file, diags);
  if (diags.empty()) readExperiments(sweep, diags, [&](TrainingExperiment&& x) { xs.push_back(std::move(x)); });
  return sweep;
}

/// Prints every problem of `file` and their count; the exit code of a bad input.
int reportProblems(const Diagnostics& diags, const std::filesystem::path& file) {
  std::cerr << diags.format() << "multiverse: " << diags.items().size() << " problem"
            << (diags.items().size() == 1 ? "" : "s") << " in " << printable(file.string()) << "\n";
  return kExitUsageError;
}

/// `multiverse validate`: expands the sweep, reads every experiment, reports every problem
/// (exit 2) or the experiment count and a memory estimate (exit 0).
int runValidate(const std::filesystem::path& file, int64_t max_memory) {
  Diagnostics diags;
  std::vector<TrainingExperiment> xs;
  const Sweep sweep = readSweepExperiments(file, diags, xs);
  const int64_t budget = max_memory > 0 ? max_memory : defaultMemoryBudget();
  MemoryMeter meter(Recording{}, budget);
  int64_t total = 0;
  int64_t largest = 0;
  if (diags.empty()) {
    for (const MemoryEstimate& m : measureSweep(sweep, xs, meter, budget, diags)) {
      total += m.total;
      largest = std::max(largest, m.total);
    }
  }
  if (!diags.empty()) return reportProblems(diags, file);
  const auto plural = [](uint64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  std::cout << printable(file.string()) << ": " << plural(sweep.experiments.size(), "experiment") << " ("
            << plural(sweep.combinations, "combination") << ", " << sweep.dropped << " dropped by constraints)\n"
            << "simulation memory: " << formatBytes(total) << " in all, at most " << formatBytes(largest)
            << " per experiment (" << plural(static_cast<uint64_t>(meter.builds()), "configuration")
            << " measured, see docs/sweep.md)\n";
  return kExitOk;
}

/// `multiverse export-chakra`: writes every experiment's program as Chakra traces, one
/// folder per experiment (docs/chakra.md "Export"). Exit 2 for a bad sweep or a folder that
/// holds files already (unless `force`).
int runExportChakra(const std::filesystem::path& file, std::filesystem::path out, const std::string& format,
                    const std::string& layout, bool force) {
  Diagnostics diags;
  std::vector<TrainingExperiment> xs;
  readSweepExperiments(file, diags, xs);
  if (!diags.empty()) return reportProblems(diags, file);
  if (out.empty()) out = std::filesystem::path("results") / (file.stem().string() + "-chakra");
  for (const TrainingExperiment& x : xs) {
    const std::filesystem::path dir = out / x.name;
    if (!force && std::filesystem::exists(dir) && !std::filesystem::is_empty(dir)) {
      std::cerr << "multiverse: error: " << printable(dir.string()) << " holds files already (--force replaces them)\n";
      return kExitUsageError;
    }
  }
  for (const TrainingExperiment& x : xs) {
    if (!x.chakra.empty()) {
      std::cout << printable(x.name + ": runs Chakra traces already (" + x.chakra + "), not exported") << "\n";
      continue;
    }
    std::vector<ChakraTrace> traces;
    try {
      traces = programToChakra(trainingProgramOf(x), x.parallelism);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << printable(x.name + ": " + e.what()) << "\n";
      return kExitUsageError;
    }
    const std::filesystem::path dir = out / x.name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::string extra;
    if (layout == "ranks") {
      writeCommGroups(dir / "groups.json", nameCommunicators(traces, x.parallelism));
      extra = " and groups.json";
    }
    for (size_t r = 0; r < traces.size(); ++r) {
      writeChakraFile(dir / ("job." + std::to_string(r) + "." + format), traces[r]);
    }
    std::cout << printable(x.name + ": " + std::to_string(traces.size()) + " ranks -> " + dir.string() + "/job.<rank>." +
                           format + extra)
              << "\n";
  }
  return kExitOk;
}

static_assert(CpuExecutor::kAutoBlock == -1, "addExperimentCountOption writes auto as -1");

/// Help text of `--cpu-block`.
constexpr const char* kCpuBlockHelp =
    "CPU backend: experiments advanced together, block after block: auto (default; measured as it runs), "
    "0 (the whole batch in every step) or N (docs/engine.md)";

/// Help text of `--batch-size`.
constexpr const char* kBatchSizeHelp =
    "Most experiments in one batch: auto (default: 8 on CPU workers, no cap on a GPU), 0 (no cap but "
    "--max-memory) or N (docs/sweep.md)";

/// Largest `--cpu-block N` and `--batch-size N`.
constexpr int64_t kMaxExperimentCount = int64_t{1} << 20;

/// Largest `--cpu-workers N` (as `--threads`).
constexpr int kMaxCpuWorkers = 1024;

}  // namespace

namespace {

/// Accepts "auto" or a whole number from `lo` to `hi` of `what` (e.g. "experiments").
CLI::Validator autoOrCount(int64_t lo, int64_t hi, const std::string& what) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        if (v == "auto") return {};
        std::size_t used = 0;
        int64_t n = -1;
        try {
          n = std::stoll(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != v.size() || n < lo || n > hi) {
          return "must be auto or a whole number of " + what + " from " + std::to_string(lo) + " to " +
                 std::to_string(hi);
        }
        return {};
      },
      "auto|" + std::to_string(lo) + ".." + std::to_string(hi));
}

/// Help text of `--max-memory`.
constexpr const char* kMaxMemoryHelp =
    "Simulation memory of the batches in memory at once, e.g. 8GiB (default: half the RAM); one experiment that "
    "needs more is refused";

/// Adds `--max-memory SIZE` to `app`, parsed into `bytes` (checked: a positive size).
void addMaxMemoryOption(CLI::App& app, int64_t& bytes) {
  app.add_option_function<std::string>(
         "--max-memory", [&bytes](const std::string& v) { parseSize(v, bytes); }, kMaxMemoryHelp)
      ->check(
          [](const std::string& v) {
            int64_t b = 0;
            const QuantityStatus st = parseSize(v, b);
            if (st != QuantityStatus::kOk) return quantityError(st, v, "size");
            return b > 0 ? std::string() : std::string("must be positive");
          },
          "SIZE");
}

/// -1 for "auto", else the number (already checked by autoOrCount).
int64_t autoOrCountValue(const std::string& v) {
  return v == "auto" ? -1 : std::stoll(v);
}

}  // namespace

void addExperimentCountOption(CLI::App& app, int64_t& count, const std::string& name, const std::string& help) {
  app.add_option_function<std::string>(name, [&count](const std::string& v) { count = autoOrCountValue(v); }, help)
      ->check(autoOrCount(0, kMaxExperimentCount, "experiments"));
}

void addCpuWorkersOption(CLI::App& app, int& workers) {
  app.add_option_function<std::string>(
         "--cpu-workers", [&workers](const std::string& v) { workers = static_cast<int>(autoOrCountValue(v)); },
         "Workers on the CPU running batches side by side, sharing --threads: auto (default: one per thread, no "
         "more than the experiments or than --max-memory holds) or N (docs/sweep.md)")
      ->check(autoOrCount(1, kMaxCpuWorkers, "workers"));
}

int runCli(int argc, char** argv) {
  CLI::App app{"Multiverse: simulates many LLM-training-cluster experiments side by side in one process.",
               "multiverse"};
  app.set_version_flag("--version", std::string("multiverse ") + kVersion + " (" + kBackends + ")");
  std::string dump_graph;
  app.add_option("--dump-graph", dump_graph, "Print the training step graph (text or dot) and exit")
      ->check(CLI::IsMember({"text", "dot"}));
  std::string sweep_file;
  SweepOptions sweep;
  app.add_option("--experiments", sweep_file, "Run every experiment of a sweep file (see docs/sweep.md)");
  app.add_option("--out", sweep.out, "Results folder (default results/<sweep file name>)");
  CLI::Option* resume =
      app.add_flag("--resume", sweep.resume, "Keep the experiments the results folder already holds; run the rest");
  app.add_flag("--force", sweep.force, "Replace the results the folder already holds")->excludes(resume);
  app.add_option("--heartbeat", sweep.heartbeat_s,
                 "Seconds between lines saying where the running batches stand (simulated time reached); 0 = none "
                 "(default 10)")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--skip-infeasible", sweep.skip_infeasible,
               "Write experiments with problems (infeasible parallelism, ...) as rows of status invalid and run the rest");
  app.add_option("--threads", sweep.threads, "CPU threads per process (default: all cores)")->check(CLI::Range(1, 1024));
  addExperimentCountOption(app, sweep.cpu_block, "--cpu-block", kCpuBlockHelp);
  addExperimentCountOption(app, sweep.batch_size, "--batch-size", kBatchSizeHelp);
  addCpuWorkersOption(app, sweep.cpu_workers);
  app.add_option("--backend", sweep.backend,
                 "auto, cpu or cuda (default auto: cuda when a GPU is usable, else cpu; flow-level experiments run "
                 "on the CPU under auto)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--devices", sweep.devices, "CUDA devices to spread the experiments over (default: all usable)")
      ->check(CLI::Range(1, 1024));
  addMaxMemoryOption(app, sweep.max_memory);
  app.add_option("--top", sweep.top, "Rows of the closing table (0 = all; default 10)")->check(CLI::Range(0, 1000000));
  app.add_option("--rank-by", sweep.rank_by, "Closing table order: iteration, mfu, tokens or memory")
      ->check(CLI::IsMember({"iteration", "mfu", "tokens", "memory"}));
  app.add_flag("--trace", sweep.trace, "Write a Chrome trace (trace.json) per experiment");
  app.add_flag("--network-detail", sweep.network_detail,
               "Write queues.csv (packet level), flows.csv and fct.txt (packet and flow level) per experiment");
  app.add_flag("--quiet", sweep.quiet, "Print nothing but errors");
  NetsimOptions netsim;
  std::string netsim_file;
  CLI::App* net = app.add_subcommand("netsim", "Run a flow list on a topology at packet level (see docs/netsim.md)");
  net->add_option("config", netsim_file, "YAML file: topology, network, flows, experiments")->required();
  net->add_option("--out", netsim.out, "Results folder (default results/<name>)");
  net->add_option("--threads", netsim.threads, "CPU threads (default: all cores)")->check(CLI::Range(1, 1024));
  addExperimentCountOption(*net, netsim.cpu_block, "--cpu-block", kCpuBlockHelp);
  addCpuWorkersOption(*net, netsim.cpu_workers);
  net->add_option("--backend", netsim.backend, "auto, cpu or cuda (default auto: cuda when a GPU is usable, else cpu)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  net->add_flag("--quiet", netsim.quiet, "Print nothing but errors");
  net->add_flag("--force", netsim.force, "Replace the results the folder already holds");
  addMaxMemoryOption(*net, netsim.max_memory);
  std::string validate_file;
  CLI::App* validate = app.add_subcommand(
      "validate", "Expand a sweep file and check every experiment without running it (see docs/sweep.md)");
  validate->add_option("sweep", validate_file, "sweep.yaml: base, sweep, zip, constraints")->required();
  int64_t validate_memory = 0;
  addMaxMemoryOption(*validate, validate_memory);
  std::string report_dir;
  std::string report_out;
  CLI::App* report = app.add_subcommand(
      "report", "Write one self-contained HTML page of a results folder's tables and charts (see docs/report.md)");
  report->add_option("results", report_dir, "a results folder of multiverse --experiments or multiverse netsim")
      ->required();
  report->add_option("--out", report_out, "the page to write (default RESULTS/report.html)");
  std::string export_file;
  std::string export_out;
  std::string export_format = "et";
  std::string export_layout = "ranks";
  bool export_force = false;
  CLI::App* export_chakra = app.add_subcommand(
      "export-chakra",
      "Write each experiment's program as Chakra traces, a folder per experiment (see docs/chakra.md)");
  export_chakra->add_option("sweep", export_file, "sweep.yaml whose experiments to export")->required();
  export_chakra->add_option("--out", export_out,
                            "Folder of the experiments' folders (default results/<sweep name>-chakra)");
  export_chakra->add_option("--format", export_format, "et (protobuf, default) or json")
      ->check(CLI::IsMember({"et", "json"}));
  export_chakra
      ->add_option("--layout", export_layout,
                   "ranks (default): each group a communicator of its own, listed in groups.json (ASTRA-sim's "
                   "--comm-group-configuration); stages: pg_name dp, ep or expert_dp (Multiverse's stage layout)")
      ->check(CLI::IsMember({"ranks", "stages"}));
  export_chakra->add_flag("--force", export_force, "Replace the experiments' folders when they hold files");
  app.footer(
      "Backends in this build: " + std::string(kBackends) +
      "\nExit codes: 0 success, 1 simulation error, 2 bad command line or input.");
  // The only words the top level takes are its commands: a misspelt one gets a hint.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> commands;
    std::string listed;
    for (const CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>())) {
      commands.push_back(sub->get_name());
      listed += (listed.empty() ? "" : ", ") + sub->get_name();
    }
    const std::string word = argv[1];
    if (std::find(commands.begin(), commands.end(), word) == commands.end()) {
      const std::string hint = nearestKey(word, commands);
      std::cerr << "multiverse: error: unknown command '" << printable(word) << "'"
                << (hint.empty() ? " (commands: " + listed + "; a sweep runs with --experiments FILE)"
                                 : " (did you mean '" + hint + "'?)")
                << "\nRun 'multiverse --help' for the options.\n";
      return kExitUsageError;
    }
  }
  try {
    app.parse(argc, argv);
    if (sweep.threads > 0) sweep.threads = threadsWithinCores(sweep.threads);
    if (netsim.threads > 0) netsim.threads = threadsWithinCores(netsim.threads);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "multiverse: error: " << printable(e.what()) << "\nRun 'multiverse --help' for the options.\n";
    return kExitUsageError;
  }
  if (!dump_graph.empty()) {
    std::cout << describeTrainingGraph(dump_graph == "dot");
    return kExitOk;
  }
  if (!sweep_file.empty()) {
    try {
      return runSweep(sweep_file, sweep);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
      return kExitRunError;
    }
  }
  if (report->parsed()) {
    try {
      return runReport(report_dir, report_out);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
      return kExitRunError;
    }
  }
  if (export_chakra->parsed()) {
    try {
      return runExportChakra(export_file, export_out, export_format, export_layout, export_force);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
      return kExitRunError;
    }
  }
  if (validate->parsed() || net->parsed()) {
    try {
      return validate->parsed() ? runValidate(validate_file, validate_memory) : runNetsim(netsim_file, netsim);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
      return kExitRunError;
    }
  }
  std::cout << app.help();
  return kExitOk;
}

}  // namespace mv
