/**
 * @file cpu_executor.cpp
 * Non-template parts of the CPU backend.
 */
#include "kernels/cpu/cpu_executor.hpp"

#include <sched.h>

#include <fstream>
#include <string>
#include <thread>

namespace mv {

int defaultCpuThreads() { return omp_get_max_threads(); }

int threadsForLoad(int want, int cores, int runnable_others) {
  return std::max(1, std::min(want, cores - std::max(runnable_others, 0)));
}

int runnableOthers(int own) {
  // "0.52 0.58 0.59 3/612 12345": the fourth field is runnable/total scheduling entities,
  // the reading thread included.
  std::ifstream in("/proc/loadavg");
  double load[3];
  std::string fraction;
  if (!(in >> load[0] >> load[1] >> load[2] >> fraction)) return 0;
  const size_t slash = fraction.find('/');
  if (slash == std::string::npos) return 0;
  try {
    return std::max(0, std::stoi(fraction.substr(0, slash)) - std::max(own, 1));
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
