/**
 * @file cli.cpp
 * Command-line parsing with CLI11 and dispatch to the commands.
 */
#include "experiments/cli.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "experiments/netsim.hpp"
#include "experiments/version.hpp"

namespace mv {

int runCli(int argc, char** argv) {
  CLI::App app{"Multiverse: simulates many LLM-training-cluster experiments side by side in one process.",
               "multiverse"};
  app.set_version_flag("--version", std::string("multiverse ") + kVersion + " (" + kBackends + ")");
  std::string dump_graph;
  app.add_option("--dump-graph", dump_graph, "Print the packet-level network's step graph (text or dot) and exit")
      ->check(CLI::IsMember({"text", "dot"}));
  NetsimOptions netsim;
  std::string netsim_file;
  CLI::App* net = app.add_subcommand("netsim", "Run a flow list on a topology at packet level (see docs/netsim.md)");
  net->add_option("config", netsim_file, "YAML file: topology, network, flows, experiments")->required();
  net->add_option("--out", netsim.out, "Results folder (default results/<name>)");
  net->add_option("--threads", netsim.threads, "CPU threads (default: all cores)")->check(CLI::Range(1, 1024));
  net->add_flag("--quiet", netsim.quiet, "Print nothing but errors");
  app.footer(
      "Backends in this build: " + std::string(kBackends) +
      "\nExit codes: 0 success, 1 simulation error, 2 bad command line or input.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "multiverse: error: " << e.what() << "\nRun 'multiverse --help' for the options.\n";
    return kExitUsageError;
  }
  if (!dump_graph.empty()) {
    std::cout << describeNetworkGraph(dump_graph == "dot");
    return kExitOk;
  }
  if (net->parsed()) {
    try {
      return runNetsim(netsim_file, netsim);
    } catch (const std::exception& e) {
      std::cerr << "multiverse: error: " << e.what() << "\n";
      return kExitRunError;
    }
  }
  std::cout << app.help();
  return kExitOk;
}

}  // namespace mv
