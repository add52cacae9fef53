/**
 * @file cpu_executor.cpp
 * Non-template parts of the CPU backend.
 */
#include "kernels/cpu/cpu_executor.hpp"

namespace mv {

int defaultCpuThreads() { return omp_get_max_threads(); }

}  // namespace mv
