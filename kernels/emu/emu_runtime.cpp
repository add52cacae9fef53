/**
 * @file emu_runtime.cpp
 * The emulated device behind kernels/emu/include/cuda_runtime.h.
 *
 * Launches: every virtual thread of the grid is a fiber (Boost.Context) on one of a few
 * persistent host workers, each worker owning a contiguous range of virtual threads. A
 * worker resumes each of its fibers in turn; a fiber runs until it reaches a grid-wide sync
 * (it parks) or returns. When every worker has run a round, the round's outcome is checked:
 * all returned (the launch is over), all parked (the next round releases them), or some
 * returned while others wait at the sync, which would hang a GPU and fails here at once.
 * Workers own whole warps and resume them warp by warp: a lane that reaches __syncwarp parks
 * until every lane of its warp has, and shuffles exchange values through warp syncs.
 * A watchdog ends the process when a launch runs longer than MV_EMU_WATCHDOG_S seconds.
 *
 * Memory: every cudaMalloc is its own mapping, filled with a poison byte (device memory
 * starts as garbage) and readable only while a kernel runs or a cudaMemcpy touches it, so
 * host code that dereferences a device pointer faults. DeviceWorld poisons its host
 * buffers while the device owns them (poisonHost), so a kernel that follows a host pointer
 * the mirror forgot to patch reads garbage and the comparison with the CPU fails.
 *
 * Settings (environment): MV_EMU_SMS (default 2) multiprocessors, MV_EMU_BLOCKS_PER_SM
 * (default 1) resident blocks of any size, so a 256-thread megakernel runs 512 virtual
 * threads; MV_EMU_WORKERS host workers (default 2); MV_EMU_MEMORY device bytes (default
 * 8 GiB); MV_EMU_WATCHDOG_S (default 600); MV_EMU_PROFILE, a file that receives at exit,
 * per graph phase, the rounds (grid syncs) and the busiest and mean virtual thread's running time;
 * MV_EMU_FAIL_LAUNCH=N, every launch after the first N fails (a device fault, for tests);
 * MV_EMU_KERNEL_STACK=B (default 0), the stack every kernel is taken to need per thread, in
 * bytes: cudaFuncGetAttributes reports it as localSizeBytes, and a launch while the device's
 * stack limit (cudaLimitStackSize, 1,024 B at start as on a GPU) is below it fails with
 * cudaErrorIllegalAddress, as a kernel that overflows its stack does on a GPU.
 */
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cuda_runtime.h"
#include "ecs/policy.hpp"

namespace mv::emu {
namespace {

constexpr unsigned char kPoison = 0xA5;
constexpr std::size_t kFiberStackBytes = std::size_t{256} << 10;
constexpr std::size_t kDefaultStackBytes = 1024;  ///< a GPU thread's stack limit at start
constexpr std::size_t kMaxStackBytes = std::size_t{1} << 20;

long envLong(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "emulated device: %s=%s is not an integer in [%ld, %ld]\n", name, v, lo, hi);
    std::exit(2);
  }
  return x;
}

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "emulated device: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::size_t pageBytes() {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t roundToPages(std::size_t bytes) {
  const std::size_t p = pageBytes();
  return (std::max<std::size_t>(bytes, 1) + p - 1) / p * p;
}

// --- device memory ----------------------------------------------------------------------------

/// Every live device allocation, readable only while the device uses it.
class Memory {
 public:
  explicit Memory(std::size_t capacity) : capacity_(capacity) {}

  cudaError_t allocate(void** ptr, std::size_t bytes) {
    const std::lock_guard lock(m_);
    const std::size_t mapped = roundToPages(bytes);
    if (used_ + mapped > capacity_) return cudaErrorMemoryAllocation;
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return cudaErrorMemoryAllocation;
    std::memset(p, kPoison, mapped);
    if (!open_) protect(p, mapped, PROT_NONE);
    blocks_[reinterpret_cast<std::uintptr_t>(p)] = Block{bytes, mapped};
    used_ += mapped;
    *ptr = p;
    return cudaSuccess;
  }

  cudaError_t release(void* ptr) {
    if (ptr == nullptr) return cudaSuccess;
    const std::lock_guard lock(m_);
    const auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == blocks_.end()) return cudaErrorInvalidValue;
    munmap(ptr, it->second.mapped);
    used_ -= it->second.mapped;
    blocks_.erase(it);
    return cudaSuccess;
  }

  /// The mapping (start, length) of the allocation holding [p, p + bytes), or {0, 0} when
  /// that range is not inside one allocation.
  std::pair<std::uintptr_t, std::size_t> find(const void* p, std::size_t bytes) const {
    const std::lock_guard lock(m_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return {0, 0};
    --it;
    if (a + bytes > it->first + it->second.bytes) return {0, 0};
    return {it->first, it->second.mapped};
  }

  /// Opens every allocation to the virtual threads (a launch) or closes them again.
  void setOpen(bool open) {
    const std::lock_guard lock(m_);
    open_ = open;
    for (const auto& [base, block] : blocks_) {
      protect(reinterpret_cast<void*>(base), block.mapped, open ? PROT_READ | PROT_WRITE : PROT_NONE);
    }
  }

  /// Copies with the device side opened for the copy only.
  cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const auto d = find(dst, bytes);
    const auto s = find(src, bytes);
    if ((dst_dev && d.first == 0) || (src_dev && s.first == 0) || (!dst_dev && d.first != 0) ||
        (!src_dev && s.first != 0)) {
      return cudaErrorInvalidValue;
    }
    const std::lock_guard lock(m_);
    if (!open_) {
      if (dst_dev) protect(reinterpret_cast<void*>(d.first), d.second, PROT_READ | PROT_WRITE);
      if (src_dev) protect(reinterpret_cast<void*>(s.first), s.second, PROT_READ);
    }
    if (bytes > 0) std::memmove(dst, src, bytes);
    if (!open_) {
      if (dst_dev) protect(reinterpret_cast<void*>(d.first), d.second, PROT_NONE);
      if (src_dev) protect(reinterpret_cast<void*>(s.first), s.second, PROT_NONE);
    }
    return cudaSuccess;
  }

  std::size_t capacity() const { return capacity_; }
  std::size_t used() const {
    const std::lock_guard lock(m_);
    return used_;
  }

 private:
  static void protect(void* p, std::size_t bytes, int prot) {
    if (mprotect(p, bytes, prot) != 0) fatal("mprotect failed: " + std::string(std::strerror(errno)));
  }

  struct Block {
    std::size_t bytes;   ///< as asked for
    std::size_t mapped;  ///< whole pages
  };

  mutable std::mutex m_;
  std::map<std::uintptr_t, Block> blocks_;
  std::size_t capacity_;
  std::size_t used_ = 0;
  bool open_ = false;
};

// --- fibers ------------------------------------------------------------------------------------

/// Fiber stacks reused across launches, one cache per host worker (a fiber is created and
/// destroyed on the worker that runs it). The first kGuardedStacks of a worker have a guard
/// page (a stack overflow faults); past them (GPU-wide grids: 33,792 threads for an H100)
/// stacks come unguarded, kStacksPerChunk to a mapping, since every guard page costs the
/// process two memory mappings and the kernel allows about 65,000.
class StackCache {
 public:
  static constexpr std::size_t kGuardedStacks = 8192;
  static constexpr std::size_t kStacksPerChunk = 64;

  boost::context::stack_context allocate() {
    if (!free_.empty()) {
      boost::context::stack_context sc = free_.back();
      free_.pop_back();
      return sc;
    }
    if (guarded_count_ < kGuardedStacks) {
      ++guarded_count_;
      return guarded_.allocate();
    }
    if (chunk_left_ == 0) {
      void* p = mmap(nullptr, kFiberStackBytes * kStacksPerChunk, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) fatal("out of memory for fiber stacks");
      chunks_.push_back(static_cast<char*>(p));
      chunk_left_ = kStacksPerChunk;
    }
    --chunk_left_;
    boost::context::stack_context sc;
    sc.size = kFiberStackBytes;
    sc.sp = chunks_.back() + kFiberStackBytes * (chunk_left_ + 1);  // stacks grow down from sp
    unguarded_.insert(sc.sp);
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) { free_.push_back(sc); }
  ~StackCache() {
    for (boost::context::stack_context& sc : free_) {
      if (unguarded_.count(sc.sp) == 0) guarded_.deallocate(sc);
    }
    for (char* c : chunks_) munmap(c, kFiberStackBytes * kStacksPerChunk);
  }

 private:
  boost::context::protected_fixedsize_stack guarded_{kFiberStackBytes};
  std::size_t guarded_count_ = 0;
  std::vector<char*> chunks_;
  std::size_t chunk_left_ = 0;
  std::unordered_set<void*> unguarded_;
  std::vector<boost::context::stack_context> free_;
};

thread_local StackCache* tls_stacks = nullptr;

/// The allocator Boost.Context is given: forwards to this worker's cache.
struct CachedStack {
  boost::context::stack_context allocate() { return tls_stacks->allocate(); }
  void deallocate(boost::context::stack_context& sc) { tls_stacks->deallocate(sc); }
};

struct Launch;

/// Where a virtual thread that has not returned waits.
enum class Park : uint8_t { kNone, kGrid, kWarp };

/// One virtual thread.
struct VirtualThread {
  ThreadCoords coords;
  Launch* launch = nullptr;
  boost::context::fiber self;  ///< resumes the thread
  boost::context::fiber back;  ///< inside the thread: returns to its worker
  bool returned = false;
  Park parked = Park::kNone;   ///< at a grid sync (until the next round) or a warp sync
  const char* node = nullptr;  ///< graph node whose phase the thread's next sync ends
  int phase = 0;
  int lane = 0;                   ///< within its warp
  int warp_lanes = 0;             ///< lanes of its warp (32 but at the end of a block of another size)
  VirtualThread* warp = nullptr;  ///< lane 0 of its warp (the warp's lanes are consecutive)
  uint64_t shuffle = 0;           ///< the value this lane offers a warp shuffle
  int64_t round_ns = 0;           ///< time it ran in this round (profiled launches)
};

/// What one worker saw in a round: its virtual threads' busiest and total running time,
/// and a warp whose lanes disagreed about a warp sync.
struct WorkerRound {
  int64_t max_ns = 0;
  int64_t sum_ns = 0;
  const char* node = nullptr;
  int phase = 0;
  std::string error;
};

/// The work between grid syncs, by the graph phase the sync ends (MV_EMU_PROFILE).
class Profile {
 public:
  void add(const std::string& label, int64_t max_ns, double mean_ns) {
    const std::lock_guard lock(m_);
    Entry& e = entries_[label];
    e.rounds += 1;
    e.max_ns += static_cast<double>(max_ns);
    e.mean_ns += mean_ns;
  }
  void addLaunch(int64_t threads) {
    const std::lock_guard lock(m_);
    ++launches_;
    threads_ = std::max(threads_, threads);
  }
  /// Writes the table to `path`: per label the rounds and the sums over them of the busiest
  /// thread's time and the mean thread's time.
  void write(const char* path, int workers) const {
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
      std::fprintf(stderr, "emulated device: cannot write the profile to %s\n", path);
      return;
    }
    std::fprintf(f, "# emulated-device profile: %lld launches, up to %lld virtual threads on %d workers\n",
                 static_cast<long long>(launches_), static_cast<long long>(threads_), workers);
    std::fprintf(f, "# a round is the work between two grid syncs, filed under the graph phase its sync ends\n");
    std::fprintf(f, "%-32s %10s %14s %14s %9s\n", "phase", "rounds", "busiest_ms", "mean_ms", "ratio");
    Entry total;
    for (const auto& [label, e] : entries_) {
      std::fprintf(f, "%-32s %10lld %14.3f %14.3f %9.1f\n", label.c_str(), static_cast<long long>(e.rounds),
                   e.max_ns / 1e6, e.mean_ns / 1e6, e.mean_ns > 0 ? e.max_ns / e.mean_ns : 0.0);
      total.rounds += e.rounds;
      total.max_ns += e.max_ns;
      total.mean_ns += e.mean_ns;
    }
    std::fprintf(f, "%-32s %10lld %14.3f %14.3f %9.1f\n", "all", static_cast<long long>(total.rounds),
                 total.max_ns / 1e6, total.mean_ns / 1e6, total.mean_ns > 0 ? total.max_ns / total.mean_ns : 0.0);
    std::fclose(f);
  }

 private:
  struct Entry {
    int64_t rounds = 0;
    double max_ns = 0;
    double mean_ns = 0;
  };
  mutable std::mutex m_;
  std::map<std::string, Entry> entries_;
  int64_t launches_ = 0;
  int64_t threads_ = 0;
};

thread_local VirtualThread* tls_thread = nullptr;

struct Launch {
  const char* kind = "";
  dim3 grid, block;
  bool cooperative = false;
  ThreadBody body = nullptr;
  const void* call = nullptr;
  int64_t threads = 0;
  int workers = 0;
  std::atomic<int64_t> returned{0};
  int64_t rounds = 0;
  bool over = false;
  std::string error;
  Profile* profile = nullptr;             ///< null: not profiled
  std::vector<WorkerRound> worker_rounds;  ///< this round, one per worker
};

/// The host's monotonic clock (a vDSO read, about 20 ns; the thread's CPU-time clock is a
/// system call of about 0.5 us, which swamped the lanes of warps that meet at warp syncs
/// every few instructions). It counts the time the OS gives the core to someone else too:
/// profile on an otherwise idle machine.
int64_t clockNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

/// Resumes virtual thread t until its next sync or its end; with a profile, adds the time
/// it ran to its round's.
void resume(VirtualThread& t, bool timed) {
  tls_thread = &t;
  if (timed) {
    const int64_t start = clockNs();
    t.self = std::move(t.self).resume();
    t.round_ns += clockNs() - start;
  } else {
    t.self = std::move(t.self).resume();
  }
  tls_thread = nullptr;
}

/// Runs each thread of `mine` that has not returned up to its next grid sync or its end,
/// warp by warp (`warps`: the index in `mine` of each warp's lane 0, then mine.size()): a
/// lane that reaches a warp sync waits until every lane of its warp has, then they all go on.
/// A warp sync that some lane of the warp never reaches (it returned or waits at a grid sync)
/// would hang a GPU: the round reports it. With a profile, files the worker's busiest and
/// total thread time in `seen`.
void runRound(std::vector<VirtualThread>& mine, const std::vector<std::size_t>& warps, bool timed, WorkerRound& seen) {
  seen = WorkerRound{};
  for (std::size_t w = 0; w + 1 < warps.size(); ++w) {
    VirtualThread* first = mine.data() + warps[w];
    VirtualThread* last = mine.data() + warps[w + 1];
    for (VirtualThread* t = first; t != last; ++t) {
      t->parked = Park::kNone;
      t->round_ns = 0;
    }
    for (;;) {
      for (VirtualThread* t = first; t != last; ++t) {
        if (!t->returned && t->parked == Park::kNone) resume(*t, timed);
      }
      const auto at_warp = std::count_if(first, last, [](const VirtualThread& t) { return t.parked == Park::kWarp; });
      if (at_warp == 0) break;
      if (at_warp != last - first) {
        seen.error = "warp sync divergence: " + std::to_string(at_warp) + " of the " + std::to_string(last - first) +
                     " lanes of the warp of block " + std::to_string(first->coords.block_idx.x) + " thread " +
                     std::to_string(first->coords.thread_idx.x) +
                     " wait at a warp sync the others never reach (a GPU would hang)";
        return;
      }
      for (VirtualThread* t = first; t != last; ++t) t->parked = Park::kNone;
    }
    if (!timed) continue;
    for (VirtualThread* t = first; t != last; ++t) {
      seen.max_ns = std::max(seen.max_ns, t->round_ns);
      seen.sum_ns += t->round_ns;
      if (seen.node == nullptr && !t->returned) {
        seen.node = t->node;
        seen.phase = t->phase;
      }
    }
  }
}

// --- the device --------------------------------------------------------------------------------

class Device {
 public:
  Device()
      : sms_(static_cast<int>(envLong("MV_EMU_SMS", 2, 1, 4096))),
        blocks_per_sm_(static_cast<int>(envLong("MV_EMU_BLOCKS_PER_SM", 1, 1, 64))),
        workers_(static_cast<int>(envLong("MV_EMU_WORKERS", 2, 1, 256))),
        watchdog_seconds_(envLong("MV_EMU_WATCHDOG_S", 600, 1, 86400)),
        memory_(static_cast<std::size_t>(envLong("MV_EMU_MEMORY", long{8} << 30, 1 << 20, long{1} << 46))) {
    for (int w = 0; w < workers_; ++w) pool_.emplace_back([this, w] { workerLoop(w); });
  }
  ~Device() {
    if (profile_path_ != nullptr) profile_.write(profile_path_, workers_);
    {
      const std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : pool_) t.join();
  }

  int sms() const { return sms_; }
  /// MV_EMU_FAIL_LAUNCH=N: after N launches every launch fails, as after a device fault.
  bool failLaunch() {
    if (fail_after_ < 0) return false;
    return launches_.fetch_add(1) >= fail_after_;
  }
  int blocksPerSm() const { return blocks_per_sm_; }
  Memory& memory() { return memory_; }
  /// The stack each kernel needs per thread (MV_EMU_KERNEL_STACK) and the device's limit.
  std::size_t kernelStack() const { return kernel_stack_; }
  std::size_t stackLimit() const { return stack_limit_.load(); }
  void setStackLimit(std::size_t bytes) { stack_limit_.store(bytes); }

  cudaError_t launch(Launch& l) {
    l.workers = workers_;
    l.worker_rounds.assign(static_cast<std::size_t>(workers_), WorkerRound{});
    if (profile_path_ != nullptr) {
      l.profile = &profile_;
      profile_.addLaunch(l.threads);
    }
    const std::lock_guard serial(launch_m_);
    memory_.setOpen(true);
    std::barrier round_end(workers_, RoundCheck{&l});
    {
      const std::lock_guard lock(m_);
      job_ = &l;
      barrier_ = &round_end;
      done_workers_ = 0;
      ++generation_;
    }
    cv_.notify_all();
    std::unique_lock lock(m_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(watchdog_seconds_);
    if (!done_cv_.wait_until(lock, deadline, [&] { return done_workers_ == workers_; })) {
      fatal(std::string("watchdog: a ") + l.kind + " launch of " + std::to_string(l.threads) +
            " virtual threads did not finish in " + std::to_string(watchdog_seconds_) + " s (grid sync round " +
            std::to_string(l.rounds) + ", " + std::to_string(l.returned.load()) +
            " threads returned): a stuck barrier or an endless loop");
    }
    job_ = nullptr;
    lock.unlock();
    memory_.setOpen(false);
    if (!l.error.empty()) fatal(l.error);
    return cudaSuccess;
  }

 private:
  /// Runs once per round, after every worker has run its fibers.
  struct RoundCheck {
    Launch* l;
    void operator()() noexcept {
      ++l->rounds;
      for (const WorkerRound& r : l->worker_rounds) {
        if (!r.error.empty() && l->error.empty()) l->error = r.error;
      }
      if (!l->error.empty()) {
        l->over = true;
        return;
      }
      const int64_t returned = l->returned.load();
      if (l->profile != nullptr) fileRound(*l, returned == l->threads);
      if (returned == l->threads) {
        l->over = true;
      } else if (returned > 0) {
        l->error = std::string("grid barrier divergence in a ") + l->kind + " launch: " + std::to_string(returned) +
                   " of " + std::to_string(l->threads) + " virtual threads returned while the others wait at grid " +
                   "sync round " + std::to_string(l->rounds) + " (a GPU would hang)";
        l->over = true;
      } else if (!l->cooperative) {
        l->error = std::string("grid sync in a ") + l->kind + " (non-cooperative) launch";
        l->over = true;
      }
    }
  };

  /// Files the round that just ended in the launch's profile.
  static void fileRound(const Launch& l, bool last) {
    int64_t max_ns = 0;
    int64_t sum_ns = 0;
    const char* node = nullptr;
    int phase = 0;
    for (const WorkerRound& r : l.worker_rounds) {
      max_ns = std::max(max_ns, r.max_ns);
      sum_ns += r.sum_ns;
      if (node == nullptr && r.node != nullptr) {
        node = r.node;
        phase = r.phase;
      }
    }
    const std::string label = last ? std::string("(kernel end)")
                              : node == nullptr ? std::string("(unnamed sync)")
                                                : std::string(node) + ":" + std::to_string(phase);
    l.profile->add(label, max_ns, static_cast<double>(sum_ns) / static_cast<double>(l.threads));
  }

  void workerLoop(int w) {
    StackCache stacks;
    tls_stacks = &stacks;
    uint64_t seen = 0;
    for (;;) {
      Launch* l = nullptr;
      std::barrier<RoundCheck>* round_end = nullptr;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        l = job_;
        round_end = barrier_;
      }
      runLaunch(*l, *round_end, w);
      {
        const std::lock_guard lock(m_);
        ++done_workers_;
      }
      done_cv_.notify_all();
    }
  }

  /// Runs worker w's share of the launch: whole warps (32 consecutive threads of a block,
  /// fewer at the end of a block whose size is not a multiple of 32), as many as its
  /// neighbours' give or take one.
  static void runLaunch(Launch& l, std::barrier<RoundCheck>& round_end, int w) {
    const int64_t per_block = int64_t{l.block.x} * l.block.y * l.block.z;
    const int64_t warps_per_block = (per_block + kWarpLanes - 1) / kWarpLanes;
    const int64_t warps = l.threads / per_block * warps_per_block;
    const auto first_thread = [&](int64_t warp) {
      return warp / warps_per_block * per_block + std::min(warp % warps_per_block * kWarpLanes, per_block);
    };
    const int64_t warp_begin = partBegin(warps, l.workers, w);
    const int64_t warp_end = partBegin(warps, l.workers, w + 1);
    const int64_t begin = first_thread(warp_begin);
    const int64_t end = warp_end == warps ? l.threads : first_thread(warp_end);
    std::vector<VirtualThread> mine(static_cast<std::size_t>(end - begin));
    std::vector<std::size_t> warp_starts;
    for (int64_t g = warp_begin; g < warp_end; ++g)
      warp_starts.push_back(static_cast<std::size_t>(first_thread(g) - begin));
    warp_starts.push_back(mine.size());
    for (int64_t i = begin; i < end; ++i) {
      VirtualThread& t = mine[static_cast<std::size_t>(i - begin)];
      const int64_t b = i / per_block;
      const int64_t r = i % per_block;
      t.coords.block_dim = l.block;
      t.coords.grid_dim = l.grid;
      t.coords.block_idx = uint3{static_cast<unsigned>(b % l.grid.x), static_cast<unsigned>(b / l.grid.x % l.grid.y),
                                 static_cast<unsigned>(b / l.grid.x / l.grid.y)};
      t.coords.thread_idx = uint3{static_cast<unsigned>(r % l.block.x), static_cast<unsigned>(r / l.block.x % l.block.y),
                                  static_cast<unsigned>(r / l.block.x / l.block.y)};
      t.lane = static_cast<int>(r % kWarpLanes);
      t.warp_lanes = static_cast<int>(std::min<int64_t>(kWarpLanes, per_block - (r - t.lane)));
      t.warp = &t - t.lane;
      t.launch = &l;
      t.self = boost::context::fiber(std::allocator_arg, CachedStack{}, [&t](boost::context::fiber&& back) {
        t.back = std::move(back);
        t.launch->body(t.launch->call);
        t.returned = true;
        t.launch->returned.fetch_add(1);
        return std::move(t.back);
      });
    }
    while (!l.over) {
      runRound(mine, warp_starts, l.profile != nullptr, l.worker_rounds[static_cast<std::size_t>(w)]);
      round_end.arrive_and_wait();
    }
    // Threads still parked (after an error) are unwound when their fibers are destroyed.
  }

  int sms_;
  int blocks_per_sm_;
  int workers_;
  long watchdog_seconds_;
  Memory memory_;
  const char* profile_path_ = std::getenv("MV_EMU_PROFILE");
  long fail_after_ = envLong("MV_EMU_FAIL_LAUNCH", -1, 0, long{1} << 40);
  std::size_t kernel_stack_ =
      static_cast<std::size_t>(envLong("MV_EMU_KERNEL_STACK", 0, 0, static_cast<long>(kMaxStackBytes)));
  std::atomic<std::size_t> stack_limit_{kDefaultStackBytes};
  std::atomic<long> launches_{0};
  Profile profile_;
  std::mutex launch_m_;
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;
  Launch* job_ = nullptr;
  std::barrier<RoundCheck>* barrier_ = nullptr;
  int done_workers_ = 0;
  bool stop_ = false;
  std::vector<std::thread> pool_;
};

Device& device() {
  static Device d;
  return d;
}

thread_local cudaError_t tls_last_error = cudaSuccess;
thread_local int tls_device = 0;

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}

}  // namespace

const ThreadCoords& coords() {
  if (tls_thread == nullptr) fatal("blockIdx/threadIdx read outside a kernel");
  return tls_thread->coords;
}

void nameRound(const char* node, int phase) {
  if (tls_thread == nullptr) fatal("nameRound outside a kernel");
  tls_thread->node = node;
  tls_thread->phase = phase;
}

void gridSync() {
  VirtualThread* t = tls_thread;
  if (t == nullptr) fatal("grid sync outside a kernel");
  t->parked = Park::kGrid;
  t->back = std::move(t->back).resume();
  tls_thread = t;
}

void warpSync() {
  VirtualThread* t = tls_thread;
  if (t == nullptr) fatal("__syncwarp outside a kernel");
  t->parked = Park::kWarp;
  t->back = std::move(t->back).resume();
  tls_thread = t;
}

int laneId() {
  if (tls_thread == nullptr) fatal("a warp shuffle outside a kernel");
  return tls_thread->lane;
}

uint64_t warpShuffle(uint64_t value, int src) {
  VirtualThread* t = tls_thread;
  if (t == nullptr) fatal("a warp shuffle outside a kernel");
  if (src < 0 || src >= t->warp_lanes) fatal("a warp shuffle from lane " + std::to_string(src));
  t->shuffle = value;
  warpSync();
  const uint64_t got = t->warp[src].shuffle;
  warpSync();  // no lane offers its next value before every lane has read this one
  return got;
}

void trap() {
  const VirtualThread* t = tls_thread;
  if (t == nullptr) fatal("__trap() on the host");
  fatal("__trap() in block " + std::to_string(t->coords.block_idx.x) + " thread " +
        std::to_string(t->coords.thread_idx.x));
}

int blocksPerSm(int /*block*/) {
  return device().blocksPerSm();
}

std::size_t kernelStackBytes() {
  return device().kernelStack();
}

cudaError_t launch(const char* kind, dim3 grid, dim3 block, bool cooperative, ThreadBody body, const void* call) {
  Device& d = device();
  const int64_t blocks = int64_t{grid.x} * grid.y * grid.z;
  const int64_t per_block = int64_t{block.x} * block.y * block.z;
  if (blocks <= 0 || per_block <= 0 || per_block > 1024) return record(cudaErrorInvalidValue);
  if (cooperative && blocks > int64_t{d.sms()} * d.blocksPerSm()) return record(cudaErrorCooperativeLaunchTooLarge);
  if (d.failLaunch()) return record(cudaErrorLaunchFailure);
  if (d.kernelStack() > d.stackLimit()) return record(cudaErrorIllegalAddress);
  Launch l;
  l.kind = kind;
  l.grid = grid;
  l.block = block;
  l.cooperative = cooperative;
  l.body = body;
  l.call = call;
  l.threads = blocks * per_block;
  return record(d.launch(l));
}

void poisonHost(void* host, std::size_t bytes) {
  if (bytes > 0) std::memset(host, kPoison, bytes);
}

}  // namespace mv::emu

using mv::emu::device;
using mv::emu::record;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  if (dev != 0) return record(cudaErrorInvalidDevice);
  mv::emu::tls_device = dev;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* dev) {
  *dev = mv::emu::tls_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int dev) {
  if (dev != 0) return record(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "Multiverse emulated device (%d SMs, host fibers)", device().sms());
  prop->totalGlobalMem = device().memory().capacity();
  prop->multiProcessorCount = device().sms();
  prop->cooperativeLaunch = 1;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int dev) {
  if (dev != 0) return record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = device().sms(); return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrCooperativeLaunch: *value = 1; return cudaSuccess;
    default: return record(cudaErrorInvalidValue);
  }
}

cudaError_t cudaDeviceGetLimit(std::size_t* value, cudaLimit limit) {
  if (limit != cudaLimitStackSize) return record(cudaErrorUnsupportedLimit);
  *value = device().stackLimit();
  return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(cudaLimit limit, std::size_t value) {
  if (limit != cudaLimitStackSize) return record(cudaErrorUnsupportedLimit);
  if (value > mv::emu::kMaxStackBytes) return record(cudaErrorInvalidValue);
  device().setStackLimit(value);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  return record(device().memory().allocate(ptr, bytes));
}

cudaError_t cudaFree(void* ptr) {
  return record(device().memory().release(ptr));
}

cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  *ptr = std::malloc(std::max<std::size_t>(bytes, 1));
  return *ptr == nullptr ? record(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToHost) {
    std::memmove(dst, src, bytes);
    return cudaSuccess;
  }
  if (kind == cudaMemcpyDefault) return record(cudaErrorInvalidValue);
  return record(device().memory().copy(dst, src, bytes, kind));
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  *total = device().memory().capacity();
  *free = *total - device().memory().used();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = mv::emu::tls_last_error;
  mv::emu::tls_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() {
  return mv::emu::tls_last_error;
}

const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorUnsupportedLimit:
      return "cudaErrorUnsupportedLimit";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorUnsupportedLimit:
      return "unsupported limit";
    default: return "unknown error";
  }
}
