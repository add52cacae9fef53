/**
 * @file results.hpp
 * The results side of a sweep (DESIGN.md §9, docs/results.md): one record per finished
 * experiment, written as soon as it finishes to `<out>/experiments/<name>/manifest.json`
 * and to the folder's `summary.csv` and `summary.json`, always through a temporary file
 * and a rename so a kill at any moment leaves complete files; resuming an interrupted
 * sweep; the closing table of the best experiments; and progress reporting.
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "systems/training_spec.hpp"

namespace mv {

/// How an experiment ended.
enum class RunStatus : uint8_t {
  kOk,     ///< simulated
  kOom,    ///< did not fit in GPU memory; only the memory estimate is meaningful
  kError,  ///< failed (bad configuration found late, simulation error); see `error`
  kInvalid,  ///< not run: its configuration is infeasible (`--skip-infeasible`); see `error`
};

/// "ok", "oom", "error" or "invalid".
const char* runStatusName(RunStatus status);

/// One finished experiment: what identifies it, how it was configured, what it produced.
struct ExperimentRecord {
  /// Unique within a sweep; also the folder name, so no '/', '\\', "." or "..".
  std::string name;
  /// Stable id of the resolved configuration (TrainingExperiment::id).
  uint64_t id = 0;
  /// Position in the expanded sweep; summary rows are in this order (then by id).
  uint64_t index = 0;
  /// Swept keys (dotted, e.g. "parallelism.tp") and the value text, in axis order.
  std::vector<std::pair<std::string, std::string>> swept;
  /// YAML text of the fully resolved experiment.
  std::string resolved_config;
  uint64_t seed = 1;
  TrainingResult result;
  /// Why the experiment failed; non-empty means status error (or invalid).
  std::string error;
  /// Refused by the checks before anything ran (`--skip-infeasible`); `error` says why.
  bool invalid = false;

  /// invalid when `invalid`, error when `error` is set, else oom when `result.oom`, else ok.
  RunStatus status() const;
  /// Simulated: ok or oom (the result's fields mean something).
  bool ran() const { return status() == RunStatus::kOk || status() == RunStatus::kOom; }
};

/**
 * SimAI's EndToEnd.csv summary of a simulated iteration `r` of experiment `name`: the header
 * "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm,
 * Expose_PP_comm, bubble time, total comp, total exposed comm, Total time" and one row, each
 * time in whole µs followed by its share of the iteration, "(12.34%)". Expert-DP gradient
 * traffic is counted in DP (the project does not separate it), so DP_EP is 0; total exposed
 * comm is DP + TP + EP, as SimAI's (which keeps PP and the bubble apart).
 */
std::string simaiEndToEnd(const std::string& name, const TrainingResult& r);

/// A sweep file of one experiment: its resolved configuration `config` (YAML) under
/// `base:`, which `multiverse validate` and `--experiments` take as is (a manifest's
/// `config_yaml`).
std::string sweepOfExperiment(const std::string& config);
/// The configuration inside a sweep file of one experiment (sweepOfExperiment undone);
/// text that is not one (a manifest written before the wrapping) is returned as it is.
std::string experimentOfSweep(const std::string& sweep);

/// Writes `text` to `path` through `<path>.tmp` and a rename, so a reader (or a resume after
/// a kill) never sees half a file.
void writeFileAtomically(const std::filesystem::path& path, const std::string& text);

/// Thrown by FolderLock when another run holds the folder.
class FolderBusy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/**
 * An exclusive lock on a results folder, held while the object lives: an advisory
 * `flock` on `<dir>/.lock` (created with the folder when needed, left in place
 * afterwards, so that a run never locks a file another run is about to remove). Two runs,
 * sweeps (`--resume` included) or netsim, cannot write one folder at once. Throws
 * FolderBusy when another process holds the lock, std::runtime_error when the folder or
 * the lock file cannot be created.
 */
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

/// The id as 16 lower-case hex digits (file names, manifests, summaries).
std::string formatExperimentId(uint64_t id);

/// What `ResultsWriter::open` does with a folder that already holds results.
enum class OpenMode : uint8_t {
  kCreate,     ///< refuse (std::runtime_error) when the folder already holds results
  kResume,     ///< keep every completed experiment found in the folder and add to them
  kOverwrite,  ///< delete the previous summary files and experiments/ folder, start afresh
};

/**
 * Writes a sweep's results into one folder as experiments finish.
 *
 * Layout: `summary.csv`, `summary.json` and `experiments/<name>/manifest.json`. Each
 * `write` first writes the experiment's manifest, then rewrites both summaries from every
 * completed experiment; every file goes through `<file>.tmp` and a rename, so readers and a
 * later `--resume` only ever see complete files (a power failure is not covered: there is
 * no fsync). The manifests are the ground truth: resuming reads them, ignores anything
 * else (a truncated summary line, leftover `.tmp` files) and rewrites the summaries.
 *
 * Not synchronised: call `open`, `write` and the queries from one thread at a time (e.g.
 * from a completion callback inside the caller's critical section). Errors of the file
 * system are thrown as std::runtime_error (std::filesystem::filesystem_error included);
 * invalid records as std::invalid_argument.
 */
class ResultsWriter {
 public:
  /// Creates `dir` (and its parents) when needed and prepares it according to `mode`.
  /// kCreate refuses a folder holding summary.csv, summary.json or experiments/; other
  /// files in it are left alone. kResume throws when a manifest cannot be read.
  void open(const std::filesystem::path& dir, OpenMode mode);

  /// An experiment of the sweep as it is now.
  struct Current {
    uint64_t id = 0;
    std::string name;
    uint64_t index = 0;  ///< its position in the sweep
  };

  /**
   * After kResume: the experiments of the sweep now. Results are matched by id, never by
   * name: a finished result whose experiment now has another name or position moves to that
   * name's folder and place in the summaries (manifest rewritten with them), and one of an experiment no longer in the
   * sweep whose folder a current experiment's name takes moves aside to "<name>~<id>". So no
   * kept result is dropped from the summaries or has its manifest overwritten by another
   * experiment's (a suffix -2 moving to another configuration after an edit did both).
   */
  void adoptNames(const std::vector<Current>& current);

  /// Whether experiment `id` has completed (in this run or, after kResume, an earlier one).
  bool isDone(uint64_t id) const { return rows_by_id_.contains(id); }
  /// Completed experiments.
  size_t size() const { return rows_.size(); }
  /// Completed experiments in summary order.
  std::vector<ExperimentRecord> records() const;

  /**
   * Records a finished experiment: its manifest, then both summaries. A record with the
   * id of a completed one replaces it (a rerun); so does one taking the name of an
   * experiment from an earlier run when adoptNames was not called first. Throws
   * std::invalid_argument for a bad name, or for an id or name already used by a
   * different experiment of this run.
   */
  void write(const ExperimentRecord& record);

  /// The folder of experiment `name` (where its manifest and any traces go).
  std::filesystem::path experimentDir(const std::string& name) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  /// A completed experiment with its summary JSON object and CSV metric fields,
  /// serialised once (the summaries are rewritten on every write).
  struct Row {
    ExperimentRecord record;
    std::string json;
    std::string csv_metrics;
    bool from_earlier_run = false;
  };
  using RowKey = std::pair<uint64_t, uint64_t>;  // (index, id)

  void checkCanAdd(const ExperimentRecord& record) const;
  void loadManifests();
  void addRow(ExperimentRecord record, bool from_earlier_run);
  void removeRow(uint64_t id);
  void writeSummaries() const;

  std::filesystem::path dir_;
  std::map<RowKey, Row> rows_;
  std::unordered_map<uint64_t, RowKey> rows_by_id_;
  std::unordered_map<std::string, uint64_t> ids_by_name_;
};

/// The swept keys of `records`, in first-seen order (the summary's swept columns).
std::vector<std::string> sweptKeys(const std::vector<ExperimentRecord>& records);

/// The header and rows of summary.csv for `records`, in the given order (RFC 4180).
std::string summaryCsv(const std::vector<ExperimentRecord>& records);

/// The text of `manifest.json` for `record` (what `ResultsWriter` writes).
std::string manifestJson(const ExperimentRecord& record);
/// The record a manifest describes; throws std::runtime_error when `text` is not one.
ExperimentRecord parseManifest(const std::string& text);

// --- closing table -------------------------------------------------------------------

/// What the closing table ranks by; OOM and failed experiments always come last.
enum class RankBy : uint8_t {
  kIterationTime,    ///< iteration time, ascending
  kMfu,              ///< MFU, descending
  kTokensPerSecond,  ///< tokens/s, descending
  kPeakMemory,       ///< peak memory per GPU, ascending
};

/**
 * The best `top` experiments (all when `top` is 0) as an aligned text table: rank, name,
 * one column per swept key, iteration ms, MFU %, tokens/s, peak GiB. Ties keep the input
 * order; OOM rows follow the others, failed ones come last. Ends with a newline.
 */
std::string rankedTable(const std::vector<ExperimentRecord>& records, size_t top, RankBy by = RankBy::kIterationTime);

/**
 * The collective benchmarks among `records` (TrainingResult::collective_bytes > 0) as
 * nccl-tests prints them, one row per experiment in summary order: size (B), time (us),
 * algbw and busbw (GB/s), then the name and one column per swept key other than
 * `workload.collective.bytes`. Empty when there is none; else ends with a newline.
 */
std::string collectiveTable(const std::vector<ExperimentRecord>& records);

// --- progress --------------------------------------------------------------------------

/// How progress is shown.
enum class ProgressStyle : uint8_t {
  kBar,    ///< one line redrawn in place (a terminal)
  kLines,  ///< one line per finished experiment (a log file, a pipe)
  kQuiet,  ///< nothing
};

/// kQuiet when `quiet`, else kBar when file descriptor `fd` is a terminal, else kLines.
ProgressStyle detectProgressStyle(int fd, bool quiet);

/// Where a sweep stands.
struct ProgressSnapshot {
  size_t done = 0;           ///< finished, including those of an earlier run
  size_t total = 0;          ///< experiments in the sweep
  size_t done_at_start = 0;  ///< finished before this run started (resume)
  double elapsed_s = 0;      ///< wall time of this run
};

/// Seconds left at this run's average pace, or nothing before this run finished any.
std::optional<double> remainingSeconds(const ProgressSnapshot& p);
/// "42s", "3m07s", "2h05m" ("--" for nothing).
std::string formatDuration(std::optional<double> seconds);
/// "[#######.............]" with `width` cells between the brackets.
std::string progressBar(size_t done, size_t total, size_t width);
/// The terminal line: bar, done/total, elapsed and ETA.
std::string progressBarLine(const ProgressSnapshot& p);
/// The plain line for one finished experiment: count, status, name, iteration time, MFU,
/// elapsed and ETA (the error message for a failed one).
std::string progressRecordLine(const ProgressSnapshot& p, const ExperimentRecord& record);

/**
 * Progress of a sweep, written to a stream as experiments finish. In kBar style the line
 * is redrawn in place ('\r' and erase-to-end) and failures are printed above it; `finish`
 * ends the line. Not synchronised, like ResultsWriter.
 */
class Progress {
 public:
  /// Starts the clock; `done_at_start` experiments were finished by an earlier run.
  Progress(std::ostream& out, ProgressStyle style, size_t total, size_t done_at_start = 0);

  /// Reports one finished experiment.
  void finished(const ExperimentRecord& record);
  /// Reports where the running batches stand (`text`), between finished experiments: a
  /// line of its own (kLines) or after the bar (kBar).
  void heartbeat(const std::string& text);
  /// Ends the progress output (a newline after the bar).
  void finish();
  ProgressSnapshot snapshot() const;

 private:
  std::ostream* out_;
  ProgressStyle style_;
  ProgressSnapshot state_;
  std::chrono::steady_clock::time_point start_;
  bool bar_shown_ = false;
};

}  // namespace mv
