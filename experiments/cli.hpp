/**
 * @file cli.hpp
 * The `multiverse` command line. User errors end here: they are printed with a hint and
 * turned into exit code 2; library code below never exits.
 */
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace mv {

/// Exit codes of the `multiverse` executable.
enum ExitCode : int {
  kExitOk = 0,
  kExitRunError = 1,   ///< the simulation failed (an internal error or a resource limit)
  kExitUsageError = 2, ///< bad command line or bad input file
};

/// Parses the command line and runs what it asks for; returns the process exit code.
int runCli(int argc, char** argv);

/// Adds option `name` to `app`: a number of experiments, `auto` or a whole number from 0 to
/// 2^20, stored into `count` (-1 for auto, CpuExecutor::kAutoBlock for `--cpu-block`);
/// anything else is a usage error. `help` is its help text.
void addExperimentCountOption(CLI::App& app, int64_t& count, const std::string& name, const std::string& help);
/// Adds `--cpu-workers auto|N` (N from 1 to 1024) writing -1 (auto) or N into `workers`.
void addCpuWorkersOption(CLI::App& app, int& workers);

}  // namespace mv
