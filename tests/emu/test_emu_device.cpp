/**
 * @file test_emu_device.cpp
 * The emulated device itself: every virtual thread gets its own coordinates, a grid sync
 * orders the writes before it against the reads after it, a warp's lanes meet at a warp sync
 * and exchange values through shuffles, a team system's row gets one whole warp, device memory is closed to the
 * host outside launches and copies, the device mirror poisons the host world while the
 * device owns it and restores it on download, and an allocation beyond the device's memory
 * fails as on a GPU.
 */
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cuda/cuda_executor.cuh"
#include "tests/support/demo_world.hpp"

using namespace mv;

namespace {

__global__ void writeRanks(int64_t* out) {
  const CudaGridPolicy p;
  out[p.rank()] = p.count() * 1000 + p.rank();
}

/// Each thread writes its slot, syncs, then reads its right neighbour's, `rounds` times.
__global__ void ringShift(int64_t* slots, int64_t* seen, int rounds) {
  const CudaGridPolicy p;
  const int64_t n = p.count();
  const int64_t me = p.rank();
  int64_t sum = 0;
  for (int r = 0; r < rounds; ++r) {
    slots[me] = me + r * n;
    p.barrier();
    sum += slots[(me + 1) % n];
    p.barrier();
  }
  seen[me] = sum;
}

/// Per thread: its warp's lane-0 rank (broadcast), the warp's least value (minimum), the
/// sum of the lower lanes' values and of all (exclusiveSum), and what the next lane wrote
/// before a warp sync.
__global__ void warpOps(int64_t* out, int64_t* slots) {
  const CudaGridPolicy p;
  const WarpTeam team = p.team();
  const int64_t me = p.rank();
  const int64_t base = me - team.lane();
  slots[me] = 3 * me;
  team.sync();
  const int64_t next = slots[base + (team.lane() + 1) % WarpTeam::kSize];
  uint32_t total = 0;
  const uint32_t below = team.exclusiveSum(static_cast<uint32_t>(team.lane() + 1), total);
  int64_t* o = out + me * 5;
  o[0] = team.broadcast(me);
  o[1] = team.minimum((team.lane() * 13 + 7) % WarpTeam::kSize + base);
  o[2] = below;
  o[3] = total;
  o[4] = next;
}

/// parallelForTeams over `n` rows: every lane that runs row i adds one to hits[i] and its
/// lane bit to lanes[i].
__global__ void teamRows(int64_t n, uint32_t* hits, uint32_t* lanes) {
  const CudaGridPolicy p;
  parallelForTeams(p, n, [&](int64_t i, const auto& team) {
    atomicFetchAdd<uint32_t>(&hits[i], 1u);
    atomicFetchOr<uint32_t>(&lanes[i], 1u << team.lane());
  });
}

template <class T>
std::vector<T> download(const T* dev, std::size_t n) {
  std::vector<T> host(n);
  REQUIRE(cudaMemcpy(host.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

}  // namespace

TEST_CASE("every virtual thread of a launch has its own rank", "[emu]") {
  const dim3 grid(3);
  const dim3 block(96);
  const int64_t n = 3 * 96;
  int64_t* out = nullptr;
  REQUIRE(cudaMalloc(&out, n * sizeof(int64_t)) == cudaSuccess);
  void* args[] = {&out};
  REQUIRE(cudaLaunchKernel(writeRanks, grid, block, args, 0, nullptr) == cudaSuccess);
  const std::vector<int64_t> got = download(out, n);
  for (int64_t i = 0; i < n; ++i) CHECK(got[i] == n * 1000 + i);
  CHECK(cudaFree(out) == cudaSuccess);
}

TEST_CASE("a grid sync orders every write before it against every read after it", "[emu]") {
  int sms = 0;
  int per_sm = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ringShift, 128, 0) == cudaSuccess);
  const dim3 grid(static_cast<unsigned>(sms * per_sm));
  const dim3 block(128);
  const int64_t n = int64_t{sms} * per_sm * 128;
  CHECK(n >= 256);
  int64_t* slots = nullptr;
  int64_t* seen = nullptr;
  REQUIRE(cudaMalloc(&slots, n * sizeof(int64_t)) == cudaSuccess);
  REQUIRE(cudaMalloc(&seen, n * sizeof(int64_t)) == cudaSuccess);
  int rounds = 5;
  void* args[] = {&slots, &seen, &rounds};
  REQUIRE(cudaLaunchCooperativeKernel(ringShift, grid, block, args, 0, nullptr) == cudaSuccess);
  const std::vector<int64_t> got = download(seen, n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t expect = 0;
    for (int r = 0; r < rounds; ++r) expect += (i + 1) % n + r * n;
    REQUIRE(got[i] == expect);
  }
  SECTION("a cooperative launch larger than the device is refused") {
    const dim3 too_big(static_cast<unsigned>(sms * per_sm + 1));
    CHECK(cudaLaunchCooperativeKernel(ringShift, too_big, block, args, 0, nullptr) ==
          cudaErrorCooperativeLaunchTooLarge);
    CHECK(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge);
    CHECK(cudaGetLastError() == cudaSuccess);
  }
  CHECK(cudaFree(slots) == cudaSuccess);
  CHECK(cudaFree(seen) == cudaSuccess);
}

TEST_CASE("a warp's lanes meet at a warp sync and exchange values through shuffles", "[emu]") {
  const dim3 grid(2);
  const dim3 block(96);
  const int64_t n = 2 * 96;
  int64_t* out = nullptr;
  int64_t* slots = nullptr;
  REQUIRE(cudaMalloc(&out, n * 5 * sizeof(int64_t)) == cudaSuccess);
  REQUIRE(cudaMalloc(&slots, n * sizeof(int64_t)) == cudaSuccess);
  void* args[] = {&out, &slots};
  REQUIRE(cudaLaunchKernel(warpOps, grid, block, args, 0, nullptr) == cudaSuccess);
  const std::vector<int64_t> got = download(out, n * 5);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lane = i % 32;
    const int64_t base = i - lane;
    CHECK(got[i * 5 + 0] == base);
    CHECK(got[i * 5 + 1] == base);
    CHECK(got[i * 5 + 2] == lane * (lane + 1) / 2);
    CHECK(got[i * 5 + 3] == 32 * 33 / 2);
    CHECK(got[i * 5 + 4] == 3 * (base + (lane + 1) % 32));
  }
  CHECK(cudaFree(out) == cudaSuccess);
  CHECK(cudaFree(slots) == cudaSuccess);
}

TEST_CASE("a team system's row is run by the 32 lanes of one warp", "[emu]") {
  for (const int64_t rows : {int64_t{5}, int64_t{37}}) {  // fewer rows than the 6 warps, and more
    uint32_t* hits = nullptr;
    uint32_t* lanes = nullptr;
    REQUIRE(cudaMalloc(&hits, rows * sizeof(uint32_t)) == cudaSuccess);
    REQUIRE(cudaMalloc(&lanes, rows * sizeof(uint32_t)) == cudaSuccess);
    const std::vector<uint32_t> zeros(static_cast<std::size_t>(rows), 0u);
    REQUIRE(cudaMemcpy(hits, zeros.data(), rows * sizeof(uint32_t), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(lanes, zeros.data(), rows * sizeof(uint32_t), cudaMemcpyHostToDevice) == cudaSuccess);
    int64_t n = rows;
    void* args[] = {&n, &hits, &lanes};
    REQUIRE(cudaLaunchKernel(teamRows, dim3(2), dim3(96), args, 0, nullptr) == cudaSuccess);
    const std::vector<uint32_t> h = download(hits, static_cast<std::size_t>(rows));
    const std::vector<uint32_t> l = download(lanes, static_cast<std::size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      CHECK(h[i] == 32u);
      CHECK(l[i] == 0xffffffffu);
    }
    CHECK(cudaFree(hits) == cudaSuccess);
    CHECK(cudaFree(lanes) == cudaSuccess);
  }
}

TEST_CASE("device memory starts as poison and copies need the right direction", "[emu]") {
  unsigned char* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 100) == cudaSuccess);
  const std::vector<unsigned char> fresh = download(dev, 100);
  for (unsigned char b : fresh) CHECK(b == 0xA5);
  std::vector<unsigned char> host(100, 7);
  CHECK(cudaMemcpy(host.data(), dev, 100, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(dev, host.data(), 100, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(download(dev, 100) == host);
  CHECK(cudaMemcpy(host.data(), dev, 101, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaFree(dev) == cudaSuccess);
  CHECK(cudaFree(dev) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("allocations beyond the device's memory fail and free memory is reported", "[emu]") {
  std::size_t free = 0;
  std::size_t total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  CHECK(free <= total);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, total + 1) == cudaErrorMemoryAllocation);
  cudaGetLastError();
  void* q = nullptr;
  REQUIRE(cudaMalloc(&q, 1 << 20) == cudaSuccess);
  std::size_t after = 0;
  REQUIRE(cudaMemGetInfo(&after, &total) == cudaSuccess);
  CHECK(after == free - (1 << 20));
  CHECK(cudaFree(q) == cudaSuccess);
}

TEST_CASE("the device mirror poisons the host world while the device owns it", "[emu]") {
  demo::DemoWorld world(2, TableCapacity{64, 64});
  for (ExpId e = 0; e < 2; ++e) demo::seedExperiment(world, e, 8, 100, 3);
  world.commitAllHost();
  auto& walkers = world.table<demo::Walker>();
  const std::vector<demo::Position> before(walkers.template column<demo::Position>(),
                                           walkers.template column<demo::Position>() + walkers.rows);
  {
    DeviceWorld<demo::DemoWorld> dev(world);
    const auto* bytes = reinterpret_cast<const unsigned char*>(walkers.template column<demo::Position>());
    CHECK(std::memcmp(bytes, before.data(), before.size() * sizeof(demo::Position)) == 0);  // current after upload
    dev.releaseHost();
    for (std::size_t i = 0; i < before.size() * sizeof(demo::Position); ++i) REQUIRE(bytes[i] == 0xA5);
    dev.pullAll();
  }
  const std::vector<demo::Position> after(walkers.template column<demo::Position>(),
                                          walkers.template column<demo::Position>() + walkers.rows);
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].x == before[i].x);
}

TEST_CASE("a world larger than the free device memory fails cleanly and frees what it took", "[emu]") {
  std::size_t free0 = 0;
  std::size_t total = 0;
  REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  REQUIRE(total <= (std::size_t{256} << 20));  // ctest runs this program with MV_EMU_MEMORY=64 MiB
  void* filler = nullptr;
  const std::size_t left = std::size_t{64} << 10;
  REQUIRE(cudaMalloc(&filler, free0 - left) == cudaSuccess);
  std::size_t free1 = 0;
  REQUIRE(cudaMemGetInfo(&free1, &total) == cudaSuccess);
  demo::DemoWorld world(4, TableCapacity{4096, 4096});
  for (ExpId e = 0; e < 4; ++e) demo::seedExperiment(world, e, 64, 100, 5);
  world.commitAllHost();
  REQUIRE(world.totalBytes() > left);
  const auto positions = [&] {
    auto& t = world.table<demo::Walker>();
    std::vector<int64_t> xs;
    for (int64_t row = 0; row < t.rows; ++row) xs.push_back(t.template get<demo::Position>(row).x);
    return xs;
  };
  const std::vector<int64_t> before = positions();
  CHECK_THROWS_WITH(DeviceWorld<demo::DemoWorld>(world),
                    Catch::Contains("cudaErrorMemoryAllocation") && Catch::Contains("bytes"));
  cudaGetLastError();
  std::size_t free2 = 0;
  REQUIRE(cudaMemGetInfo(&free2, &total) == cudaSuccess);
  CHECK(free2 == free1);
  CHECK(positions() == before);  // the host world is untouched (no poison before a full upload)
  CHECK(cudaFree(filler) == cudaSuccess);
}
