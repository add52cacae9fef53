/**
 * @file cli.hpp
 * The `multiverse` command line. User errors end here: they are printed with a hint and
 * turned into exit code 2; library code below never exits.
 */
#pragma once

namespace mv {

/// Exit codes of the `multiverse` executable.
enum ExitCode : int {
  kExitOk = 0,
  kExitRunError = 1,   ///< the simulation failed (an internal error or a resource limit)
  kExitUsageError = 2, ///< bad command line or bad input file
};

/// Parses the command line and runs what it asks for; returns the process exit code.
int runCli(int argc, char** argv);

}  // namespace mv
