/**
 * @file cli.cpp
 * Command-line parsing with CLI11 and dispatch to the commands.
 */
#include "experiments/cli.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "experiments/version.hpp"

namespace mv {

int runCli(int argc, char** argv) {
  CLI::App app{"Multiverse: simulates many LLM-training-cluster experiments side by side in one process.",
               "multiverse"};
  app.set_version_flag("--version", std::string("multiverse ") + kVersion + " (" + kBackends + ")");
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
  std::cout << app.help();
  return kExitOk;
}

}  // namespace mv
