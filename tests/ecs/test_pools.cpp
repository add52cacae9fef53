/**
 * @file test_pools.cpp
 * Pools whose memory follows use: a FreeStack hands out records never used before in
 * order, after the ones given back; a pool table (PoolArchetype) keeps no experiment ids
 * and its pages are committed only where records were written, also after the table is
 * grown and fitted (copyIntoZeroed).
 */
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "ecs/free_stack.hpp"
#include "ecs/world.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace mv;

namespace {

struct Record {
  uint64_t words[8] = {};  // 64 bytes, about a packet header
};
struct PoolRows : Archetype<Record> {
  static constexpr const char* kName = "PoolRows";
  static constexpr bool kStatic = true;
  static constexpr bool kPool = true;
};
struct NoConfig {};
using PoolWorld = World<NoConfig, PoolRows>;

TEST_CASE("a free stack hands out given-back records first, then never-used ones in order", "[pool]") {
  std::vector<uint32_t> links(8, 0);
  auto link = [&](uint32_t r) -> uint32_t& { return links[r]; };
  FreeStack s = FreeStack::withTaken(2, 8);  // records 0 and 1 are out from the start
  CHECK(s.freeCount(link) == 6);
  CHECK(s.pop(link) == 2u);
  CHECK(s.pop(link) == 3u);
  s.push(0, link);
  s.push(3, link);
  CHECK(s.freeCount(link) == 6);
  CHECK(s.pop(link) == 3u);  // last given back, first out
  CHECK(s.pop(link) == 0u);
  for (uint32_t r = 4; r < 8; ++r) CHECK(s.pop(link) == r);
  CHECK(s.pop(link) == kFreeStackEnd);
  CHECK(s.pop(link) == kFreeStackEnd);
  CHECK(s.freeCount(link) == 0);
  CHECK(s.everUsed() == 8);
  s.push(5, link);
  CHECK(s.freeCount(link) == 1);
  CHECK(s.pop(link) == 5u);
}

TEST_CASE("threads racing for a free stack's never-used records get each exactly once", "[pool]") {
  constexpr int64_t kRecords = 100'000;
  std::vector<uint32_t> links(kRecords, 0);
  auto link = [&](uint32_t r) -> uint32_t& { return links[r]; };
  FreeStack s = FreeStack::withTaken(0, kRecords);
  std::vector<std::vector<uint32_t>> got(4);
  std::vector<std::atomic<bool>> returned(kRecords);
#pragma omp parallel num_threads(4)
  {
    std::vector<uint32_t>& mine = got[static_cast<std::size_t>(omp_get_thread_num())];
    for (uint32_t r = s.pop(link); r != kFreeStackEnd; r = s.pop(link)) {
      const bool again = r % 1000 == 0 && !returned[r].exchange(true);
      mine.push_back(r);
      if (again) s.push(r, link);  // one in a thousand goes back once and is taken again
    }
  }
  std::vector<int> times(kRecords, 0);
  for (const auto& mine : got) {
    for (uint32_t r : mine) times[r] += 1;
  }
  // Every record is taken once, the ones given back twice (by any thread),
  // and none is left.
  int64_t wrong = 0;
  for (int64_t r = 0; r < kRecords; ++r) wrong += times[r] != (r % 1000 == 0 ? 2 : 1) ? 1 : 0;
  CHECK(wrong == 0);
  CHECK(s.freeCount(link) == 0);
  CHECK(s.everUsed() == kRecords);
}

#if defined(__linux__)
/// Bytes of [p, p + bytes) resident in memory (whole pages).
std::size_t residentBytes(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes + page - 1) / page * page;
  std::vector<unsigned char> in_core((end - first) / page);
  REQUIRE(mincore(reinterpret_cast<void*>(first), end - first, in_core.data()) == 0);
  return page * static_cast<std::size_t>(
                    std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

TEST_CASE("a pool table commits memory only where records were written, also after growing and fitting", "[pool]") {
  constexpr int64_t kRows = int64_t{1} << 20;  // 64 MiB of records per experiment
  PoolWorld w(2, TableCapacity{4, 0});
  auto& t = w.table<PoolRows>();
  const std::size_t empty = w.totalBytes();
  w.appendStatic<PoolRows>(0, kRows);
  // Experiment 0 writes its first 1,000 records, as a pool hands them out.
  for (int64_t r = 0; r < 1000; ++r) t.get<Record>(r).words[3] = static_cast<uint64_t>(r) + 1;
  w.appendStatic<PoolRows>(1, kRows);  // the table grows: experiment 0's records are copied
  for (int64_t r = 0; r < 1000; ++r) t.get<Record>(t.expBegin(1) + r).words[5] = 7;
  w.fitStaticTables();  // and copied again
  REQUIRE(t.rows == 2 * kRows);
  // The rows cost their component only: no experiment ids.
  CHECK(w.totalBytes() - empty == static_cast<std::size_t>(2 * kRows - 4) * sizeof(Record));
  CHECK(t.get<Record>(999).words[3] == 1000u);
  CHECK(t.get<Record>(1000).words[3] == 0u);
  CHECK(t.get<Record>(t.expBegin(1) + 999).words[5] == 7u);
  CHECK(t.get<Record>(t.expBegin(1) + 1000).words[5] == 0u);
  // 2 × 64 KB written; with 2 MiB huge pages at most two of them are committed per region
  // (a region's start need not fall on a huge page), against 128 MiB reserved.
  const std::size_t resident = residentBytes(t.column<Record>(), static_cast<std::size_t>(t.rows) * sizeof(Record));
  CHECK(resident >= 2 * 1000 * sizeof(Record));
  CHECK(resident <= 4 * kHugePageBytes);
}
#endif

}  // namespace
