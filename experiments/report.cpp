/**
 * @file report.cpp
 * The HTML report of a results folder: tables and inline SVG charts (charts.hpp).
 */
#include "experiments/report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ecs/json_input.hpp"
#include "ecs/text.hpp"
#include "experiments/charts.hpp"
#include "experiments/cli.hpp"
#include "experiments/results.hpp"
#include "experiments/version.hpp"

namespace mv {

namespace {

namespace fs = std::filesystem;
using chart::escape;

/// Experiments shown in the charts of one page (the best ones; the table lists more).
constexpr size_t kChartRows = 30;
/// Rows of a page's tables.
constexpr size_t kTableRows = 200;
/// Links and time bins of a link heat map.
constexpr size_t kHeatLinks = 48;
constexpr size_t kHeatBins = 120;

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(path.string() + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The rows of an RFC 4180 CSV file (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> readCsv(const fs::path& path) {
  const std::string text = readText(path);
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      rows.back().push_back(std::move(field));
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (!field.empty() || !rows.back().empty()) rows.back().push_back(std::move(field));
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

/// A CSV file as records keyed by its header's column names; throws naming the file when
/// a column of `needed` is missing.
class CsvTable {
 public:
  CsvTable(const fs::path& path, const std::vector<std::string>& needed) : path_(path), rows_(readCsv(path)) {
    if (rows_.empty()) throw ReportError(path.string() + ": empty (no header line)");
    for (size_t c = 0; c < rows_[0].size(); ++c) column_[rows_[0][c]] = c;
    for (const std::string& n : needed) {
      if (column_.count(n) == 0) throw ReportError(path.string() + ":1: no column '" + n + "'");
    }
  }
  size_t size() const { return rows_.size() - 1; }
  const std::string& text(size_t row, const std::string& name) const {
    static const std::string kEmpty;
    const std::vector<std::string>& r = rows_[row + 1];
    const size_t c = column_.at(name);
    return c < r.size() ? r[c] : kEmpty;
  }
  /// The number in a cell; NaN when it is empty or not a number. A number that is not
  /// finite ("inf", "nan", or beyond double) is refused, naming the row and column: no
  /// Multiverse file holds one, and no chart can draw it.
  double number(size_t row, const std::string& name) const {
    const std::string& t = text(row, name);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size()) return std::nan("");
    if (!std::isfinite(v)) {
      throw ReportError(path_.string() + ": row " + std::to_string(row + 1) + ", column '" + name + "': '" + t +
                        "' is not a finite number");
    }
    return v;
  }

 private:
  fs::path path_;
  std::vector<std::vector<std::string>> rows_;
  std::map<std::string, size_t> column_;
};

/// The name of folder `dir` ("results/x/" and "results/x" are both "x").
std::string folderName(const fs::path& dir) {
  const fs::path p = fs::absolute(dir).lexically_normal();
  return p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

/// The start of a page: its title, style and heading.
std::string pageHead(const std::string& title, const std::string& subtitle) {
  return "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
         "<title>" +
         escape(title) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px auto;max-width:960px;color:#222}\n"
         "h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}\n"
         "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;"
         "text-align:right}td.l,th.l{text-align:left}th{background:#f4f4f4}\n"
         ".meta{color:#666}.bad{color:#b00}svg{display:block;margin:8px 0}.wide{overflow-x:auto}"
         "td.l{white-space:nowrap}td.bad{white-space:normal;min-width:240px;max-width:420px}\n"
         "</style>\n</head>\n<body>\n<h1>" +
         escape(title) + "</h1>\n<p class=\"meta\">" + escape(subtitle) + "</p>\n";
}

std::string pageTail() {
  return std::string("<p class=\"meta\">Written by multiverse ") + kVersion + " (multiverse report).</p>\n</body>\n</html>\n";
}

std::string cell(const std::string& text, bool left = false) {
  return std::string(left ? "<td class=\"l\">" : "<td>") + escape(text) + "</td>";
}
std::string headCell(const std::string& text, bool left = false) {
  return std::string(left ? "<th class=\"l\">" : "<th>") + escape(text) + "</th>";
}

// --- sweeps ------------------------------------------------------------------------

/// A number of a summary.json row; NaN for null or a missing key.
double value(const nlohmann::json& row, const char* key) {
  const auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<double>() : std::nan("");
}

std::string swept(const nlohmann::json& row, const std::string& key) {
  const auto s = row.find("swept");
  if (s == row.end() || !s->is_object()) return "";
  const auto it = s->find(key);
  return it != s->end() && it->is_string() ? it->get<std::string>() : "";
}

/// The rows of a sweep's summary: finished ones by iteration time, then OOM, then failed.
std::vector<nlohmann::json> rankedRows(const nlohmann::json& summary, const fs::path& file) {
  const auto it = summary.find("experiments");
  if (it == summary.end() || !it->is_array()) throw ReportError(file.string() + ": no 'experiments' list");
  std::vector<nlohmann::json> rows(it->begin(), it->end());
  for (const nlohmann::json& r : rows) {
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string() || !r.contains("status") ||
        !r["status"].is_string()) {
      throw ReportError(file.string() + ": an experiment without a name or status");
    }
  }
  auto order = [](const nlohmann::json& r) {
    const std::string s = r["status"].get<std::string>();
    return s == "ok" ? 0 : s == "oom" ? 1 : 2;
  };
  auto time = [](const nlohmann::json& r) {
    const double t = value(r, "iteration_ms");
    return std::isfinite(t) ? t : INFINITY;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
    return order(a) != order(b) ? order(a) < order(b) : time(a) < time(b);
  });
  return rows;
}

/// The swept keys of a summary: its columns between "id" and "status".
std::vector<std::string> sweptKeys(const nlohmann::json& summary) {
  std::vector<std::string> keys;
  const auto it = summary.find("columns");
  if (it == summary.end() || !it->is_array()) return keys;
  bool in = false;
  for (const nlohmann::json& c : *it) {
    if (!c.is_string()) continue;
    const std::string name = c.get<std::string>();
    if (name == "status") break;
    if (in) keys.push_back(name);
    in = in || name == "id";
  }
  return keys;
}

std::string rankedTable(const std::vector<nlohmann::json>& rows, const std::vector<std::string>& keys,
                        const fs::path& dir) {
  std::string out = "<div class=\"wide\"><table>\n<tr>" + headCell("#") + headCell("experiment", true);
  for (const std::string& k : keys) out += headCell(k, true);
  out += headCell("status", true) + headCell("iteration ms") + headCell("MFU %") + headCell("tokens/s") +
         headCell("peak GiB") + headCell("files", true) + "</tr>\n";
  for (size_t i = 0; i < rows.size() && i < kTableRows; ++i) {
    const nlohmann::json& r = rows[i];
    const std::string name = r["name"].get<std::string>();
    const std::string status = r["status"].get<std::string>();
    out += "<tr>" + cell(std::to_string(i + 1)) + cell(name, true);
    for (const std::string& k : keys) out += cell(swept(r, k), true);
    const auto error = r.find("error");
    const std::string why = error != r.end() && error->is_string() ? ": " + error->get<std::string>() : "";
    out += std::string(status == "ok" ? "<td class=\"l\">" : "<td class=\"l bad\">") + escape(status + why) + "</td>";
    out += cell(fixed(value(r, "iteration_ms"), 3)) + cell(fixed(100 * value(r, "mfu"), 1)) +
           cell(fixed(value(r, "tokens_per_s"), 0)) + cell(fixed(value(r, "peak_memory_gib"), 1));
    std::string files;
    for (const char* f : {"manifest.json", "trace.json"}) {
      const fs::path rel = fs::path("experiments") / name / f;
      if (!fs::exists(dir / rel)) continue;
      if (!files.empty()) files += ' ';
      files += "<a href=\"" + escape(rel.generic_string()) + "\">" + escape(f) + "</a>";
    }
    out += "<td class=\"l\">" + files + "</td></tr>\n";
  }
  out += "</table></div>\n";
  if (rows.size() > kTableRows) {
    out += "<p class=\"meta\">" + std::to_string(rows.size() - kTableRows) + " more rows in summary.csv.</p>\n";
  }
  return out;
}

std::string iterationBreakdown(const std::vector<nlohmann::json>& ok) {
  const std::vector<std::string> parts = {"compute",    "exposed TP", "exposed PP",      "exposed DP",
                                          "exposed EP", "exposed CP", "exposed offload", "bubble"};
  const char* keys[] = {"compute_ms",    "exposed_tp_ms", "exposed_pp_ms",      "exposed_dp_ms",
                        "exposed_ep_ms", "exposed_cp_ms", "exposed_offload_ms", "bubble_ms"};
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < ok.size() && i < kChartRows; ++i) {
    labels.push_back(ok[i]["name"].get<std::string>());
    values.emplace_back();
    for (const char* k : keys) {
      const double v = value(ok[i], k);
      values.back().push_back(std::isfinite(v) ? v : 0);
    }
  }
  return chart::stackedBars(labels, parts, values, "ms of the critical rank's iteration");
}

std::string memoryBreakdown(const std::vector<nlohmann::json>& rows) {
  const std::vector<std::string> parts = {"weights", "gradients", "optimizer", "activations", "logits", "workspace"};
  const char* keys[] = {"weights_bytes", "gradients_bytes",  "optimizer_bytes",
                        "activations_bytes", "logits_bytes", "workspace_bytes"};
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  for (const nlohmann::json& r : rows) {
    const auto m = r.find("memory");
    if (m == r.end() || !m->is_object()) continue;
    labels.push_back(r["name"].get<std::string>());
    values.emplace_back();
    for (const char* k : keys) {
      const double v = value(*m, k);
      values.back().push_back(std::isfinite(v) ? v / (1024.0 * 1024.0 * 1024.0) : 0);
    }
    if (labels.size() == kChartRows) break;
  }
  return labels.empty() ? "" : chart::stackedBars(labels, parts, values, "GiB per GPU (largest stage)");
}

std::string networkTable(const std::vector<nlohmann::json>& ok) {
  const char* keys[] = {"packet_hops", "ecn_marks", "cnps", "pauses", "paused_us", "drops", "retransmits", "timeouts"};
  std::string body;
  size_t shown = 0;
  for (const nlohmann::json& r : ok) {
    if (!(value(r, "packet_hops") > 0) || shown == kChartRows) continue;
    ++shown;
    body += "<tr>" + cell(r["name"].get<std::string>(), true);
    for (const char* k : keys) body += cell(fixed(value(r, k), 0));
    body += "</tr>\n";
  }
  if (body.empty()) return "";
  std::string head = "<tr>" + headCell("experiment", true);
  for (const char* k : keys) head += headCell(k);
  return "<h2>Packet network</h2>\n<p>Counters of the packet-level experiments (summary.csv).</p>\n<table>\n" + head +
         "</tr>\n" + body + "</table>\n";
}

// --- netsim ------------------------------------------------------------------------

/// The heat map of one variant's links.csv: the busiest links (by bytes) over time bins.
std::string linkHeatmap(const fs::path& file) {
  const CsvTable t(file, {"link", "bin_start_ps", "bytes", "utilisation"});
  if (t.size() == 0) return "";
  std::map<std::string, double> bytes;
  double first = INFINITY;
  double last = -INFINITY;
  for (size_t i = 0; i < t.size(); ++i) {
    bytes[t.text(i, "link")] += std::max(t.number(i, "bytes"), 0.0);
    const double start = t.number(i, "bin_start_ps");
    if (!std::isfinite(start)) throw ReportError(file.string() + ":" + std::to_string(i + 2) + ": bin_start_ps is not a number");
    first = std::min(first, start);
    last = std::max(last, start);
  }
  std::vector<std::pair<double, std::string>> busiest;
  for (const auto& [link, b] : bytes) busiest.emplace_back(-b, link);
  std::sort(busiest.begin(), busiest.end());
  if (busiest.size() > kHeatLinks) busiest.resize(kHeatLinks);
  std::map<std::string, size_t> row_of;
  std::vector<std::string> rows;
  for (const auto& [b, link] : busiest) {
    row_of[link] = rows.size();
    rows.push_back("link " + link);
  }
  // Bins of the file merged into at most kHeatBins columns (their mean utilisation).
  double width = INFINITY;
  for (size_t i = 0; i < t.size(); ++i) {
    const double s = t.number(i, "bin_start_ps");
    if (s > first) width = std::min(width, s - first);
  }
  if (!std::isfinite(width)) width = 1;
  const auto bins = static_cast<size_t>(std::llround((last - first) / width)) + 1;
  const size_t merge = (bins + kHeatBins - 1) / kHeatBins;
  const size_t columns_n = (bins + merge - 1) / merge;
  std::vector<std::vector<double>> values(rows.size(), std::vector<double>(columns_n, 0));
  for (size_t i = 0; i < t.size(); ++i) {
    const auto r = row_of.find(t.text(i, "link"));
    if (r == row_of.end()) continue;
    const auto bin = static_cast<size_t>(std::llround((t.number(i, "bin_start_ps") - first) / width));
    values[r->second][std::min(bin / merge, columns_n - 1)] += t.number(i, "utilisation") / static_cast<double>(merge);
  }
  std::vector<std::string> columns;
  for (size_t c = 0; c < columns_n; ++c) {
    columns.push_back(fixed((first + static_cast<double>(c * merge) * width) * 1e-6, 1));
  }
  return chart::heatmap(rows, columns, values, "time, µs (bins of " + fixed(width * merge * 1e-6, 2) + " µs)",
                        "busiest links");
}

/// The network charts of several runs, each from the flows.csv, queues.csv and links.csv in
/// its folder (those it has): FCT-slowdown and FCT distributions, per-port largest queues,
/// link-utilisation heat maps.
class NetworkCharts {
 public:
  /// Adds run `name`'s files from `folder`.
  void add(const std::string& name, const fs::path& folder) {
    if (fs::exists(folder / "flows.csv")) {
      const CsvTable flows(folder / "flows.csv", {"fct_ps", "ideal_fct_ps"});
      std::vector<double> slow;
      std::vector<double> fct;
      for (size_t f = 0; f < flows.size(); ++f) {
        const double t = flows.number(f, "fct_ps");
        const double ideal = flows.number(f, "ideal_fct_ps");
        if (!(t > 0)) continue;  // unfinished
        fct.push_back(t * 1e-6);
        if (ideal > 0) slow.push_back(t / ideal);
      }
      slowdowns_.push_back(chart::cdf(name, slow));
      fcts_.push_back(chart::cdf(name, fct));
    }
    if (fs::exists(folder / "queues.csv")) {
      const CsvTable queues(folder / "queues.csv", {"port", "max_bytes"});
      for (size_t q = 0; q < queues.size(); ++q) {
        const double b = queues.number(q, "max_bytes");
        if (!(b > 0)) continue;
        queue_runs_.push_back(name);
        queue_kb_.push_back(b / 1000.0);
      }
    }
    if (fs::exists(folder / "links.csv")) {
      const std::string map = linkHeatmap(folder / "links.csv");
      if (!map.empty()) heatmaps_ += "<h3>" + escape(name) + "</h3>\n" + map;
    }
  }

  /// The sections of the charts that have data; `run` names a run ("variant", "experiment").
  std::string sections(const std::string& run) const {
    std::string page;
    if (!slowdowns_.empty()) {
      page +=
          "<h2>FCT slowdown</h2>\n<p>Each flow's completion time over its ideal (alone in the idle network, "
          "flows.csv), cumulative over the finished flows.</p>\n" +
          chart::lines(slowdowns_, "FCT / ideal FCT", "fraction of flows", true);
      page += "<h2>Flow completion time</h2>\n" + chart::lines(fcts_, "FCT, µs", "fraction of flows", true);
    }
    if (!queue_kb_.empty()) {
      page +=
          "<h2>Switch queues</h2>\n<p>The largest occupancy each switch port reached (queues.csv), one point per "
          "port that queued.</p>\n" +
          chart::stripPlot(queue_runs_, queue_kb_, run, "max queue, KB");
    }
    if (!heatmaps_.empty()) {
      page +=
          "<h2>Link utilisation</h2>\n<p>The busiest directed links (links.csv, recorded with "
          "<code>network.link_bin</code>) over time.</p>\n" +
          heatmaps_;
    }
    return page;
  }

 private:
  std::vector<chart::Series> slowdowns_;
  std::vector<chart::Series> fcts_;
  std::vector<std::string> queue_runs_;
  std::vector<double> queue_kb_;
  std::string heatmaps_;
};

/// Whether `name` is a plain folder name (results name folders after runs; never a path).
bool plainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of("/\\") == std::string::npos;
}

}  // namespace

std::string sweepReport(const fs::path& dir) {
  const fs::path file = dir / "summary.json";
  nlohmann::json summary;
  try {
    summary = parseJsonInput(readText(file));
  } catch (const JsonInputError& e) {
    throw ReportError(file.string() + ": " + e.what());
  }
  if (!summary.is_object()) throw ReportError(file.string() + ": not a sweep summary (an object with 'experiments')");
  const std::vector<nlohmann::json> rows = rankedRows(summary, file);
  const std::vector<std::string> keys = sweptKeys(summary);
  std::vector<nlohmann::json> ok;
  std::map<std::string, int> statuses;
  for (const nlohmann::json& r : rows) {
    const std::string s = r["status"].get<std::string>();
    statuses[s] += 1;
    if (s == "ok" && std::isfinite(value(r, "iteration_ms"))) ok.push_back(r);
  }
  std::string counts;
  for (const auto& [s, n] : statuses) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  std::string page = pageHead("Multiverse sweep: " + folderName(dir),
                              std::to_string(rows.size()) + " experiments (" + (counts.empty() ? "none" : counts) +
                                  "), from " + file.string());
  page += "<h2>Ranked by iteration time</h2>\n" + rankedTable(rows, keys, dir);
  if (!ok.empty()) {
    page += "<h2>Where the iteration goes</h2>\n<p>The critical rank's iteration of the " +
            std::to_string(std::min(ok.size(), kChartRows)) +
            " fastest experiments: compute, communication not hidden behind compute, and pipeline bubble.</p>\n" +
            iterationBreakdown(ok);
  }
  for (const std::string& k : keys) {
    std::vector<std::string> categories;
    std::vector<double> ys;
    for (const nlohmann::json& r : ok) {
      categories.push_back(swept(r, k));
      ys.push_back(value(r, "iteration_ms"));
    }
    if (std::count(categories.begin(), categories.end(), categories.empty() ? "" : categories[0]) ==
        static_cast<std::ptrdiff_t>(categories.size())) {
      continue;  // one value: nothing to compare
    }
    page += "<h2>Iteration time by " + escape(k) + "</h2>\n" + chart::stripPlot(categories, ys, k, "iteration, ms");
  }
  const std::string memory = memoryBreakdown(rows);
  if (!memory.empty()) {
    page += "<h2>GPU memory</h2>\n<p>Per GPU of the pipeline stage with the largest total (out-of-memory "
            "experiments included: it is why they failed).</p>\n" +
            memory;
  }
  page += networkTable(ok);
  // Network detail of the training runs (--network-detail, network.link_bin), fastest first.
  NetworkCharts charts;
  for (size_t i = 0; i < ok.size() && i < kChartRows; ++i) {
    const std::string name = ok[i].value("name", "");
    if (plainName(name)) charts.add(name, dir / "experiments" / name);
  }
  page += charts.sections("experiment");
  return page + pageTail();
}

std::string netsimReport(const fs::path& dir) {
  const fs::path file = dir / "summary.csv";
  const std::vector<std::string> columns = {"experiment", "cc", "load_balance", "flows", "finished", "last_finish_ps",
                                            "mean_slowdown", "p99_slowdown", "ecn_marks", "pauses", "drops"};
  const CsvTable summary(file, columns);
  std::string page = pageHead("Multiverse netsim: " + folderName(dir),
                              std::to_string(summary.size()) + " variants, from " + file.string());
  page += "<h2>Variants</h2>\n<table>\n<tr>" + headCell("variant", true) + headCell("cc", true) +
          headCell("load balance", true) + headCell("flows") + headCell("finished") + headCell("last finish µs") +
          headCell("mean slowdown") + headCell("p99 slowdown") + headCell("ECN marks") + headCell("pauses") +
          headCell("drops") + "</tr>\n";
  NetworkCharts charts;
  for (size_t i = 0; i < summary.size(); ++i) {
    const std::string name = summary.text(i, "experiment");
    page += "<tr>" + cell(name, true) + cell(summary.text(i, "cc"), true) + cell(summary.text(i, "load_balance"), true) +
            cell(summary.text(i, "flows")) + cell(summary.text(i, "finished")) +
            cell(fixed(summary.number(i, "last_finish_ps") * 1e-6, 3)) +
            cell(fixed(summary.number(i, "mean_slowdown"), 2)) + cell(fixed(summary.number(i, "p99_slowdown"), 2)) +
            cell(summary.text(i, "ecn_marks")) + cell(summary.text(i, "pauses")) + cell(summary.text(i, "drops")) +
            "</tr>\n";
    if (plainName(name) && i < kChartRows) charts.add(name, dir / name);
  }
  page += "</table>\n";
  // Each variant's charts hold its flows and ports: a page of every variant of a large sweep
  // grew to tens of megabytes (300 variants: 85 MB), so they show the first ones, as sweep pages do.
  if (summary.size() > kChartRows) {
    page += "<p class=\"meta\">The charts show the first " + std::to_string(kChartRows) + " of the " +
            std::to_string(summary.size()) + " variants.</p>\n";
  }
  page += charts.sections("variant");
  return page + pageTail();
}

namespace {

/// Why the page cannot be written to `target` ("" when it can): it must be a new path or a
/// regular file (never a device, FIFO, folder or link, which the page's rename would replace),
/// and inside the results folder only an .html page (anything else there may be one of the
/// report's own inputs: summary.csv, a variant's flows.csv).
std::string targetProblem(const fs::path& dir, const fs::path& target) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    return target.string() + " exists and is not a regular file (a folder, link, device or FIFO); name a new file";
  }
  const fs::path results = fs::weakly_canonical(dir);
  const fs::path page = fs::weakly_canonical(target);
  const bool inside = std::mismatch(results.begin(), results.end(), page.begin(), page.end()).first == results.end();
  if (inside && page.extension() != ".html") {
    return target.string() + " is inside the results folder and not an .html page: it could be one of the "
                             "report's inputs (name the page *.html, or write it elsewhere)";
  }
  return "";
}

}  // namespace

int runReport(const fs::path& dir, const fs::path& out) {
  const fs::path target = out.empty() ? dir / "report.html" : out;
  std::string page;
  try {
    if (!fs::is_directory(dir)) throw ReportError(dir.string() + ": not a folder");
    if (const std::string problem = targetProblem(dir, target); !problem.empty()) throw ReportError(problem);
    if (fs::exists(dir / "summary.json")) {
      page = sweepReport(dir);
    } else if (fs::exists(dir / "summary.csv")) {
      page = netsimReport(dir);
    } else {
      throw ReportError(dir.string() +
                        ": no summary.json or summary.csv: not a results folder of multiverse or multiverse netsim");
    }
  } catch (const ReportError& e) {
    std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
    return kExitUsageError;
  } catch (const fs::filesystem_error& e) {  // a link loop, a folder that cannot be listed
    std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
    return kExitUsageError;
  }
  try {
    writeFileAtomically(target, page);
  } catch (const std::exception& e) {
    std::cerr << "multiverse: error: " << printable(e.what()) << "\n";
    return kExitRunError;
  }
  std::cout << "report: " << printable(target.string()) << "\n";
  return kExitOk;
}

}  // namespace mv
