/**
 * @file main.cpp
 * Entry point of the `multiverse` executable.
 */
#include "experiments/cli.hpp"
#include "experiments/run_sweep.hpp"

int main(int argc, char** argv) {
  mv::startMpi(&argc, &argv);
  const int code = mv::runCli(argc, argv);
  mv::stopMpi();
  return code;
}
