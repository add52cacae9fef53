#include "experiments/run_sweep.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ecs/device_fault.hpp"
#include "ecs/text.hpp"
#include "experiments/backend.hpp"
#include "experiments/batching.hpp"
#include "experiments/cli.hpp"
#include "experiments/config_reader.hpp"
#include "experiments/estimate.hpp"
#include "experiments/experiment_yaml.hpp"
#include "experiments/results.hpp"
#include "experiments/sweep.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "systems/training_sim.hpp"

#ifdef MV_HAVE_MPI
#include <mpi.h>
#endif

namespace mv {

namespace {

/// One experiment to run: where it sits in the sweep, its configuration and its cost.
struct Job {
  size_t index = 0;
  const ExpandedExperiment* expanded = nullptr;
  TrainingExperiment x;
  int64_t memory = 0;
  double cost = 0;
  /// Why it cannot run (`--skip-infeasible`: its problems, file:line: key: message); it is
  /// then written as an invalid row instead of run.
  std::string invalid;
  /// Its configuration less name and seed (sizingKey): copies share their packet storage.
  std::string sizing_key;
};

std::string yamlText(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

ExperimentRecord recordOf(const Job& job, const TrainingResult& result, const std::string& error) {
  ExperimentRecord r;
  r.name = job.x.name;
  r.id = job.x.id;
  r.index = job.index;
  r.swept = job.expanded->swept;
  r.resolved_config = job.x.resolved_config.empty() ? yamlText(job.expanded->config) : job.x.resolved_config;
  r.seed = job.x.seed;
  r.result = result;
  r.error = error;
  return r;
}

/// The invalid row of a job that cannot run.
ExperimentRecord invalidRecordOf(const Job& job) {
  ExperimentRecord r = recordOf(job, TrainingResult{}, job.invalid);
  r.invalid = true;
  return r;
}

/// Relative simulation cost, for sharding longest-first: ranks × micro-batches, times the
/// packets a packet-level run moves (roughly) more than an analytical one.
double estimatedCost(const TrainingExperiment& x) {
  const double tasks = static_cast<double>(x.cluster.gpus) * std::max<uint32_t>(microBatchCount(x.training, x.parallelism), 1);
  switch (x.fidelity) {
    case NetworkFidelity::kPacket:
      return 1000 * tasks;
    case NetworkFidelity::kFlow:
      return 30 * tasks;
    case NetworkFidelity::kAnalytical:
      break;
  }
  return tasks;
}

/// The jobs of `jobs` split into `parts` groups of about equal estimated cost (splitLongestFirst).
std::vector<std::vector<const Job*>> splitJobs(const std::vector<const Job*>& jobs, int parts) {
  std::vector<double> costs;
  for (const Job* j : jobs) costs.push_back(j->cost);
  std::vector<std::vector<const Job*>> out;
  for (const std::vector<size_t>& group : splitLongestFirst(costs, parts)) {
    out.emplace_back();
    for (const size_t i : group) out.back().push_back(jobs[i]);
  }
  return out;
}

/// `jobs` cut into consecutive batches within `budget` bytes and `size` experiments (batchLengths).
std::vector<std::vector<const Job*>> batches(const std::vector<const Job*>& jobs, int64_t budget, int64_t size) {
  std::vector<int64_t> memory;
  for (const Job* j : jobs) memory.push_back(j->memory);
  std::vector<std::vector<const Job*>> out;
  auto next = jobs.begin();
  for (const size_t n : batchLengths(memory, budget, size)) {
    out.emplace_back(next, next + static_cast<std::ptrdiff_t>(n));
    next += static_cast<std::ptrdiff_t>(n);
  }
  return out;
}

/**
 * Packet storage that runs grew, per sizing key (the configuration less name and seed):
 * later batches start their experiments of that configuration with it, so a campaign of
 * copies pays the restarts once, not once per batch. Shared by the worker threads.
 */
class LearnedStorage {
 public:
  /// Raises `x`'s pooled-storage knobs to what a run of its configuration needed.
  void apply(const std::string& key, TrainingExperiment& x) {
    const std::lock_guard<std::mutex> hold(mutex_);
    if (const auto it = grown_.find(key); it != grown_.end()) net::raisePoolKnobs(x.network, it->second);
  }
  /// Remembers the storage of a run that had to grow it.
  void learn(const std::string& key, const TrainingResult& r) {
    if (r.storage_retries == 0) return;
    const std::lock_guard<std::mutex> hold(mutex_);
    const auto [it, added] = grown_.try_emplace(key, r.pool_knobs);
    if (!added) it->second = net::largerPoolKnobs(it->second, r.pool_knobs);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, net::PoolKnobs> grown_;
};

/// Records finished by worker threads, handed to the thread that writes them.
class RecordQueue {
 public:
  void push(ExperimentRecord r) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      records_.push_back(std::move(r));
    }
    ready_.notify_one();
  }
  void workerDone() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
    }
    ready_.notify_one();
  }
  /// Waits for records or for the last worker, at most `wait` (forever when not positive;
  /// `out` is then empty); false once every worker is done and all records were taken.
  bool take(int workers, std::vector<ExperimentRecord>& out, std::chrono::duration<double> wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto due = [&] { return !records_.empty() || done_ == workers; };
    if (wait.count() > 0) {
      ready_.wait_for(lock, wait, due);
    } else {
      ready_.wait(lock, due);
    }
    out.swap(records_);
    records_.clear();
    return !out.empty() || done_ < workers;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<ExperimentRecord> records_;
  int done_ = 0;
};

/// The latest progress of each worker's running batch (set by the workers, read by the
/// thread that prints the heartbeat).
class Heartbeats {
 public:
  /// The workers, by the names their clauses give them when there are several.
  explicit Heartbeats(std::vector<std::string> names) : names_(std::move(names)), beats_(names_.size()) {}
  /// Worker w runs batch `batch` (0-based) of its `batches` and stands at `p`.
  void update(int w, size_t batch, size_t batches, const BatchProgress& p) {
    const std::lock_guard<std::mutex> lock(mutex_);
    beats_[static_cast<size_t>(w)] = Beat{true, batch, batches, p};
  }
  /// Worker w runs no batch.
  void idle(int w) {
    const std::lock_guard<std::mutex> lock(mutex_);
    beats_[static_cast<size_t>(w)].running = false;
  }
  /// What the running batches stand at, one clause per worker ("" when none runs).
  std::string line() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (size_t w = 0; w < beats_.size(); ++w) {
      const Beat& b = beats_[w];
      if (!b.running) continue;
      const BatchProgress& p = b.progress;
      char buf[200];
      std::snprintf(buf, sizeof(buf), "%sbatch %zu/%zu%s: %u of %u running, simulated %.3f ms (the slowest)",
                    out.empty() ? "" : "; ", b.batch + 1, b.batches,
                    beats_.size() > 1 ? (" of " + names_[w]).c_str() : "", p.experiments - p.finished, p.experiments,
                    static_cast<double>(p.slowest.ps) * 1e-9);
      out += buf;
      // Where its compute alone would end it (a lower bound), and when the batch gets there at
      // its pace so far.
      if (p.slowest.ps > 0 && p.slowest_expected > p.slowest) {
        const double left = p.wall_seconds * static_cast<double>(p.slowest_expected.ps - p.slowest.ps) /
                            static_cast<double>(p.slowest.ps);
        std::snprintf(buf, sizeof(buf), " of at least %.3f ms (its compute alone): about %s more at this pace",
                      static_cast<double>(p.slowest_expected.ps) * 1e-9,
                      formatDuration(std::optional<double>(left)).c_str());
        out += buf;
      }
    }
    return out;
  }

 private:
  struct Beat {
    bool running = false;
    size_t batch = 0;
    size_t batches = 0;
    BatchProgress progress;
  };
  std::vector<std::string> names_;
  mutable std::mutex mutex_;
  std::vector<Beat> beats_;
};

/// An integer environment variable (OpenMPI's node-local rank and size), or `fallback`.
int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && x >= 0 && x < (1 << 20) ? static_cast<int>(x) : fallback;
}

/// The MPI side of a sweep: which rank runs what, and results flowing to rank 0.
class Shard {
 public:
  Shard() {
#ifdef MV_HAVE_MPI
    int started = 0;
    MPI_Initialized(&started);
    if (started != 0) {
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
    }
#endif
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  /// The jobs of this rank: longest first, each to the least-loaded rank (ties: lowest rank).
  std::vector<const Job*> mine(const std::vector<Job>& jobs) const {
    std::vector<const Job*> all;
    for (const Job& j : jobs) all.push_back(&j);
    return splitJobs(all, size_)[static_cast<size_t>(rank_)];
  }

#ifdef MV_HAVE_MPI
  /// Rank 0's `ids`, on every rank.
  void share(std::vector<uint64_t>& ids) const {
    if (size_ == 1) return;
    auto n = static_cast<unsigned long long>(ids.size());
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    ids.resize(n);
    MPI_Bcast(ids.data(), static_cast<int>(n), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  }
  void send(const ExperimentRecord& r) const {
    const std::string text = manifestJson(r);
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kRecordTag, MPI_COMM_WORLD);
  }
  void sendDone() const { MPI_Send(nullptr, 0, MPI_CHAR, 0, kDoneTag, MPI_COMM_WORLD); }
  /// Hands every record that arrived to `use`; with `wait`, blocks until every other rank is done.
  template <class F>
  void receive(bool wait, F&& use) {
    if (size_ == 1) return;
    for (;;) {
      int flag = 0;
      MPI_Status status;
      if (wait && done_ < size_ - 1) {
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        flag = 1;
      } else {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      }
      if (flag == 0) return;
      int count = 0;
      MPI_Get_count(&status, MPI_CHAR, &count);
      std::string text(static_cast<size_t>(count), '\0');
      MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (status.MPI_TAG == kDoneTag) {
        ++done_;
      } else {
        use(parseManifest(text));
      }
    }
  }
#else
  void share(std::vector<uint64_t>&) const {}
  void send(const ExperimentRecord&) const {}
  void sendDone() const {}
  template <class F>
  void receive(bool, F&&) {}
#endif

 private:
  static constexpr int kRecordTag = 1;
  static constexpr int kDoneTag = 2;
  int rank_ = 0;
  int size_ = 1;
  int done_ = 0;
};

/// Writes the files of experiment `r` beside its manifest, in `<out>/experiments/<name>/`:
/// SimAI's EndToEnd.csv (a finished experiment), trace.json, links.csv, queues.csv, flows.csv
/// and fct.txt, those it has.
void writeExperimentFiles(const std::filesystem::path& out, const ExperimentRecord& r) {
  const std::filesystem::path dir = out / "experiments" / r.name;
  const std::string end_to_end = r.status() == RunStatus::kOk ? simaiEndToEnd(r.name, r.result) : std::string();
  const std::pair<const char*, const std::string*> files[] = {
      {"EndToEnd.csv", &end_to_end},        {"trace.json", &r.result.chrome_trace}, {"links.csv", &r.result.links_csv},
      {"queues.csv", &r.result.queues_csv}, {"flows.csv", &r.result.flows_csv},     {"fct.txt", &r.result.fct_txt}};
  for (const auto& [file, text] : files) {
    if (text->empty()) continue;
    std::filesystem::create_directories(dir);
    writeFileAtomically(dir / file, *text);
  }
}

RankBy rankByName(const std::string& name) {
  if (name == "mfu") return RankBy::kMfu;
  if (name == "tokens") return RankBy::kTokensPerSecond;
  if (name == "memory") return RankBy::kPeakMemory;
  return RankBy::kIterationTime;
}

/**
 * With `--skip-infeasible`: checks each experiment of `sweep` alone (reading, the
 * simulation's checks, its memory); one with problems becomes an invalid job carrying
 * them. When every experiment has problems, they all go to `diags` as without the flag.
 */
std::vector<Job> readJobsSkippingInfeasible(const Sweep& sweep, Recording recording, int64_t budget,
                                            Diagnostics& diags) {
  std::vector<Job> jobs;
  MemoryMeter meter(recording, budget);
  Diagnostics all;
  size_t valid = 0;
  std::map<uint64_t, std::string> names_by_id;
  for (size_t i = 0; i < sweep.experiments.size(); ++i) {
    Diagnostics one;
    Job j;
    j.index = i;
    j.expanded = &sweep.experiments[i];
    j.x = readExperiment(sweep.experiments[i], sweep.file.parent_path(), one);
    if (one.empty()) {
      if (const std::string twin = sameExperiment(names_by_id, j.x); !twin.empty()) {
        one.add(Diagnostic{sweep.file.string(), 0, "", twin});
        j.x.id = sweep.experiments[i].id;  // the twin's id is taken
      }
    }
    if (one.empty()) j.memory = measureExperiment(sweep, i, j.x, meter, budget, one).total;
    j.x.name = sweep.experiments[i].name;
    if (one.empty()) {
      j.cost = estimatedCost(j.x);
      j.sizing_key = sizingKey(sweep.experiments[i].config);
      ++valid;
    } else {
      for (const Diagnostic& d : one.items()) j.invalid += (j.invalid.empty() ? "" : "; ") + d.format();
      for (const Diagnostic& d : one.items()) all.add(d);
    }
    jobs.push_back(std::move(j));
  }
  if (valid == 0) {
    for (const Diagnostic& d : all.items()) diags.add(d);
    jobs.clear();
  }
  return jobs;
}

/// Reads, expands and checks the whole sweep (readExperiment applies the simulation's own
/// checks too); every problem goes to `diags`, or with `skip_infeasible` makes its
/// experiment an invalid job (readJobsSkippingInfeasible).
std::vector<Job> readJobs(const std::filesystem::path& file, Recording recording, int64_t budget, bool skip_infeasible,
                          Sweep& sweep, Diagnostics& diags) {
  sweep = readSweep(file, diags);
  std::vector<Job> jobs;
  if (!diags.empty()) return jobs;
  if (skip_infeasible) return readJobsSkippingInfeasible(sweep, recording, budget, diags);
  std::vector<TrainingExperiment> read;
  readExperiments(sweep, diags, [&](TrainingExperiment&& x) { read.push_back(std::move(x)); });
  if (!diags.empty()) return jobs;
  MemoryMeter meter(recording, budget);
  const std::vector<MemoryEstimate> memory = measureSweep(sweep, read, meter, budget, diags);
  if (!diags.empty()) return jobs;
  for (size_t i = 0; i < read.size(); ++i) {
    Job j;
    j.index = i;
    j.expanded = &sweep.experiments[i];
    j.x = std::move(read[i]);
    j.memory = memory[i].total;
    j.cost = estimatedCost(j.x);
    j.sizing_key = sizingKey(sweep.experiments[i].config);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace

void startMpi(int* argc, char*** argv) {
#ifdef MV_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr) MPI_Init(argc, argv);
#else
  (void)argc;
  (void)argv;
#endif
}

void stopMpi() {
#ifdef MV_HAVE_MPI
  int started = 0;
  int finished = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finished);
  if (started != 0 && finished == 0) MPI_Finalize();
#endif
}

/// The jobs one kind of worker (the devices', or the CPU's) runs, and the memory they need,
/// in all and the largest (bytes).
struct Side {
  std::vector<const Job*> jobs;
  int64_t memory = 0;
  int64_t largest = 0;
  void add(const Job* j) {
    jobs.push_back(j);
    memory += j->memory;
    largest = std::max(largest, j->memory);
  }
};

/// Worker w's jobs under `plan`: each device's worker gets a share of `device`'s jobs, each
/// CPU worker a share of `cpu`'s, of about equal estimated cost.
std::vector<std::vector<const Job*>> placeJobs(const BackendPlan& plan, const Side& device, const Side& cpu) {
  const int device_workers = plan.cuda ? static_cast<int>(plan.devices.size()) : 0;
  std::vector<std::vector<const Job*>> out;
  if (device_workers > 0) out = splitJobs(device.jobs, device_workers);
  if (plan.workers() > device_workers) {
    for (std::vector<const Job*>& group : splitJobs(cpu.jobs, plan.workers() - device_workers)) {
      out.push_back(std::move(group));
    }
  } else if (!cpu.jobs.empty()) {
    throw std::logic_error("experiments placed on the CPU but the plan has no CPU worker: " + plan.describe());
  }
  return out;
}

/// This process's workers and their batches.
struct Work {
  /// Worker w's batches, in order.
  std::vector<std::vector<std::vector<const Job*>>> batches;
  size_t count = 0;  ///< batches in all
};

/**
 * Plans the CPU workers of `plan` for the jobs of `mine` it places on the CPU and cuts each
 * worker's jobs (longest first) into batches by memory and batch size. The memory budget
 * `total` is split between the devices' workers and the CPU's (deviceMemoryPart); a side
 * shares its part evenly among its workers. Auto CPU workers: no more than the experiments
 * they run, nor than copies of the largest of them their part holds at once (each worker
 * has one batch in memory). A plan with devices whose jobs here are all on a device drops
 * its CPU workers. `local_ranks` processes on this node share its cores (MPI).
 */
Work planWork(BackendPlan& plan, const SweepOptions& options, const std::vector<const Job*>& mine, int64_t total,
              int local_ranks) {
  Side device;
  Side cpu;
  for (const Job* j : mine) (plan.onCpu(j->x.fidelity) ? cpu : device).add(j);
  const auto on_cpu = static_cast<int64_t>(cpu.jobs.size());
  if (plan.cuda && on_cpu == 0) {
    plan.flow_on_cpu = false;
    plan.cpu_threads.clear();
  }
  const int64_t device_part =
      plan.cuda ? deviceMemoryPart(total, device.memory, device.largest, cpu.memory, cpu.largest) : 0;
  const int64_t cpu_part = total - device_part;
  if (!plan.cuda || plan.flow_on_cpu) {
    int threads = options.threads;  // beside GPUs, the node's MPI ranks share its cores
    if (plan.cuda && threads == 0 && options.cpu_workers <= 0 && local_ranks > 1) {
      threads = std::max(1, defaultCpuThreads() / local_ranks);
    }
    planCpuWorkers(plan, options.cpu_workers, threads, std::min(on_cpu, cpu_part / std::max<int64_t>(cpu.largest, 1)));
  }
  const auto device_workers = static_cast<int64_t>(plan.cuda ? plan.devices.size() : 0);
  const int64_t cpu_workers = plan.workers() - device_workers;
  Work work;
  for (const std::vector<const Job*>& group : placeJobs(plan, device, cpu)) {
    const int w = static_cast<int>(work.batches.size());
    const int64_t budget = plan.onDevice(w) ? device_part / device_workers : cpu_part / cpu_workers;
    const int64_t on_device = deviceMemoryBudget(plan, w);
    work.batches.push_back(
        batches(group, on_device > 0 ? std::min(budget, on_device) : budget, plan.batchSize(options.batch_size, w)));
    work.count += work.batches.back().size();
  }
  return work;
}

int runSweep(const std::filesystem::path& file, const SweepOptions& options) {
  Shard shard;
  Diagnostics diags;
  Sweep sweep;
  const int64_t total_budget = options.max_memory > 0 ? options.max_memory : defaultMemoryBudget();
  const std::vector<Job> jobs = readJobs(file, Recording{options.trace, options.network_detail}, total_budget,
                                         options.skip_infeasible, sweep, diags);
  BackendPlan plan = planBackend(options.backend, options.devices, usableCudaDevices(), cudaBackendBuilt());
  const int local_ranks = envInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  if (shard.size() > 1) {  // ranks on one node take distinct devices
    shareDevicesOnNode(plan, envInt("OMPI_COMM_WORLD_LOCAL_RANK", 0), local_ranks);
  }
  if (plan.error.empty()) {  // --cpu-workers: auto may place experiments on CPU workers beside the GPUs
    BackendPlan check = plan;
    check.flow_on_cpu = options.backend == "auto";
    planCpuWorkers(check, options.cpu_workers, options.threads, static_cast<int64_t>(jobs.size()));
    plan.error = check.error;
  }
  if (!plan.error.empty()) diags.add(Diagnostic{"", 0, "--backend", plan.error});
  if (!diags.empty()) {
    if (shard.root()) std::cerr << diags.format();
    return kExitUsageError;
  }
  if (jobs.empty()) {
    if (shard.root()) std::cerr << printable(file.string()) << ": every combination was dropped by the constraints\n";
    return kExitUsageError;
  }

  const std::filesystem::path out =
      options.out.empty() ? std::filesystem::path("results") / file.stem() : options.out;
  ResultsWriter writer;
  std::optional<FolderLock> lock;  // held by rank 0, the writer, until the run ends
  std::vector<uint64_t> opened{kExitOk};  // rank 0's outcome of locking and opening the folder
  if (shard.root()) {
    try {
      lock.emplace(out);
      writer.open(out, options.resume ? OpenMode::kResume : options.force ? OpenMode::kOverwrite : OpenMode::kCreate);
      if (options.resume) {
        std::vector<ResultsWriter::Current> current;
        for (const Job& j : jobs) current.push_back({j.x.id, j.x.name, j.index});
        writer.adoptNames(current);
      }
    } catch (const FolderBusy& e) {
      std::cerr << "multiverse: " << printable(e.what()) << "\n";
      opened.front() = kExitRunError;
    } catch (const std::exception& e) {
      std::cerr << "multiverse: " << printable(e.what()) << "\n";
      opened.front() = kExitUsageError;
    }
  }
  shard.share(opened);  // every rank stops when rank 0 cannot write (they would wait for it forever)
  if (opened.front() != kExitOk) return static_cast<int>(opened.front());
  // Every rank runs what rank 0 found unfinished in the folder.
  std::vector<uint64_t> done_ids;
  if (shard.root()) {
    for (const Job& j : jobs) {
      if (writer.isDone(j.x.id)) done_ids.push_back(j.x.id);
    }
  }
  shard.share(done_ids);
  std::vector<Job> pending;
  std::vector<const Job*> invalid;  // not done yet and not to run: written as invalid rows
  size_t done_before = 0;
  for (const Job& j : jobs) {
    if (std::find(done_ids.begin(), done_ids.end(), j.x.id) != done_ids.end()) {
      ++done_before;
    } else if (!j.invalid.empty()) {
      invalid.push_back(&j);
    } else {
      pending.push_back(j);
    }
  }
  // Where the experiments left to run go: under auto the flow-level ones on the CPU, and a
  // device is used only after its self-check.
  if (!pending.empty()) {
    int64_t flow_level = 0;
    for (const Job& j : pending) flow_level += j.x.fidelity == NetworkFidelity::kFlow ? 1 : 0;
    const std::string note =
        placeFlowLevelOnCpu(plan, options.backend, flow_level, static_cast<int64_t>(pending.size()));
    const std::string warning = confirmAutoBackend(plan, options.backend, CheckedWorlds::kTraining);
    if (shard.root() && !warning.empty()) std::cerr << "multiverse: warning: " << warning << "\n";
    if (shard.root() && warning.empty() && !note.empty()) std::cerr << "multiverse: note: " << note << "\n";
  }
  const Work work = planWork(plan, options, shard.mine(pending), total_budget, local_ranks);
  const int workers = plan.workers();
  const size_t batch_count = work.count;
  // The cap the first line names: the workers' when they share one (devices and CPU workers
  // differ under auto).
  const int64_t first_cap = plan.batchSize(options.batch_size, 0);
  const int64_t batch_size = first_cap == plan.batchSize(options.batch_size, workers - 1) ? first_cap : 0;
  Progress progress(std::cout, detectProgressStyle(STDOUT_FILENO, options.quiet || !shard.root()), jobs.size(),
                    done_before);
  if (shard.root() && !options.quiet) {
    std::cout << "multiverse: " << jobs.size() << " experiment(s) from " << printable(file.string());
    if (done_before > 0) std::cout << ", " << done_before << " already done";
    if (shard.size() > 1) std::cout << ", over " << shard.size() << " MPI ranks";
    std::cout << "; backend " << plan.describe() << "; " << (shard.size() > 1 ? "rank 0 runs " : "") << batch_count
              << " batch" << (batch_count == 1 ? "" : "es");
    if (batch_size > 0) std::cout << " of at most " << batch_size << " experiment" << (batch_size == 1 ? "" : "s");
    if (!invalid.empty()) std::cout << "; " << invalid.size() << " invalid, not run (--skip-infeasible)";
    std::cout << "; results in " << printable(out.string()) << "\n";
  }

  bool failed = false;
  auto keep = [&](const ExperimentRecord& r) {
    failed = failed || r.status() == RunStatus::kError;
    writer.write(r);
    progress.finished(r);
  };
  if (shard.root()) {
    for (const Job* j : invalid) keep(invalidRecordOf(*j));
  }
  auto deliver = [&](const ExperimentRecord& r) {
    if (shard.root()) {
      keep(r);
      shard.receive(false, keep);
    } else {
      shard.send(r);
    }
  };
  RecordQueue queue;
  std::vector<std::string> worker_names;
  for (int w = 0; w < workers; ++w) worker_names.push_back(plan.workerName(w));
  Heartbeats heartbeats(worker_names);
  std::atomic<bool> cannot_write{false};  // results stopped being written: run no more batches
  LearnedStorage learned;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      SimulationOptions sim;
      sim.threads = plan.threadsOf(w, options.threads);
      sim.yield_to_load = options.threads == 0;
      sim.cpu_block = options.cpu_block;
      sim.trace = options.trace;
      sim.network_detail = options.network_detail;
      sim.device_runner = stepRunner(plan, w);
      std::string device_fault;  // once set, this worker's device is not used again
      const std::vector<std::vector<const Job*>>& mine_batches = work.batches[static_cast<size_t>(w)];
      for (size_t b = 0; b < mine_batches.size(); ++b) {
        const std::vector<const Job*>& batch = mine_batches[b];
        sim.on_progress = [&, b](const BatchProgress& p) { heartbeats.update(w, b, mine_batches.size(), p); };
        std::vector<bool> reported(batch.size(), false);
        const auto failRest = [&](const std::string& why) {
          for (size_t i = 0; i < batch.size(); ++i) {
            if (!reported[i]) queue.push(recordOf(*batch[i], TrainingResult{}, why));
          }
        };
        if (!device_fault.empty()) {
          failRest("not run: " + device_fault + " in an earlier batch of this worker (run again with --resume)");
          continue;
        }
        if (cannot_write) {
          failRest("not run: the results could not be written");
          continue;
        }
        std::vector<TrainingExperiment> xs;
        for (const Job* j : batch) {
          xs.push_back(j->x);
          learned.apply(j->sizing_key, xs.back());
        }
        try {
          simulateTraining(xs, sim, [&](size_t i, const TrainingResult& r) {
            reported[i] = true;
            learned.learn(batch[i]->sizing_key, r);
            queue.push(recordOf(*batch[i], r, r.error));
          });
        } catch (const DeviceOutOfMemory& e) {  // the device is fine: go on with the next batch
          failRest(std::string("the batch does not fit the GPU's memory (") + e.what() +
                   "); run it with a smaller --batch-size");
        } catch (const DeviceFault& e) {
          const std::string where =
              plan.onDevice(w) ? "cuda (device " + std::to_string(plan.devices[static_cast<size_t>(w)]) + ")" : "cpu";
          device_fault = where + " worker " + std::to_string(w) + " failed: " + e.what();
          failRest(e.what());
        } catch (const std::exception& e) {
          failRest(e.what());
        }
        heartbeats.idle(w);
      }
      queue.workerDone();
    });
  }
  // This thread alone writes results and talks MPI, as experiments finish. When a write
  // fails (a full disk), the workers finish the batches they hold and start no other; the
  // run then stops with the error, every result written before it kept.
  std::vector<ExperimentRecord> ready;
  std::string write_error;
  // Every `beat`, where the running batches stand, when it changed since the last line.
  const std::chrono::duration<double> beat(shard.root() ? options.heartbeat_s : 0.0);
  auto last_beat = std::chrono::steady_clock::now();
  std::string last_line;
  while (queue.take(workers, ready, beat)) {
    if (beat.count() > 0 && std::chrono::steady_clock::now() - last_beat >= beat) {
      const std::string line = heartbeats.line();
      if (!line.empty() && line != last_line) progress.heartbeat(line);
      last_line = line;
      last_beat = std::chrono::steady_clock::now();
    }
    for (const ExperimentRecord& r : ready) {
      if (!write_error.empty()) continue;
      try {
        writeExperimentFiles(out, r);
        deliver(r);
      } catch (const std::exception& e) {
        write_error = e.what();
        cannot_write = true;
      }
    }
  }
  for (std::thread& t : threads) t.join();
  if (!write_error.empty()) {
    std::cerr << "multiverse: results could not be written to " << printable(out.string()) << ": " << printable(write_error)
              << "; stopped (the results written before are kept: run again with --resume)\n";
    if (shard.root()) {
      shard.receive(true, [](const ExperimentRecord&) {});  // other ranks finish and are not left waiting
    } else {
      shard.sendDone();
    }
    return kExitRunError;
  }
  if (!shard.root()) {
    shard.sendDone();
    return kExitOk;
  }
  shard.receive(true, keep);
  progress.finish();
  if (!options.quiet) {
    // Collective benchmarks as nccl-tests prints them; training runs (and failures) ranked.
    const std::vector<ExperimentRecord> records = writer.records();
    const bool all_benchmarks = std::all_of(records.begin(), records.end(), [](const ExperimentRecord& r) {
      return r.status() == RunStatus::kOk && r.result.collective_bytes > 0;
    });
    if (!all_benchmarks) {
      std::cout << rankedTable(records, static_cast<size_t>(std::max(options.top, 0)), rankByName(options.rank_by));
    }
    std::cout << collectiveTable(records);
  }
  return failed ? kExitRunError : kExitOk;
}

}  // namespace mv
