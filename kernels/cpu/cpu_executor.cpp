/**
 * @file cpu_executor.cpp
 * Non-template parts of the CPU backend.
 */
#include "kernels/cpu/cpu_executor.hpp"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace mv {

int defaultCpuThreads() { return omp_get_max_threads(); }

int availableCpuCores() { return omp_get_num_procs(); }

int threadsForLoad(int want, int cores, int runnable_others) {
  return std::max(1, std::min(want, cores - std::max(runnable_others, 0)));
}

namespace {

/// Threads of this process that are runnable now (state R in /proc/self/task/*/stat), at
/// least 1 (the caller); 1 where it cannot be read.
int ownRunnableThreads() {
  int running = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "tid (name) S ...": the state follows the last ')' (a name may hold one).
    const size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R') ++running;
  }
  return std::max(running, 1);
}

}  // namespace

int runnableOthers() {
  // "0.52 0.58 0.59 3/612 12345": the fourth field is runnable/total scheduling entities of
  // the machine, this process's included.
  std::ifstream in("/proc/loadavg");
  double load[3];
  std::string fraction;
  if (!(in >> load[0] >> load[1] >> load[2] >> fraction)) return 0;
  const size_t slash = fraction.find('/');
  if (slash == std::string::npos) return 0;
  try {
    return std::max(0, std::stoi(fraction.substr(0, slash)) - ownRunnableThreads());
  } catch (const std::exception&) {
    return 0;
  }
}

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace mv
