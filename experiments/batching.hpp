/**
 * @file batching.hpp
 * How the sweep runner groups experiments: over workers (CUDA devices, MPI ranks) by
 * estimated cost, and, within a worker, into batches that fit the memory budget and the
 * batch size (`--max-memory`, `--batch-size`; docs/sweep.md).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mv {

/**
 * Splits items 0 .. costs.size()-1 into `parts` groups (at least one) of about equal total
 * cost: longest first, each to the least-loaded group (ties: the lowest group). Each group
 * lists its items longest first (ties: lowest index first).
 */
std::vector<std::vector<size_t>> splitLongestFirst(const std::vector<double>& costs, int parts);

/**
 * Cuts a sequence of items taking `memory[i]` bytes into consecutive batches of at most
 * `size` items (0 = any number) whose memory stays within `budget`; an item alone may
 * exceed the budget and gets a batch of its own. Returns each batch's item count.
 */
std::vector<size_t> batchLengths(const std::vector<int64_t>& memory, int64_t budget, int64_t size);

}  // namespace mv
