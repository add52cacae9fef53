/**
 * @file batching.cpp
 * Grouping experiments over workers and into batches.
 */
#include "experiments/batching.hpp"

#include <algorithm>
#include <numeric>

namespace mv {

std::vector<std::vector<size_t>> splitLongestFirst(const std::vector<double>& costs, int parts) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<size_t>> out(static_cast<size_t>(std::max(parts, 1)));
  std::vector<double> load(out.size(), 0.0);
  for (const size_t i : order) {
    const auto g = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[g] += costs[i];
    out[g].push_back(i);
  }
  return out;
}

std::vector<size_t> batchLengths(const std::vector<int64_t>& memory, int64_t budget, int64_t size) {
  std::vector<size_t> out;
  int64_t used = 0;
  for (const int64_t m : memory) {
    const bool full = !out.empty() && (used + m > budget || (size > 0 && static_cast<int64_t>(out.back()) == size));
    if (out.empty() || full) {
      out.push_back(0);
      used = 0;
    }
    ++out.back();
    used += m;
  }
  return out;
}

}  // namespace mv
