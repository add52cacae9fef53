/**
 * @file report.hpp
 * `multiverse report RESULTS_DIR`: one self-contained HTML page (inline SVG charts, no
 * scripts, nothing fetched) of a sweep's or a netsim run's results folder (docs/report.md).
 */
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace mv {

/// A results folder that cannot be reported (not one, or a file in it unreadable).
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The report page of the sweep results folder `dir` (its summary.json and the files of its
/// experiments' folders). Throws ReportError naming the file at fault.
std::string sweepReport(const std::filesystem::path& dir);

/// The report page of the netsim results folder `dir` (its summary.csv and each variant's
/// flows.csv, queues.csv and links.csv). Throws ReportError naming the file at fault.
std::string netsimReport(const std::filesystem::path& dir);

/// Writes the report of `dir` (a sweep's or netsim's results, told apart by their summary)
/// to `out` (default `dir`/report.html) through a temporary file; prints where. Returns the
/// exit code: 0, 2 when `dir` is not a results folder or a file in it is malformed, 1 when
/// the page cannot be written.
int runReport(const std::filesystem::path& dir, const std::filesystem::path& out);

}  // namespace mv
