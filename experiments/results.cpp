/**
 * @file results.cpp
 * Summary rows (one list of cells rendered both as CSV and JSON, so the two files cannot
 * disagree), manifests, the results folder, the closing table and progress lines.
 */
#include "experiments/results.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <variant>

#include "analytical/nccl_tuner.hpp"
#include "ecs/json_input.hpp"
#include "ecs/macros.hpp"
#include "ecs/text.hpp"
#include "experiments/version.hpp"
#include "systems/collective_shapes.hpp"

namespace mv {

namespace {

using Json = nlohmann::ordered_json;

constexpr double kPsPerMs = 1e9;
constexpr double kPsPerUs = 1e6;
constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

// --- cells -------------------------------------------------------------------------------

/// One value of a summary row: empty (not applicable), integer, real or text.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

/// The summary columns after the swept ones, in order; `metricCells` fills them.
constexpr const char* kMetricColumns[] = {"status",          "iteration_ms",  "compute_ms",
                                          "exposed_tp_ms",   "exposed_pp_ms", "exposed_dp_ms",
                                          "exposed_ep_ms",   "exposed_cp_ms", "exposed_offload_ms",
                                          "bubble_ms",       "mfu",           "tokens_per_s",
                                          "collective_us",   "algbw_gbps",    "busbw_gbps",
                                          "peak_memory_gib", "ecn_marks",     "cnps",
                                          "pauses",          "paused_us",     "drops",
                                          "retransmits",     "timeouts",      "flows_done",
                                          "packet_hops",     "wall_s",        "events",
                                          "events_per_s",    "error"};
constexpr size_t kMetricCount = std::size(kMetricColumns);

/// A real cell, empty when not finite (JSON has no NaN or infinity).
Cell real(double v) {
  return std::isfinite(v) ? Cell{v} : Cell{};
}
Cell milliseconds(Picoseconds t) {
  return real(static_cast<double>(t.ps) / kPsPerMs);
}

/// Cells of the metric columns: everything for ok; memory and simulator cost for oom;
/// only the status and message for error and invalid.
std::vector<Cell> metricCells(const ExperimentRecord& r) {
  const RunStatus status = r.status();
  const TrainingResult& res = r.result;
  const bool ok = status == RunStatus::kOk;
  const bool ran = r.ran();
  const net::NetCounters& n = res.network;
  auto simulated = [ok](Cell c) { return ok ? std::move(c) : Cell{}; };
  auto count = [&simulated](int64_t v) { return simulated(Cell{v}); };
  auto benchmark = [&](Cell c) { return ok && res.collective_bytes > 0 ? std::move(c) : Cell{}; };
  const Cell events_per_s =
      ran && res.wall_seconds > 0 ? real(static_cast<double>(res.events) / res.wall_seconds) : Cell{};
  std::vector<Cell> cells = {
      std::string(runStatusName(status)),
      simulated(milliseconds(res.iteration)),
      simulated(milliseconds(res.compute)),
      simulated(milliseconds(res.exposed_tp)),
      simulated(milliseconds(res.exposed_pp)),
      simulated(milliseconds(res.exposed_dp)),
      simulated(milliseconds(res.exposed_ep)),
      simulated(milliseconds(res.exposed_cp)),
      simulated(milliseconds(res.exposed_offload)),
      simulated(milliseconds(res.bubble)),
      simulated(real(res.mfu)),
      simulated(real(res.tokens_per_second)),
      benchmark(real(static_cast<double>(res.collective_time.ps) / kPsPerUs)),
      benchmark(real(res.algbw_gbps)),
      benchmark(real(res.busbw_gbps)),
      ran ? real(static_cast<double>(res.peak_memory.total().count) / kBytesPerGib) : Cell{},
      count(n.ecn_marks),
      count(n.cnps),
      count(n.pauses),
      simulated(real(static_cast<double>(n.paused_ps) / kPsPerUs)),
      count(n.drops),
      count(n.retransmits),
      count(n.timeouts),
      count(n.flows_done),
      count(n.packet_hops),
      ran ? real(res.wall_seconds) : Cell{},
      ran ? Cell{res.events} : Cell{},
      events_per_s,
      r.error.empty() ? Cell{} : Cell{r.error},
  };
  MV_ASSERT(cells.size() == kMetricCount, "metric cells out of step with kMetricColumns");
  return cells;
}

/// The shortest text that reads back as the same double.
std::string shortestReal(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  MV_ASSERT(ec == std::errc(), "to_chars failed on a double");
  return std::string(buf, end);
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csvCell(const Cell& cell) {
  if (const auto* i = std::get_if<int64_t>(&cell)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell)) return shortestReal(*d);
  if (const auto* s = std::get_if<std::string>(&cell)) return csvField(*s);
  return "";
}

Json jsonCell(const Cell& cell) {
  if (const auto* i = std::get_if<int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  return nullptr;
}

/// The swept keys and values as a JSON object, in axis order.
Json sweptJson(const ExperimentRecord& r) {
  Json swept = Json::object();
  for (const auto& [key, value] : r.swept) swept[key] = value;
  return swept;
}

/// Memory of one GPU, in bytes (parameters as a count, in_flight in micro-batches).
Json memoryJson(const MemoryBreakdown& m) {
  return Json{{"stage", m.stage},
              {"parameters", m.parameters},
              {"weights_bytes", m.weights.count},
              {"gradients_bytes", m.gradients.count},
              {"optimizer_bytes", m.optimizer.count},
              {"activation_per_layer_bytes", m.activation_per_layer.count},
              {"in_flight", m.in_flight},
              {"activations_bytes", m.activations.count},
              {"logits_bytes", m.logits.count},
              {"workspace_bytes", m.workspace.count},
              {"total_bytes", m.total().count}};
}

/// The summary.json object of one experiment: the CSV columns (swept ones grouped under
/// "swept") and the memory breakdown.
Json summaryRowJson(const ExperimentRecord& r) {
  Json row = {{"name", r.name}, {"id", formatExperimentId(r.id)}, {"swept", sweptJson(r)}};
  const std::vector<Cell> cells = metricCells(r);
  for (size_t i = 0; i < kMetricCount; ++i) row[kMetricColumns[i]] = jsonCell(cells[i]);
  row["memory"] = r.ran() ? memoryJson(r.result.peak_memory) : Json(nullptr);
  return row;
}

std::string csvHeader(const std::vector<std::string>& swept_keys) {
  std::string line = "name,id";
  for (const std::string& key : swept_keys) line.append(",").append(csvField(key));
  for (const char* column : kMetricColumns) line.append(",").append(column);
  return line + "\n";
}

/// The CSV fields of the metric columns, each preceded by its comma.
std::string csvMetrics(const ExperimentRecord& r) {
  std::string text;
  for (const Cell& cell : metricCells(r)) text.append(",").append(csvCell(cell));
  return text;
}

/// One CSV line: identity, the swept columns of `swept_keys`, then `metrics` (csvMetrics).
std::string csvRow(const ExperimentRecord& r, const std::vector<std::string>& swept_keys, const std::string& metrics) {
  std::string line = csvField(r.name) + "," + formatExperimentId(r.id);
  for (const std::string& key : swept_keys) {
    line += ',';
    const auto it = std::find_if(r.swept.begin(), r.swept.end(), [&key](const auto& kv) { return kv.first == key; });
    if (it != r.swept.end()) line += csvField(it->second);
  }
  return line.append(metrics).append("\n");
}

/// Adds the swept keys of `r` not yet in `keys`, keeping first-seen order.
void collectSweptKeys(const ExperimentRecord& r, std::vector<std::string>& keys) {
  for (const auto& kv : r.swept) {
    if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
  }
}

// --- manifests ---------------------------------------------------------------------------

/// A plain YAML scalar as JSON, read by the YAML 1.2 core schema: null, bool, integer,
/// real (finite), else text.
Json yamlScalarJson(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  const std::string_view digits = text.front() == '+' ? std::string_view(text).substr(1) : std::string_view(text);
  const char* first = digits.data();
  const char* last = digits.data() + digits.size();
  int64_t i = 0;
  if (const auto [end, ec] = std::from_chars(first, last, i); ec == std::errc() && end == last) return i;
  double d = 0;
  if (const auto [end, ec] = std::from_chars(first, last, d); ec == std::errc() && end == last && std::isfinite(d)) {
    return d;
  }
  return text;
}

Json yamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = yamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.push_back(yamlToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      // Quoted scalars carry the non-specific tag "!" and stay text.
      return node.Tag() == "!" ? Json(node.Scalar()) : yamlScalarJson(node.Scalar());
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
  }
  return nullptr;
}

/// The resolved configuration as JSON, or null when the text is not YAML.
Json configJson(const std::string& yaml) {
  try {
    return yamlToJson(YAML::Load(yaml));
  } catch (const YAML::Exception&) {
    return nullptr;
  }
}

Json networkJson(const net::NetCounters& n) {
  return Json{{"packets_sent", n.packets_sent},
              {"packet_hops", n.packet_hops},
              {"ecn_marks", n.ecn_marks},
              {"cnps", n.cnps},
              {"pauses", n.pauses},
              {"paused_ps", n.paused_ps},
              {"drops", n.drops},
              {"retransmits", n.retransmits},
              {"timeouts", n.timeouts},
              {"nacks", n.nacks},
              {"flows_done", n.flows_done},
              {"overflow", n.overflow}};
}

/// The whole TrainingResult, times in integer picoseconds so it reads back exactly.
Json resultJson(const TrainingResult& res) {
  Json j{{"oom", res.oom},
              {"iteration_ps", res.iteration.ps},
              {"compute_ps", res.compute.ps},
              {"exposed_tp_ps", res.exposed_tp.ps},
              {"exposed_pp_ps", res.exposed_pp.ps},
              {"exposed_dp_ps", res.exposed_dp.ps},
              {"exposed_ep_ps", res.exposed_ep.ps},
              {"exposed_cp_ps", res.exposed_cp.ps},
              {"exposed_offload_ps", res.exposed_offload.ps},
              {"bubble_ps", res.bubble.ps},
              {"mfu", res.mfu},
              {"tokens_per_second", res.tokens_per_second},
              {"peak_memory", memoryJson(res.peak_memory)},
              {"network", networkJson(res.network)},
              {"wall_seconds", res.wall_seconds},
              {"events", res.events},
              {"packet_storage",
               {{"restarts", res.storage_retries},
                {"switch_pool_slots", res.pool_knobs.switch_pool_slots},
                {"link_ring_factor", res.pool_knobs.link_ring_factor},
                {"nic_control_slots", res.pool_knobs.nic_control_slots}}}};
  if (!res.collective_choices.empty()) {
    Json choices = Json::array();
    for (const CollectiveChoice& c : res.collective_choices) {
      choices.push_back(Json{{"op", collectiveOpName(c.op)},
                             {"ranks", c.ranks},
                             {"bytes", c.bytes},
                             {"algorithm", train::algorithmName(c.algorithm)},
                             {"protocol", c.protocol == CollectiveChoice::kNoProtocol
                                              ? Json(nullptr)
                                              : Json(ncclProtocolName(static_cast<NcclProtocol>(c.protocol)))},
                             {"channels", c.channels},
                             {"count", c.count}});
    }
    j["collective_choices"] = std::move(choices);
  }
  if (res.collective_bytes > 0) {
    j["collective"] = Json{{"bytes", res.collective_bytes},
                           {"time_ps", res.collective_time.ps},
                           {"algbw_gbps", res.algbw_gbps},
                           {"busbw_gbps", res.busbw_gbps}};
  }
  return j;
}

/// A finite double, or 0 for the null nlohmann writes in place of NaN and infinity.
double realFrom(const Json& v) {
  return v.is_null() ? 0.0 : v.get<double>();
}

MemoryBreakdown memoryFromJson(const Json& j) {
  MemoryBreakdown m;
  m.stage = j.at("stage").get<uint32_t>();
  m.parameters = realFrom(j.at("parameters"));
  m.weights = Bytes{j.at("weights_bytes").get<int64_t>()};
  m.gradients = Bytes{j.at("gradients_bytes").get<int64_t>()};
  m.optimizer = Bytes{j.at("optimizer_bytes").get<int64_t>()};
  m.activation_per_layer = Bytes{j.at("activation_per_layer_bytes").get<int64_t>()};
  m.in_flight = realFrom(j.at("in_flight"));
  m.activations = Bytes{j.at("activations_bytes").get<int64_t>()};
  m.logits = Bytes{j.at("logits_bytes").get<int64_t>()};
  m.workspace = Bytes{j.at("workspace_bytes").get<int64_t>()};
  return m;
}

net::NetCounters networkFromJson(const Json& j) {
  net::NetCounters n;
  n.packets_sent = j.at("packets_sent").get<int64_t>();
  n.packet_hops = j.at("packet_hops").get<int64_t>();
  n.ecn_marks = j.at("ecn_marks").get<int64_t>();
  n.cnps = j.at("cnps").get<int64_t>();
  n.pauses = j.at("pauses").get<int64_t>();
  n.paused_ps = j.at("paused_ps").get<int64_t>();
  n.drops = j.at("drops").get<int64_t>();
  n.retransmits = j.at("retransmits").get<int64_t>();
  n.timeouts = j.at("timeouts").get<int64_t>();
  n.nacks = j.at("nacks").get<int64_t>();
  n.flows_done = j.at("flows_done").get<int64_t>();
  n.overflow = j.at("overflow").get<int64_t>();
  return n;
}

/// One entry of a manifest's collective_choices.
CollectiveChoice choiceFromJson(const Json& j) {
  CollectiveChoice c;
  const std::string op = j.at("op").get<std::string>();
  const std::optional<CollectiveOp> parsed = parseCollectiveOp(op);
  if (!parsed) throw std::invalid_argument("collective_choices: unknown op '" + op + "'");
  c.op = *parsed;
  c.ranks = j.at("ranks").get<uint32_t>();
  c.bytes = j.at("bytes").get<int64_t>();
  const std::string algorithm = j.at("algorithm").get<std::string>();
  bool known = false;
  for (const CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                                      CollectiveAlgorithm::kHalvingDoubling, CollectiveAlgorithm::kDirect,
                                      CollectiveAlgorithm::kHierarchical}) {
    if (algorithm == train::algorithmName(a)) {
      c.algorithm = a;
      known = true;
    }
  }
  if (!known) throw std::invalid_argument("collective_choices: unknown algorithm '" + algorithm + "'");
  if (!j.at("protocol").is_null()) {
    const std::string protocol = j.at("protocol").get<std::string>();
    known = false;
    for (const NcclProtocol p : {NcclProtocol::kLl, NcclProtocol::kLl128, NcclProtocol::kSimple}) {
      if (protocol == ncclProtocolName(p)) {
        c.protocol = static_cast<uint8_t>(p);
        known = true;
      }
    }
    if (!known) throw std::invalid_argument("collective_choices: unknown protocol '" + protocol + "'");
  }
  c.channels = j.at("channels").get<uint32_t>();
  c.count = j.at("count").get<uint32_t>();
  return c;
}

TrainingResult resultFromJson(const Json& j) {
  TrainingResult res;
  res.oom = j.at("oom").get<bool>();
  res.iteration = Picoseconds{j.at("iteration_ps").get<int64_t>()};
  res.compute = Picoseconds{j.at("compute_ps").get<int64_t>()};
  res.exposed_tp = Picoseconds{j.at("exposed_tp_ps").get<int64_t>()};
  res.exposed_pp = Picoseconds{j.at("exposed_pp_ps").get<int64_t>()};
  res.exposed_dp = Picoseconds{j.at("exposed_dp_ps").get<int64_t>()};
  res.exposed_ep = Picoseconds{j.at("exposed_ep_ps").get<int64_t>()};
  // Absent from results written before context parallelism and activation offload.
  res.exposed_cp = Picoseconds{j.value("exposed_cp_ps", int64_t{0})};
  res.exposed_offload = Picoseconds{j.value("exposed_offload_ps", int64_t{0})};
  res.bubble = Picoseconds{j.at("bubble_ps").get<int64_t>()};
  res.mfu = realFrom(j.at("mfu"));
  res.tokens_per_second = realFrom(j.at("tokens_per_second"));
  res.peak_memory = memoryFromJson(j.at("peak_memory"));
  res.network = networkFromJson(j.at("network"));
  res.wall_seconds = realFrom(j.at("wall_seconds"));
  res.events = j.at("events").get<int64_t>();
  if (j.contains("collective_choices")) {  // absent from results written before NCCL's choice
    for (const Json& c : j.at("collective_choices")) res.collective_choices.push_back(choiceFromJson(c));
  }
  if (j.contains("collective")) {  // collective benchmarks only
    const Json& c = j.at("collective");
    res.collective_bytes = c.at("bytes").get<int64_t>();
    res.collective_time = Picoseconds{c.at("time_ps").get<int64_t>()};
    res.algbw_gbps = realFrom(c.at("algbw_gbps"));
    res.busbw_gbps = realFrom(c.at("busbw_gbps"));
  }
  if (j.contains("packet_storage")) {  // older manifests lack it
    const Json& s = j.at("packet_storage");
    res.storage_retries = s.at("restarts").get<uint32_t>();
    res.pool_knobs = net::PoolKnobs{s.at("switch_pool_slots").get<int32_t>(), s.at("link_ring_factor").get<int32_t>(),
                                    s.at("nic_control_slots").get<int32_t>()};
  }
  return res;
}

uint64_t parseExperimentId(const std::string& hex) {
  uint64_t id = 0;
  const char* last = hex.data() + hex.size();
  const auto [end, ec] = std::from_chars(hex.data(), last, id, 16);
  if (hex.size() != 16 || ec != std::errc() || end != last) throw std::runtime_error("bad experiment id '" + hex + "'");
  return id;
}

// --- files -------------------------------------------------------------------------------

constexpr const char* kSummaryCsv = "summary.csv";
constexpr const char* kSummaryJson = "summary.json";
constexpr const char* kExperimentsDir = "experiments";
constexpr const char* kManifest = "manifest.json";
/// Written into every results folder Multiverse opens: what --force may replace.
constexpr const char* kMarker = ".multiverse";
constexpr const char* kTempSuffix = ".tmp";

std::filesystem::path tempPath(const std::filesystem::path& path) {
  return path.string() + kTempSuffix;
}


std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Whether `dir` holds what a sweep writes: a summary (or its temporary file) or an
/// experiments folder.
bool holdsResults(const std::filesystem::path& dir) {
  const std::filesystem::path ours[] = {kExperimentsDir, kSummaryCsv, kSummaryJson, tempPath(kSummaryCsv),
                                        tempPath(kSummaryJson)};
  return std::any_of(std::begin(ours), std::end(ours),
                     [&dir](const std::filesystem::path& name) { return std::filesystem::exists(dir / name); });
}

/// Whether Multiverse wrote the results in `dir`: its marker, or (folders written before the
/// marker existed) a summary beside an experiments folder.
bool ownedResults(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / kMarker) ||
         (std::filesystem::exists(dir / kSummaryJson) && std::filesystem::is_directory(dir / kExperimentsDir));
}

void validateName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos) {
    throw std::invalid_argument("experiment name '" + name +
                                "' cannot name a folder (empty, '.', '..', or holds '/', '\\' or NUL)");
  }
}

// --- closing table -----------------------------------------------------------------------

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

double peakGib(const ExperimentRecord& r) {
  return static_cast<double>(r.result.peak_memory.total().count) / kBytesPerGib;
}

/// The ranking key of an ok experiment: smaller is better.
double rankValue(const ExperimentRecord& r, RankBy by) {
  switch (by) {
    case RankBy::kIterationTime:
      return static_cast<double>(r.result.iteration.ps);
    case RankBy::kMfu:
      return -r.result.mfu;
    case RankBy::kTokensPerSecond:
      return -r.result.tokens_per_second;
    case RankBy::kPeakMemory:
      return peakGib(r);
  }
  return 0;
}

/// Rows of text cells rendered with each column as wide as its widest cell; columns
/// flagged in `right` are right-aligned. No trailing spaces.
std::string alignColumns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width(right.size(), 0);
  std::vector<std::vector<std::string>> cells;  // as the terminal shows them: control characters escaped
  for (const auto& row : rows) {
    std::vector<std::string>& shown = cells.emplace_back();
    for (size_t c = 0; c < row.size(); ++c) {
      shown.push_back(printable(row[c]));
      width[c] = std::max(width[c], characterCount(shown.back()));
    }
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string pad(width[c] - characterCount(row[c]), ' ');
      line += right[c] ? pad + row[c] : row[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::string sweptValue(const ExperimentRecord& r, const std::string& key) {
  for (const auto& [k, v] : r.swept) {
    if (k == key) return v;
  }
  return "";
}

/// `j` as JSON text; text that is not UTF-8 (validate refuses it in inputs; an error
/// message may still quote bytes) is written with U+FFFD in its place instead of throwing, so
/// one record never keeps the others from being written.
std::string dumpJson(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

// --- records -----------------------------------------------------------------------------

const char* runStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kOom:
      return "oom";
    case RunStatus::kError:
      return "error";
    case RunStatus::kInvalid:
      return "invalid";
  }
  return "?";
}

RunStatus ExperimentRecord::status() const {
  if (invalid) return RunStatus::kInvalid;
  if (!error.empty()) return RunStatus::kError;
  return result.oom ? RunStatus::kOom : RunStatus::kOk;
}

std::string formatExperimentId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

std::vector<std::string> sweptKeys(const std::vector<ExperimentRecord>& records) {
  std::vector<std::string> keys;
  for (const ExperimentRecord& r : records) collectSweptKeys(r, keys);
  return keys;
}

std::string summaryCsv(const std::vector<ExperimentRecord>& records) {
  const std::vector<std::string> keys = sweptKeys(records);
  std::string text = csvHeader(keys);
  for (const ExperimentRecord& r : records) text += csvRow(r, keys, csvMetrics(r));
  return text;
}

std::string simaiEndToEnd(const std::string& name, const TrainingResult& r) {
  const double total = static_cast<double>(r.iteration.ps) * 1e-6;
  auto part = [&](Picoseconds t) {
    const double us = static_cast<double>(t.ps) * 1e-6;
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %.0f (%.2f%%)", us, total > 0 ? 100.0 * us / total : 0.0);
    return std::string(buf);
  };
  char end[32];
  std::snprintf(end, sizeof end, ", %.0f\n", total);
  return "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, Expose_PP_comm, bubble time, "
         "total comp, total exposed comm, Total time\n" +
         name + part(r.exposed_dp) + part(Picoseconds{0}) + part(r.exposed_tp) + part(r.exposed_ep) +
         part(r.exposed_pp) + part(r.bubble) + part(r.compute) +
         part(Picoseconds{r.exposed_dp.ps + r.exposed_tp.ps + r.exposed_ep.ps + r.exposed_cp.ps}) + end;
}

std::string sweepOfExperiment(const std::string& config) {
  std::string out = "base:\n  ";
  for (size_t i = 0; i < config.size(); ++i) {
    out += config[i];
    if (config[i] == '\n' && i + 1 < config.size()) out += "  ";
  }
  return out;
}

std::string experimentOfSweep(const std::string& sweep) {
  const std::string head = "base:\n  ";
  if (sweep.compare(0, head.size(), head) != 0) return sweep;  // a manifest from before the wrapping
  std::string out;
  for (size_t i = head.size(); i < sweep.size(); ++i) {
    out += sweep[i];
    if (sweep[i] == '\n' && sweep.compare(i + 1, 2, "  ") == 0) i += 2;
  }
  return out;
}

std::string manifestJson(const ExperimentRecord& r) {
  const Json manifest = {{"name", r.name},
                         {"id", formatExperimentId(r.id)},
                         {"index", r.index},
                         {"seed", r.seed},
                         {"version", kVersion},
                         {"backends", kBackends},
                         {"status", runStatusName(r.status())},
                         {"error", r.error},
                         {"swept", sweptJson(r)},
                         {"config_yaml", sweepOfExperiment(r.resolved_config)},
                         {"config", configJson(r.resolved_config)},
                         {"result", resultJson(r.result)}};
  return dumpJson(manifest, 2) + "\n";
}

ExperimentRecord parseManifest(const std::string& text) {
  try {
    const Json j = parseOrderedJsonInput(text);
    ExperimentRecord r;
    r.name = j.at("name").get<std::string>();
    r.id = parseExperimentId(j.at("id").get<std::string>());
    r.index = j.at("index").get<uint64_t>();
    r.seed = j.at("seed").get<uint64_t>();
    r.error = j.at("error").get<std::string>();
    r.invalid = j.at("status").get<std::string>() == runStatusName(RunStatus::kInvalid);
    for (const auto& [key, value] : j.at("swept").items()) r.swept.emplace_back(key, value.get<std::string>());
    r.resolved_config = experimentOfSweep(j.at("config_yaml").get<std::string>());
    r.result = resultFromJson(j.at("result"));
    return r;
  } catch (const JsonInputError& e) {
    throw std::runtime_error(std::string("not a Multiverse manifest: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a Multiverse manifest: ") + e.what());
  }
}

// --- FolderLock ----------------------------------------------------------------------------

FolderLock::FolderLock(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / ".lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + file.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  const int error = errno;
  ::close(fd_);
  if (error == EWOULDBLOCK) {
    throw FolderBusy(dir.string() + " is being written by another multiverse run (it holds " + file.string() +
                     "); wait for that run to end or choose another output folder");
  }
  throw std::runtime_error("cannot lock " + file.string() + ": " + std::strerror(error));
}

FolderLock::~FolderLock() {
  ::close(fd_);  // releases the lock
}

// --- ResultsWriter -------------------------------------------------------------------------

void ResultsWriter::open(const std::filesystem::path& dir, OpenMode mode) {
  dir_ = dir;
  rows_.clear();
  rows_by_id_.clear();
  ids_by_name_.clear();
  const bool owned = ownedResults(dir_);
  if (!owned && holdsResults(dir_)) {  // a folder of the user's, or another tool's (netsim writes summary.csv)
    throw std::runtime_error(dir_.string() + " holds an experiments folder or a summary that a sweep did not write (no " +
                             kMarker + " marker beside them); nothing was changed: choose another output folder");
  }
  if (mode == OpenMode::kCreate && holdsResults(dir_)) {
    throw std::runtime_error(dir_.string() +
                             " already holds results; use --resume to continue that sweep, --force to replace "
                             "its results, or choose another output folder");
  }
  if (mode == OpenMode::kOverwrite && owned) {
    std::filesystem::remove_all(dir_ / kExperimentsDir);
    for (const char* file : {kSummaryCsv, kSummaryJson}) {
      std::filesystem::remove(dir_ / file);
      std::filesystem::remove(tempPath(dir_ / file));
    }
  }
  std::filesystem::create_directories(dir_);
  if (!std::filesystem::exists(dir_ / kMarker)) {
    writeFileAtomically(dir_ / kMarker,
                        "multiverse results: summary.csv, summary.json and experiments/ are this folder's results; "
                        "--force replaces them, --resume continues them (docs/results.md)\n");
  }
  if (mode == OpenMode::kResume) {
    for (const char* file : {kSummaryCsv, kSummaryJson}) std::filesystem::remove(tempPath(dir_ / file));
    loadManifests();
  }
  writeSummaries();
}

void ResultsWriter::loadManifests() {
  const std::filesystem::path root = dir_ / kExperimentsDir;
  if (!std::filesystem::is_directory(root)) return;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    // Only folders of its own: a link (to a folder elsewhere, or a loop) is never followed,
    // so nothing outside the results folder is read or deleted.
    if (!entry.is_directory() || entry.is_symlink()) continue;
    const std::filesystem::path manifest = entry.path() / kManifest;
    std::filesystem::remove(tempPath(manifest));
    if (!std::filesystem::exists(manifest)) continue;  // started, never finished: not done
    ExperimentRecord record;
    try {
      record = parseManifest(readFile(manifest));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("cannot resume from " + manifest.string() + ": " + e.what() +
                               " (delete that experiment's folder to run it again)");
    }
    if (record.name != entry.path().filename().string()) {
      throw std::runtime_error("cannot resume: " + manifest.string() + " names experiment '" + record.name +
                               "', not its folder's name");
    }
    if (rows_by_id_.contains(record.id)) {
      throw std::runtime_error("cannot resume: experiments '" + record.name + "' and '" +
                               rows_.at(rows_by_id_.at(record.id)).record.name + "' have the same id " +
                               formatExperimentId(record.id));
    }
    addRow(std::move(record), true);
  }
}

void ResultsWriter::adoptNames(const std::vector<Current>& current) {
  std::unordered_map<uint64_t, const Current*> now;
  std::unordered_map<std::string, uint64_t> id_of;
  for (const Current& c : current) {
    now[c.id] = &c;
    id_of[c.name] = c.id;
  }
  struct Move {
    uint64_t id;
    std::string from, to;
    uint64_t index;
  };
  std::vector<Move> moves;
  for (const auto& [key, row] : rows_) {
    const ExperimentRecord& r = row.record;
    if (const auto it = now.find(r.id); it != now.end()) {
      if (it->second->name != r.name || it->second->index != r.index) {
        moves.push_back({r.id, r.name, it->second->name, it->second->index});
      }
    } else if (const auto taken = id_of.find(r.name); taken != id_of.end() && taken->second != r.id) {
      moves.push_back({r.id, r.name, r.name + "~" + formatExperimentId(r.id), r.index});
    }
  }
  if (moves.empty()) return;
  // Two passes through names of their own, so that names may swap.
  const std::filesystem::path root = dir_ / kExperimentsDir;
  auto aside = [&](const Move& m) { return root / (".moving-" + formatExperimentId(m.id)); };
  for (const Move& m : moves) {
    validateName(m.to);
    std::filesystem::remove_all(aside(m));
    std::filesystem::rename(root / m.from, aside(m));
  }
  for (const Move& m : moves) {
    // What is left at the new name is no kept result (every kept one there moved aside): a
    // folder of an experiment that started and never finished.
    std::filesystem::remove_all(root / m.to);
    std::filesystem::rename(aside(m), root / m.to);
    ExperimentRecord record = rows_.at(rows_by_id_.at(m.id)).record;
    record.name = m.to;
    record.index = m.index;
    writeFileAtomically(root / m.to / kManifest, manifestJson(record));
    removeRow(m.id);
    addRow(std::move(record), true);
  }
  writeSummaries();
}

std::vector<ExperimentRecord> ResultsWriter::records() const {
  std::vector<ExperimentRecord> out;
  out.reserve(rows_.size());
  for (const auto& [key, row] : rows_) out.push_back(row.record);
  return out;
}

std::filesystem::path ResultsWriter::experimentDir(const std::string& name) const {
  validateName(name);
  return dir_ / kExperimentsDir / name;
}

void ResultsWriter::checkCanAdd(const ExperimentRecord& record) const {
  if (const auto it = rows_by_id_.find(record.id); it != rows_by_id_.end()) {
    const Row& row = rows_.at(it->second);
    if (row.record.name != record.name && !row.from_earlier_run) {
      throw std::invalid_argument("experiments '" + row.record.name + "' and '" + record.name + "' have the same id " +
                                  formatExperimentId(record.id));
    }
  }
  if (const auto it = ids_by_name_.find(record.name); it != ids_by_name_.end() && it->second != record.id) {
    const Row& row = rows_.at(rows_by_id_.at(it->second));
    if (!row.from_earlier_run) {
      throw std::invalid_argument("two experiments are named '" + record.name + "' (ids " +
                                  formatExperimentId(it->second) + " and " + formatExperimentId(record.id) +
                                  "); experiment names must be unique");
    }
  }
}

void ResultsWriter::write(const ExperimentRecord& record) {
  const std::filesystem::path folder = experimentDir(record.name);
  checkCanAdd(record);
  // A result of an earlier run under another name goes, manifest included, so that a
  // later resume does not find two experiments with one id.
  if (const auto it = rows_by_id_.find(record.id); it != rows_by_id_.end()) {
    const std::string old_name = rows_.at(it->second).record.name;
    if (old_name != record.name) std::filesystem::remove(experimentDir(old_name) / kManifest);
    removeRow(record.id);
  }
  if (const auto it = ids_by_name_.find(record.name); it != ids_by_name_.end()) removeRow(it->second);

  std::filesystem::create_directories(folder);
  writeFileAtomically(folder / kManifest, manifestJson(record));
  addRow(record, false);
  writeSummaries();
}

void ResultsWriter::addRow(ExperimentRecord record, bool from_earlier_run) {
  const RowKey key{record.index, record.id};
  rows_by_id_[record.id] = key;
  ids_by_name_[record.name] = record.id;
  std::string json = dumpJson(summaryRowJson(record));
  std::string csv_metrics = csvMetrics(record);
  rows_[key] = Row{std::move(record), std::move(json), std::move(csv_metrics), from_earlier_run};
}

void ResultsWriter::removeRow(uint64_t id) {
  const auto it = rows_by_id_.find(id);
  if (it == rows_by_id_.end()) return;
  ids_by_name_.erase(rows_.at(it->second).record.name);
  rows_.erase(it->second);
  rows_by_id_.erase(it);
}

void ResultsWriter::writeSummaries() const {
  std::vector<std::string> keys;
  for (const auto& [key, row] : rows_) collectSweptKeys(row.record, keys);

  std::string csv = csvHeader(keys);
  for (const auto& [key, row] : rows_) csv += csvRow(row.record, keys, row.csv_metrics);

  Json columns = Json::array({"name", "id"});
  for (const std::string& k : keys) columns.push_back(k);
  for (const char* c : kMetricColumns) columns.push_back(c);
  std::string json =
      "{\n\"version\": " + Json(kVersion).dump() + ",\n\"columns\": " + dumpJson(columns) + ",\n\"experiments\": [";
  bool first = true;
  for (const auto& [key, row] : rows_) {
    json += first ? "\n" : ",\n";
    json += row.json;
    first = false;
  }
  json += "\n]\n}\n";

  writeFileAtomically(dir_ / kSummaryCsv, csv);
  writeFileAtomically(dir_ / kSummaryJson, json);
}

// --- closing table -----------------------------------------------------------------------

std::string rankedTable(const std::vector<ExperimentRecord>& records, size_t top, RankBy by) {
  std::vector<const ExperimentRecord*> order;
  order.reserve(records.size());
  for (const ExperimentRecord& r : records) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [by](const ExperimentRecord* a, const ExperimentRecord* b) {
    const RunStatus sa = a->status(), sb = b->status();
    if (sa != sb) return sa < sb;  // ok, then oom, then error, then invalid
    return sa == RunStatus::kOk && rankValue(*a, by) < rankValue(*b, by);
  });
  if (top > 0 && order.size() > top) order.resize(top);

  const std::vector<std::string> keys = sweptKeys(records);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"#", "name"};
  header.insert(header.end(), keys.begin(), keys.end());
  header.insert(header.end(), {"iteration ms", "MFU %", "tokens/s", "peak GiB"});
  rows.push_back(header);
  for (size_t i = 0; i < order.size(); ++i) {
    const ExperimentRecord& r = *order[i];
    const RunStatus status = r.status();
    std::vector<std::string> row = {std::to_string(i + 1), r.name};
    for (const std::string& key : keys) row.push_back(sweptValue(r, key));
    if (status == RunStatus::kOk) {
      row.insert(row.end(), {fixed(static_cast<double>(r.result.iteration.ps) / kPsPerMs, 3),
                             fixed(100 * r.result.mfu, 1), fixed(r.result.tokens_per_second, 0)});
    } else {
      row.insert(row.end(), {status == RunStatus::kOom ? "OOM" : runStatusName(status), "-", "-"});
    }
    row.push_back(r.ran() ? fixed(peakGib(r), 1) : "-");
    rows.push_back(std::move(row));
  }
  std::vector<bool> right(header.size(), false);
  right[0] = true;
  std::fill(right.end() - 4, right.end(), true);
  return alignColumns(rows, right);
}

std::string collectiveTable(const std::vector<ExperimentRecord>& records) {
  std::vector<std::string> keys;
  for (const std::string& key : sweptKeys(records)) {
    if (key != "workload.collective.bytes") keys.push_back(key);
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "name"};
  header.insert(header.end(), keys.begin(), keys.end());
  rows.push_back(header);
  for (const ExperimentRecord& r : records) {
    if (r.status() != RunStatus::kOk || r.result.collective_bytes <= 0) continue;
    std::vector<std::string> row = {std::to_string(r.result.collective_bytes),
                                    fixed(static_cast<double>(r.result.collective_time.ps) / kPsPerUs, 2),
                                    fixed(r.result.algbw_gbps, 2), fixed(r.result.busbw_gbps, 2), r.name};
    for (const std::string& key : keys) row.push_back(sweptValue(r, key));
    rows.push_back(std::move(row));
  }
  if (rows.size() == 1) return "";
  std::vector<bool> right(header.size(), false);
  std::fill(right.begin(), right.begin() + 4, true);
  return alignColumns(rows, right);
}

// --- progress ------------------------------------------------------------------------------

ProgressStyle detectProgressStyle(int fd, bool quiet) {
  if (quiet) return ProgressStyle::kQuiet;
  return isatty(fd) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

std::optional<double> remainingSeconds(const ProgressSnapshot& p) {
  if (p.done >= p.total) return 0.0;
  const size_t finished_here = p.done > p.done_at_start ? p.done - p.done_at_start : 0;
  if (finished_here == 0) return std::nullopt;
  return p.elapsed_s / static_cast<double>(finished_here) * static_cast<double>(p.total - p.done);
}

std::string formatDuration(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds) || *seconds < 0) return "--";
  const auto s = static_cast<long long>(std::llround(*seconds));
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s / 60 % 60);
  }
  return buf;
}

std::string progressBar(size_t done, size_t total, size_t width) {
  const size_t filled = total == 0 ? width : std::min(width, done * width / total);
  std::string bar = "[";
  bar.append(filled, '#').append(width - filled, '.').append("]");
  return bar;
}

std::string progressBarLine(const ProgressSnapshot& p) {
  return progressBar(p.done, p.total, 30) + " " + std::to_string(p.done) + "/" + std::to_string(p.total) +
         "  elapsed " + formatDuration(p.elapsed_s) + "  ETA " + formatDuration(remainingSeconds(p));
}

std::string progressRecordLine(const ProgressSnapshot& p, const ExperimentRecord& r) {
  const std::string total = std::to_string(p.total);
  std::string done = std::to_string(p.done);
  done.insert(0, total.size() > done.size() ? total.size() - done.size() : 0, ' ');
  std::string status = runStatusName(r.status());
  status.resize(std::max<size_t>(status.size(), 5), ' ');
  std::string line = "[" + done + "/" + total + "] " + status + " " + r.name + "  ";
  switch (r.status()) {
    case RunStatus::kOk:
      if (r.result.collective_bytes > 0) {
        line += "collective " + fixed(static_cast<double>(r.result.collective_time.ps) / kPsPerUs, 2) + " us  busbw " +
                fixed(r.result.busbw_gbps, 2) + " GB/s";
        break;
      }
      line += "iteration " + fixed(static_cast<double>(r.result.iteration.ps) / kPsPerMs, 3) + " ms  MFU " +
              fixed(100 * r.result.mfu, 1) + "%";
      break;
    case RunStatus::kOom:
      line += "needs " + fixed(peakGib(r), 1) + " GiB per GPU";
      break;
    case RunStatus::kError:
    case RunStatus::kInvalid:
      line += r.error;
      break;
  }
  return line + "  elapsed " + formatDuration(p.elapsed_s) + "  ETA " + formatDuration(remainingSeconds(p));
}

Progress::Progress(std::ostream& out, ProgressStyle style, size_t total, size_t done_at_start)
    : out_(&out), style_(style), start_(std::chrono::steady_clock::now()) {
  state_.total = total;
  state_.done = done_at_start;
  state_.done_at_start = done_at_start;
  if (style_ == ProgressStyle::kBar) {
    *out_ << "\r" << progressBarLine(state_) << "\x1b[K" << std::flush;
    bar_shown_ = true;
  }
}

ProgressSnapshot Progress::snapshot() const {
  ProgressSnapshot p = state_;
  p.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return p;
}

void Progress::heartbeat(const std::string& text) {
  const ProgressSnapshot p = snapshot();
  switch (style_) {
    case ProgressStyle::kQuiet:
      return;
    case ProgressStyle::kLines:
      *out_ << "... " << printable(text) << "  elapsed " << formatDuration(p.elapsed_s) << "\n" << std::flush;
      return;
    case ProgressStyle::kBar:
      *out_ << "\r" << progressBarLine(p) << "  " << printable(text) << "\x1b[K" << std::flush;
      return;
  }
}

void Progress::finished(const ExperimentRecord& record) {
  ++state_.done;
  const ProgressSnapshot p = snapshot();
  switch (style_) {
    case ProgressStyle::kQuiet:
      return;
    case ProgressStyle::kLines:
      *out_ << printable(progressRecordLine(p, record)) << "\n" << std::flush;
      return;
    case ProgressStyle::kBar:
      if (!record.ran()) *out_ << "\r\x1b[K" << printable(progressRecordLine(p, record)) << "\n";
      *out_ << "\r" << progressBarLine(p) << "\x1b[K" << std::flush;
      return;
  }
}

void Progress::finish() {
  if (!bar_shown_) return;
  *out_ << "\n" << std::flush;
  bar_shown_ = false;
}

void writeFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = tempPath(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace mv
