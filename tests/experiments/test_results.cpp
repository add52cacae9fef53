/**
 * @file test_results.cpp
 * The results folder: CSV and JSON summaries agree value by value, every write leaves
 * complete files, resume after an interruption, the refusal to clobber, manifests, the
 * closing table and progress formatting.
 */
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/results.hpp"
#include "experiments/version.hpp"

using namespace mv;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

/// Catch's string matcher (mv::Contains, a type-list trait, takes the unqualified name).
Catch::Matchers::StdString::ContainsMatcher contains(const std::string& text) {
  return Catch::Matchers::Contains(text);
}

/// A fresh folder under the system temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("mv_test_results_" + std::to_string(getpid()) + "_" + tag)) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// An ok experiment with awkward numbers (thirds do not round-trip at few digits).
ExperimentRecord okRecord(const std::string& name, uint64_t id, uint64_t index, int64_t iteration_ps, double mfu) {
  ExperimentRecord r;
  r.name = name;
  r.id = id;
  r.index = index;
  r.seed = 7 + index;
  r.swept = {{"parallelism.tp", std::to_string(1 << index)}, {"network.cc", index % 2 ? "hpcc" : "dcqcn"}};
  r.resolved_config = "name: " + name + "\nparallelism: {tp: " + std::to_string(1 << index) + "}\n";
  TrainingResult& res = r.result;
  res.iteration = Picoseconds{iteration_ps};
  res.compute = Picoseconds{iteration_ps / 3};
  res.exposed_tp = Picoseconds{iteration_ps / 7};
  res.exposed_pp = Picoseconds{iteration_ps / 11};
  res.exposed_dp = Picoseconds{iteration_ps / 13};
  res.exposed_ep = Picoseconds{0};
  res.bubble = Picoseconds{iteration_ps / 17};
  res.mfu = mfu;
  res.tokens_per_second = 1e6 / 3.0 * mfu;
  res.peak_memory.stage = 1;
  res.peak_memory.parameters = 1.75e9 / 3;
  res.peak_memory.weights = Bytes{3'500'000'001};
  res.peak_memory.gradients = Bytes{7'000'000'003};
  res.peak_memory.optimizer = Bytes{21'000'000'007};
  res.peak_memory.activation_per_layer = Bytes{123'456'789};
  res.peak_memory.in_flight = 4.5;
  res.peak_memory.activations = Bytes{11'111'111'111};
  res.peak_memory.logits = Bytes{0};
  res.peak_memory.workspace = Bytes{3LL << 30};
  res.network.ecn_marks = 11 + static_cast<int64_t>(index);
  res.network.cnps = 5;
  res.network.pauses = 2;
  res.network.paused_ps = 1'234'567;
  res.network.drops = 1;
  res.network.retransmits = 3;
  res.network.timeouts = 0;
  res.network.flows_done = 4096;
  res.network.packet_hops = 98'765'432'109;
  res.wall_seconds = 0.1 + static_cast<double>(index) / 3;
  res.events = 1'000'003;
  return r;
}

ExperimentRecord oomRecord(const std::string& name, uint64_t id, uint64_t index) {
  ExperimentRecord r = okRecord(name, id, index, 0, 0);
  r.result = TrainingResult{};
  r.result.oom = true;
  r.result.peak_memory.weights = Bytes{90LL << 30};
  return r;
}

ExperimentRecord errorRecord(const std::string& name, uint64_t id, uint64_t index) {
  ExperimentRecord r = okRecord(name, id, index, 0, 0);
  r.result = TrainingResult{};
  r.error = "collective \"all_to_all\" needs ep > 1, got 1";
  return r;
}

/// The five experiments of the resume tests: three ok, one OOM, one failed.
std::vector<ExperimentRecord> fiveRecords() {
  return {okRecord("gpt-a", 0xa1, 0, 1'234'567'891'234, 0.41), okRecord("gpt-b", 0xb2, 1, 987'654'321'012, 0.52),
          oomRecord("gpt-c", 0xc3, 2), okRecord("gpt-d", 0xd4, 3, 1'111'111'111'111, 0.47),
          errorRecord("gpt-e", 0xe5, 4)};
}

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// RFC 4180: rows of fields, quotes doubled inside quoted fields.
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
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
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
    } else {
      field += c;
    }
  }
  REQUIRE(row.empty());
  REQUIRE(field.empty());
  return rows;
}

/// Both summaries of `dir`, parsed.
struct Summaries {
  std::vector<std::vector<std::string>> csv;
  Json json;
};

Summaries readSummaries(const fs::path& dir) {
  return Summaries{parseCsv(readText(dir / "summary.csv")), Json::parse(readText(dir / "summary.json"))};
}

/// Whether the CSV text and the JSON value carry the same value.
bool sameValue(const std::string& csv, const Json& json) {
  if (json.is_null()) return csv.empty();
  if (json.is_string()) return csv == json.get<std::string>();
  if (json.is_number_integer()) return std::stoll(csv) == json.get<int64_t>();
  return std::stod(csv) == json.get<double>();
}

/// Every CSV row against the JSON experiment at the same position, column by column.
void checkCsvMatchesJson(const Summaries& s) {
  const auto& header = s.csv.at(0);
  const Json& columns = s.json.at("columns");
  REQUIRE(columns.size() == header.size());
  for (size_t c = 0; c < header.size(); ++c) CHECK(columns[c] == header[c]);
  const Json& experiments = s.json.at("experiments");
  REQUIRE(experiments.size() == s.csv.size() - 1);
  for (size_t r = 0; r < experiments.size(); ++r) {
    const auto& row = s.csv[r + 1];
    const Json& obj = experiments[r];
    REQUIRE(row.size() == header.size());
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& col = header[c];
      const bool top_level = obj.contains(col);
      const Json& swept = obj.at("swept");
      const Json value = top_level ? obj.at(col) : (swept.contains(col) ? swept.at(col) : Json(nullptr));
      INFO("row " << r << " column " << col << ": csv '" << row[c] << "' json " << value.dump());
      CHECK(sameValue(row[c], value));
    }
  }
}

size_t columnOf(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  REQUIRE(it != header.end());
  return static_cast<size_t>(it - header.begin());
}

/// Files under `dir` (recursively) whose name ends in ".tmp".
size_t tempFiles(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.path().extension() == ".tmp";
  return n;
}

}  // namespace

TEST_CASE("SimAI's EndToEnd.csv: whole µs and shares of the iteration, exposed = DP + TP + EP",
          "[experiments][results]") {
  TrainingResult r;
  r.compute = Picoseconds{600'000'000};  // 600 µs
  r.exposed_dp = Picoseconds{150'400'000};
  r.exposed_tp = Picoseconds{50'000'000};
  r.exposed_ep = Picoseconds{0};
  r.exposed_pp = Picoseconds{99'600'000};
  r.bubble = Picoseconds{100'000'000};
  r.iteration = Picoseconds{1'000'000'000};  // the parts add up to 1 ms
  const std::string csv = simaiEndToEnd("gpt-tp8", r);
  CHECK(
      csv ==
      "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, Expose_PP_comm, bubble time, "
      "total comp, total exposed comm, Total time\n"
      "gpt-tp8, 150 (15.04%), 0 (0.00%), 50 (5.00%), 0 (0.00%), 100 (9.96%), 100 (10.00%), 600 (60.00%), 200 (20.04%), "
      "1000\n");
}

TEST_CASE("summary.csv and summary.json carry the same values", "[experiments][results]") {
  TempDir tmp("agree");
  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kCreate);
  std::vector<ExperimentRecord> records = fiveRecords();
  records[1].swept.emplace_back("workload.model", "inline, \"custom\"");  // a key only one row has
  for (const ExperimentRecord& r : records) writer.write(r);

  const Summaries s = readSummaries(tmp.path);
  checkCsvMatchesJson(s);
  const auto& header = s.csv[0];
  CHECK(header[2] == "parallelism.tp");
  CHECK(header[3] == "network.cc");
  CHECK(header[4] == "workload.model");
  CHECK(s.csv[2][4] == "inline, \"custom\"");
  CHECK(s.csv[1][4].empty());
  CHECK(s.json["version"] == kVersion);

  SECTION("the values are the record's, in the documented units") {
    const auto& a = s.csv[1];
    const Json& ja = s.json["experiments"][0];
    CHECK(a[0] == "gpt-a");
    CHECK(a[1] == "00000000000000a1");
    CHECK(a[columnOf(header, "status")] == "ok");
    CHECK(std::stod(a[columnOf(header, "iteration_ms")]) == 1'234'567'891'234 / 1e9);
    CHECK(std::stod(a[columnOf(header, "compute_ms")]) == static_cast<double>(1'234'567'891'234 / 3) / 1e9);
    CHECK(std::stod(a[columnOf(header, "mfu")]) == 0.41);
    CHECK(std::stod(a[columnOf(header, "tokens_per_s")]) == 1e6 / 3.0 * 0.41);
    CHECK(std::stod(a[columnOf(header, "paused_us")]) == 1.234567);
    CHECK(a[columnOf(header, "packet_hops")] == "98765432109");
    CHECK(std::stod(a[columnOf(header, "peak_memory_gib")]) ==
          static_cast<double>(records[0].result.peak_memory.total().count) / (1024.0 * 1024.0 * 1024.0));
    CHECK(std::stod(a[columnOf(header, "events_per_s")]) == 1'000'003 / 0.1);
    CHECK(ja["memory"]["optimizer_bytes"] == 21'000'000'007);
    CHECK(ja["memory"]["total_bytes"] == records[0].result.peak_memory.total().count);
  }
  SECTION("OOM rows keep the memory, failed rows only the message") {
    const auto& c = s.csv[3];
    CHECK(c[columnOf(header, "status")] == "oom");
    CHECK(c[columnOf(header, "iteration_ms")].empty());
    CHECK(c[columnOf(header, "mfu")].empty());
    CHECK(std::stod(c[columnOf(header, "peak_memory_gib")]) == 90.0);
    const auto& e = s.csv[5];
    CHECK(e[columnOf(header, "status")] == "error");
    CHECK(e[columnOf(header, "peak_memory_gib")].empty());
    CHECK(e[columnOf(header, "error")] == records[4].error);
    CHECK(s.json["experiments"][4]["memory"].is_null());
  }
}

TEST_CASE("each write leaves complete files behind", "[experiments][results]") {
  TempDir tmp("complete");
  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kCreate);
  const Summaries empty = readSummaries(tmp.path);
  CHECK(empty.csv.size() == 1);
  CHECK(empty.json["experiments"].empty());

  const std::vector<ExperimentRecord> records = fiveRecords();
  for (size_t i = 0; i < records.size(); ++i) {
    writer.write(records[i]);
    const Summaries s = readSummaries(tmp.path);
    CHECK(s.csv.size() == i + 2);
    CHECK(s.json["experiments"].size() == i + 1);
    checkCsvMatchesJson(s);
    CHECK(fs::exists(tmp.path / "experiments" / records[i].name / "manifest.json"));
    CHECK(tempFiles(tmp.path) == 0);
    CHECK(writer.isDone(records[i].id));
    CHECK(writer.size() == i + 1);
  }
}

TEST_CASE("resume after an interruption", "[experiments][results]") {
  TempDir tmp("resume");
  const std::vector<ExperimentRecord> records = fiveRecords();
  {
    ResultsWriter writer;
    writer.open(tmp.path, OpenMode::kCreate);
    for (size_t i : {3, 0, 2}) writer.write(records[i]);  // completion order differs from sweep order
  }
  // The kill: half a CSV line, temporary files mid-write, an experiment that started
  // writing its folder but never finished.
  const std::string csv = readText(tmp.path / "summary.csv");
  std::ofstream(tmp.path / "summary.csv", std::ios::binary | std::ios::trunc) << csv.substr(0, csv.size() - 17);
  std::ofstream(tmp.path / "summary.json.tmp") << "{\"version\": \"0.1.0\", \"experi";
  std::ofstream(tmp.path / "experiments" / "gpt-a" / "manifest.json.tmp") << "{\"name\": \"gpt";
  fs::create_directories(tmp.path / "experiments" / "gpt-b");
  std::ofstream(tmp.path / "experiments" / "gpt-b" / "manifest.json.tmp") << "{";

  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kResume);
  CHECK(writer.size() == 3);
  for (size_t i = 0; i < records.size(); ++i) CHECK(writer.isDone(records[i].id) == (i == 0 || i == 2 || i == 3));
  CHECK(tempFiles(tmp.path) == 0);
  const Summaries rewritten = readSummaries(tmp.path);
  REQUIRE(rewritten.csv.size() == 4);
  checkCsvMatchesJson(rewritten);

  for (size_t i : {4, 1}) writer.write(records[i]);
  const Summaries s = readSummaries(tmp.path);
  checkCsvMatchesJson(s);
  REQUIRE(s.csv.size() == 6);
  std::set<std::string> names, ids;
  for (size_t r = 1; r < s.csv.size(); ++r) {
    CHECK(s.csv[r][0] == records[r - 1].name);  // sweep order
    names.insert(s.csv[r][0]);
    ids.insert(s.csv[r][1]);
  }
  CHECK(names.size() == 5);
  CHECK(ids.size() == 5);

  SECTION("the summaries equal those of an uninterrupted run") {
    TempDir fresh("resume_fresh");
    ResultsWriter straight;
    straight.open(fresh.path, OpenMode::kCreate);
    for (const ExperimentRecord& r : records) straight.write(r);
    CHECK(readText(fresh.path / "summary.csv") == readText(tmp.path / "summary.csv"));
    CHECK(readText(fresh.path / "summary.json") == readText(tmp.path / "summary.json"));
  }
  SECTION("a damaged manifest stops the resume with its path") {
    std::ofstream(tmp.path / "experiments" / "gpt-d" / "manifest.json", std::ios::trunc) << "{\"name\": 3}";
    ResultsWriter again;
    CHECK_THROWS_WITH(again.open(tmp.path, OpenMode::kResume), contains("gpt-d") && contains("manifest.json"));
  }
}

TEST_CASE("a folder with results is not overwritten by accident", "[experiments][results]") {
  TempDir tmp("clobber");
  {
    ResultsWriter writer;
    writer.open(tmp.path, OpenMode::kCreate);
    writer.write(fiveRecords()[0]);
  }
  ResultsWriter writer;
  CHECK_THROWS_WITH(writer.open(tmp.path, OpenMode::kCreate),
                    contains("already holds results") && contains("--resume"));
  CHECK(fs::exists(tmp.path / "experiments" / "gpt-a" / "manifest.json"));

  SECTION("--force starts afresh") {
    std::ofstream(tmp.path / "sweep.yaml") << "base: {}\n";
    writer.open(tmp.path, OpenMode::kOverwrite);
    CHECK(writer.size() == 0);
    CHECK_FALSE(fs::exists(tmp.path / "experiments"));
    CHECK(fs::exists(tmp.path / "sweep.yaml"));  // not ours: left alone
    CHECK(readSummaries(tmp.path).csv.size() == 1);
  }
  SECTION("an empty folder, or one holding other files, is fine") {
    TempDir other("clobber_other");
    fs::create_directories(other.path);
    writer.open(other.path, OpenMode::kCreate);
    std::ofstream(other.path / "notes.txt") << "x";
    fs::remove(other.path / "summary.csv");
    fs::remove(other.path / "summary.json");
    CHECK_NOTHROW(writer.open(other.path, OpenMode::kCreate));
  }
}

TEST_CASE("a folder Multiverse did not write is never cleared", "[experiments][results]") {
  // `--out .` in a folder holding a user's experiments/ folder, or another tool's summary.
  TempDir tmp("not_ours");
  fs::create_directories(tmp.path / "experiments");
  std::ofstream(tmp.path / "experiments" / "mine.txt") << "precious";
  for (const OpenMode mode : {OpenMode::kCreate, OpenMode::kOverwrite, OpenMode::kResume}) {
    ResultsWriter writer;
    CHECK_THROWS_WITH(writer.open(tmp.path, mode), contains("that a sweep did not write") && contains("nothing was changed"));
  }
  CHECK(readText(tmp.path / "experiments" / "mine.txt") == "precious");
  CHECK_FALSE(fs::exists(tmp.path / "summary.csv"));
  // Once Multiverse owns a folder (its marker), --force replaces what it wrote there.
  TempDir ours("ours");
  ResultsWriter writer;
  writer.open(ours.path, OpenMode::kCreate);
  CHECK(fs::exists(ours.path / ".multiverse"));
  writer.write(fiveRecords()[0]);
  writer.open(ours.path, OpenMode::kOverwrite);
  CHECK_FALSE(fs::exists(ours.path / "experiments"));
}

TEST_CASE("resume matches finished experiments by id, never by name", "[experiments][results]") {
  // An edit shifts names: gpt-a's configuration is now named gpt-b, and a new experiment
  // (id 0xf6) takes the name gpt-a; gpt-b's old configuration left the sweep.
  TempDir tmp("rename");
  std::vector<ExperimentRecord> records = fiveRecords();
  {
    ResultsWriter writer;
    writer.open(tmp.path, OpenMode::kCreate);
    writer.write(records[0]);
    writer.write(records[1]);
  }
  const uint64_t a = records[0].id, b = records[1].id;
  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kResume);
  writer.adoptNames({{0xf6, "gpt-a", 0}, {a, "gpt-b", 1}});
  CHECK(writer.size() == 2);
  const auto manifest = [&](const std::string& name) {
    return parseManifest(readText(tmp.path / "experiments" / name / "manifest.json"));
  };
  CHECK(manifest("gpt-b").id == a);
  CHECK(manifest("gpt-b").name == "gpt-b");
  const std::string aside = "gpt-b~" + formatExperimentId(b);
  CHECK(manifest(aside).id == b);
  CHECK_FALSE(fs::exists(tmp.path / "experiments" / "gpt-a"));
  // The new experiment runs under gpt-a and takes nothing with it.
  ExperimentRecord fresh = records[0];
  fresh.id = 0xf6;
  writer.write(fresh);
  CHECK(writer.size() == 3);
  CHECK(writer.isDone(a));
  CHECK(writer.isDone(b));
  CHECK(manifest("gpt-a").id == 0xf6);
  CHECK(manifest("gpt-b").id == a);
  // A second resume finds the three where they are.
  ResultsWriter again;
  again.open(tmp.path, OpenMode::kResume);
  again.adoptNames({{0xf6, "gpt-a", 0}, {a, "gpt-b", 1}});
  CHECK(again.size() == 3);
  CHECK(readSummaries(tmp.path).csv.size() == 4);
}

TEST_CASE("a results folder is locked while one run writes it", "[experiments][results]") {
  TempDir tmp("lock");
  {
    const FolderLock first(tmp.path / "out");
    CHECK(fs::exists(tmp.path / "out" / ".lock"));
    CHECK_THROWS_AS(FolderLock(tmp.path / "out"), FolderBusy);
    CHECK_THROWS_WITH(FolderLock(tmp.path / "out"), contains((tmp.path / "out").string() + " is being written"));
  }
  CHECK_NOTHROW(FolderLock(tmp.path / "out"));  // released with its holder; the file stays
}

TEST_CASE("manifest: identity, configuration, version and the whole result", "[experiments][results]") {
  TempDir tmp("manifest");
  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kCreate);
  ExperimentRecord r = fiveRecords()[1];
  r.id = 0x0123456789abcdefULL;
  r.resolved_config =
      "name: gpt-b\nseed: 8\nparallelism: {tp: 2, sp: true, recompute: selective}\n"
      "network: {cc: hpcc, tag: \"8\", rates: [1.5, 100Gbps], extra: ~}\n";
  writer.write(r);
  CHECK(writer.experimentDir("gpt-b") == tmp.path / "experiments" / "gpt-b");

  const Json m = Json::parse(readText(tmp.path / "experiments" / "gpt-b" / "manifest.json"));
  CHECK(m["name"] == "gpt-b");
  CHECK(m["id"] == "0123456789abcdef");
  CHECK(m["seed"] == r.seed);
  CHECK(m["index"] == 1);
  CHECK(m["version"] == kVersion);
  CHECK(m["status"] == "ok");
  // A sweep file of this one experiment: its configuration under base:.
  CHECK(m["config_yaml"] ==
        "base:\n  name: gpt-b\n  seed: 8\n  parallelism: {tp: 2, sp: true, recompute: selective}\n"
        "  network: {cc: hpcc, tag: \"8\", rates: [1.5, 100Gbps], extra: ~}\n");
  CHECK(m["config"]["seed"] == 8);
  CHECK(m["config"]["parallelism"]["tp"] == 2);
  CHECK(m["config"]["parallelism"]["sp"] == true);
  CHECK(m["config"]["parallelism"]["recompute"] == "selective");
  CHECK(m["config"]["network"]["tag"] == "8");
  CHECK(m["config"]["network"]["rates"] == Json::array({1.5, "100Gbps"}));
  CHECK(m["config"]["network"]["extra"].is_null());
  CHECK(m["swept"].dump() == R"({"parallelism.tp":"2","network.cc":"hpcc"})");
  CHECK(m["result"]["iteration_ps"] == r.result.iteration.ps);
  CHECK(m["result"]["network"]["paused_ps"] == 1'234'567);

  const ExperimentRecord back = parseManifest(readText(tmp.path / "experiments" / "gpt-b" / "manifest.json"));
  CHECK(back.name == r.name);
  CHECK(back.id == r.id);
  CHECK(back.index == r.index);
  CHECK(back.seed == r.seed);
  CHECK(back.swept == r.swept);
  CHECK(back.resolved_config == r.resolved_config);
  CHECK(back.result.iteration == r.result.iteration);
  CHECK(back.result.mfu == r.result.mfu);
  CHECK(back.result.peak_memory.total() == r.result.peak_memory.total());
  CHECK(back.result.network.packet_hops == r.result.network.packet_hops);
  CHECK(back.result.wall_seconds == r.result.wall_seconds);

  SECTION("names must make folders, and be unique within a run") {
    ExperimentRecord bad = r;
    bad.id = 99;
    for (const char* name : {"", "..", "a/b"}) {
      bad.name = name;
      CHECK_THROWS_AS(writer.write(bad), std::invalid_argument);
    }
    bad.name = "gpt-b";
    CHECK_THROWS_WITH(writer.write(bad), contains("unique"));
    CHECK(writer.size() == 1);
  }
  SECTION("writing an id again replaces its row") {
    r.result.mfu = 0.6;
    writer.write(r);
    CHECK(writer.size() == 1);
    CHECK(writer.records()[0].result.mfu == 0.6);
  }
  SECTION("after a resume, a changed experiment takes over its name") {
    ResultsWriter resumed;
    resumed.open(tmp.path, OpenMode::kResume);
    ExperimentRecord changed = r;
    changed.id = 77;
    resumed.write(changed);
    CHECK(resumed.size() == 1);
    CHECK(resumed.isDone(77));
    CHECK_FALSE(resumed.isDone(r.id));
  }
}

TEST_CASE("an invalid experiment is a row of its problems, ranked last, and stays invalid when read back",
          "[experiments][results]") {
  TempDir tmp("invalid");
  ResultsWriter writer;
  writer.open(tmp.path, OpenMode::kCreate);
  std::vector<ExperimentRecord> records = fiveRecords();
  ExperimentRecord r = records[0];
  r.name = "gpt-x";
  r.id = 42;
  r.result = TrainingResult{};
  r.error = "sweep.yaml:6: parallelism.tp: tp (8) must divide gpus_per_server (4)";
  r.invalid = true;
  CHECK(r.status() == RunStatus::kInvalid);
  CHECK_FALSE(r.ran());
  writer.write(r);
  const ExperimentRecord back = parseManifest(readText(tmp.path / "experiments" / "gpt-x" / "manifest.json"));
  CHECK(back.status() == RunStatus::kInvalid);
  CHECK(back.error == r.error);
  // Only the identity, the status and the problems: no simulated value, no memory.
  const std::vector<std::vector<std::string>> csv = parseCsv(readText(tmp.path / "summary.csv"));
  REQUIRE(csv.size() == 2);
  const std::vector<std::string>& row = csv[1];
  const auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(csv[0].begin(), csv[0].end(), name) - csv[0].begin());
  };
  CHECK(row[column("status")] == "invalid");
  CHECK(row[column("error")] == r.error);
  CHECK(row[column("iteration_ms")].empty());
  CHECK(row[column("peak_memory_gib")].empty());
  records.push_back(r);
  const std::string table = rankedTable(records, 0);
  CHECK(table.rfind("gpt-x") > table.rfind("gpt-e"));  // after the failed one
  CHECK_THAT(table, contains("invalid"));
}

TEST_CASE("the closing table ranks the best first, OOM and failures last", "[experiments][results]") {
  const std::vector<ExperimentRecord> records = fiveRecords();  // a 1.23 s, b 0.99 s, c OOM, d 1.11 s, e error
  auto order = [](const std::string& table) {
    std::vector<std::string> names;
    std::istringstream lines(table);
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string rank, name;
      words >> rank >> name;
      names.push_back(name);
    }
    return names;
  };
  const std::string table = rankedTable(records, 0);
  CHECK(order(table) == std::vector<std::string>{"gpt-b", "gpt-d", "gpt-a", "gpt-c", "gpt-e"});
  CHECK_THAT(table, contains("parallelism.tp") && contains("network.cc") && contains("MFU %"));
  CHECK_THAT(table, contains("987.654") && contains("52.0") && contains("OOM") && contains("90.0"));

  std::istringstream lines(table);
  std::string line;
  std::set<size_t> widths;
  while (std::getline(lines, line)) widths.insert(line.size());
  CHECK(widths.size() == 1);  // right-aligned last column: every line equally long

  CHECK(order(rankedTable(records, 2)) == std::vector<std::string>{"gpt-b", "gpt-d"});
  CHECK(order(rankedTable(records, 0, RankBy::kPeakMemory)) ==
        std::vector<std::string>{"gpt-a", "gpt-b", "gpt-d", "gpt-c", "gpt-e"});  // equal memory: input order
  CHECK(order(rankedTable(records, 0, RankBy::kMfu)) ==
        std::vector<std::string>{"gpt-b", "gpt-d", "gpt-a", "gpt-c", "gpt-e"});
  std::vector<ExperimentRecord> shuffled = {records[4], records[2], records[0]};
  CHECK(order(rankedTable(shuffled, 0)) == std::vector<std::string>{"gpt-a", "gpt-c", "gpt-e"});
}

TEST_CASE("progress: ETA arithmetic and the three styles", "[experiments][results]") {
  CHECK(remainingSeconds({4, 10, 0, 20.0}) == Approx(30.0));
  CHECK(remainingSeconds({5, 10, 3, 20.0}) == Approx(50.0));  // pace of this run only
  CHECK_FALSE(remainingSeconds({3, 10, 3, 20.0}).has_value());
  CHECK(remainingSeconds({10, 10, 0, 20.0}) == Approx(0.0));
  CHECK(formatDuration(42.4) == "42s");
  CHECK(formatDuration(187) == "3m07s");
  CHECK(formatDuration(7500) == "2h05m");
  CHECK(formatDuration(std::nullopt) == "--");
  CHECK(progressBar(3, 10, 10) == "[###.......]");
  CHECK(progressBar(0, 0, 4) == "[####]");
  CHECK(progressBarLine({4, 10, 0, 20.0}) == progressBar(4, 10, 30) + " 4/10  elapsed 20s  ETA 30s");

  const std::vector<ExperimentRecord> records = fiveRecords();
  CHECK(progressRecordLine({3, 12, 0, 10.0}, records[1]) ==
        "[ 3/12] ok    gpt-b  iteration 987.654 ms  MFU 52.0%  elapsed 10s  ETA 30s");
  CHECK_THAT(progressRecordLine({4, 12, 0, 10.0}, records[2]), contains("oom") && contains("90.0 GiB"));
  CHECK_THAT(progressRecordLine({5, 12, 0, 10.0}, records[4]), contains("error") && contains("ep > 1"));

  SECTION("plain lines, one per experiment") {
    std::ostringstream out;
    Progress progress(out, ProgressStyle::kLines, 5, 2);
    for (size_t i : {0, 1, 2}) progress.finished(records[i]);
    progress.finish();
    const std::string text = out.str();
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.rfind("[3/5] ok    gpt-a", 0) == 0);
    CHECK_THAT(text, contains("[5/5] oom   gpt-c") && contains("ETA 0s"));
    CHECK(progress.snapshot().done == 5);
  }
  SECTION("quiet prints nothing") {
    std::ostringstream out;
    Progress progress(out, ProgressStyle::kQuiet, 5);
    for (const ExperimentRecord& r : records) progress.finished(r);
    progress.finish();
    CHECK(out.str().empty());
  }
  SECTION("the bar redraws one line and prints failures above it") {
    std::ostringstream out;
    Progress progress(out, ProgressStyle::kBar, 5);
    for (const ExperimentRecord& r : records) progress.finished(r);
    progress.finish();
    const std::string text = out.str();
    CHECK(std::count(text.begin(), text.end(), '\n') == 2);  // the failure and the final newline
    CHECK_THAT(text, contains("\r[") && contains(" 5/5 ") && contains("error gpt-e"));
    CHECK(text.back() == '\n');
  }
  CHECK(detectProgressStyle(1, true) == ProgressStyle::kQuiet);
}
