/**
 * @file main.cpp
 * Entry point of the `multiverse` executable.
 */
#include "experiments/cli.hpp"

int main(int argc, char** argv) { return mv::runCli(argc, argv); }
