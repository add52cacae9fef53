/**
 * @file test_sweep.cpp
 * sweep.yaml: expansion (product, zip, constraints, names, ids), the constraint evaluator,
 * reading experiments into TrainingExperiment with every validation path, the estimate.
 */
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiments/estimate.hpp"
#include "experiments/experiment_yaml.hpp"
#include "experiments/results.hpp"
#include "experiments/sweep.hpp"
#include "network/packet.hpp"
#include "systems/training_components.hpp"
#include "systems/training_sim.hpp"

using namespace mv;

namespace {

const std::filesystem::path kData = MV_TEST_DATA_DIR;

/// Expands `yaml` as if it were the file data/inline.yaml.
Sweep expand(const std::string& yaml, Diagnostics& diags) {
  return parseSweep(yaml, kData / "inline.yaml", diags);
}

/// Expands `yaml`, expecting no problems.
Sweep expandOk(const std::string& yaml) {
  Diagnostics diags;
  Sweep s = expand(yaml, diags);
  INFO(diags.format());
  REQUIRE(diags.empty());
  return s;
}

/// Expands `yaml` and reads every experiment; returns the problems and the experiments read.
Diagnostics readAll(const std::string& yaml, std::vector<TrainingExperiment>* out = nullptr) {
  Diagnostics diags;
  const Sweep s = expand(yaml, diags);
  if (diags.empty()) {
    readExperiments(s, diags, [&](TrainingExperiment&& x) {
      if (out) out->push_back(std::move(x));
    });
  }
  return diags;
}

/// Whether some diagnostic is at `line` (0: any line), has `key` and mentions `text`.
bool has(const Diagnostics& diags, int line, const std::string& key, const std::string& text) {
  for (const Diagnostic& d : diags.items()) {
    if ((line == 0 || d.line == line) && d.key == key && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

/// Value text of dotted `key` in an experiment's swept list.
std::string swept(const ExpandedExperiment& x, const std::string& key) {
  for (const auto& [k, v] : x.swept) {
    if (k == key) return v;
  }
  return "<unset>";
}

/// A valid base: gpt3-13b on 16 A100s (two servers), default rail topology.
const std::string kBase = R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 1, dp: 2}
  cluster: {gpu: a100-80gb}
)";

ExprValue eval(const std::string& text, const std::vector<std::pair<std::string, ExprValue>>& keys = {}) {
  return Expression(text).evaluate([&](const std::string& key) -> std::optional<ExprValue> {
    for (const auto& [k, v] : keys) {
      if (k == key) return v;
    }
    return std::nullopt;
  });
}

}  // namespace

// ----------------------------------------------------------------------------------------
// Expansion

TEST_CASE("sweep axes expand as a product, first axis slowest", "[sweep]") {
  const Sweep s = expandOk(kBase + R"(sweep:
  network.cc: [dcqcn, hpcc]
  parallelism.pp: [1, 2, 4]
)");
  REQUIRE(s.experiments.size() == 6);
  CHECK(s.combinations == 6);
  CHECK(s.dropped == 0);
  CHECK(s.swept_keys == std::vector<std::string>{"network.cc", "parallelism.pp"});
  const char* cc[] = {"dcqcn", "dcqcn", "dcqcn", "hpcc", "hpcc", "hpcc"};
  const char* pp[] = {"1", "2", "4", "1", "2", "4"};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(swept(s.experiments[i], "network.cc") == cc[i]);
    CHECK(swept(s.experiments[i], "parallelism.pp") == pp[i]);
    CHECK(s.experiments[i].config["network"]["cc"].Scalar() == cc[i]);
    CHECK(s.experiments[i].config["parallelism"]["pp"].Scalar() == pp[i]);
    CHECK(s.experiments[i].config["parallelism"]["tp"].Scalar() == "8");  // base kept
  }
}

TEST_CASE("without axes a sweep is its base, named after the file", "[sweep]") {
  const Sweep s = expandOk(kBase);
  REQUIRE(s.experiments.size() == 1);
  CHECK(s.combinations == 1);
  CHECK(s.experiments[0].name == "inline");
  CHECK(s.experiments[0].swept.empty());
}

TEST_CASE("a zip group is one axis whose keys vary together", "[sweep]") {
  const Sweep s = expandOk(kBase + R"(zip:
  - {parallelism.pp: [1, 2], workload.global_batch: [16, 32]}
sweep:
  network.cc: [dcqcn, hpcc]
)");
  REQUIRE(s.experiments.size() == 4);
  // The zip group comes first in the file, so it is the slower axis.
  CHECK(s.swept_keys == std::vector<std::string>{"parallelism.pp", "workload.global_batch", "network.cc"});
  const char* pp[] = {"1", "1", "2", "2"};
  const char* gb[] = {"16", "16", "32", "32"};
  const char* cc[] = {"dcqcn", "hpcc", "dcqcn", "hpcc"};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(swept(s.experiments[i], "parallelism.pp") == pp[i]);
    CHECK(swept(s.experiments[i], "workload.global_batch") == gb[i]);
    CHECK(swept(s.experiments[i], "network.cc") == cc[i]);
  }
}

TEST_CASE("malformed axes are reported at their lines", "[sweep]") {
  Diagnostics d;
  expand(kBase + R"(sweep:
  network.cc: hpcc
  parallelism..tp: [1]
  parallelism.pp: []
zip:
  - {parallelism.dp: [1, 2], network.load_balance: [ecmp]}
  - {parallelism.dp: [1]}
)",
         d);
  CHECK(has(d, 6, "sweep.network.cc", "expected a non-empty list"));
  CHECK(has(d, 7, "sweep", "is not a dotted key path"));
  CHECK(has(d, 8, "sweep.parallelism.pp", "expected a non-empty list"));
  CHECK(has(d, 10, "zip[0]", "same length (parallelism.dp has 2, network.load_balance has 1)"));
  CHECK(has(d, 11, "zip[1].parallelism.dp", "swept twice (also at line 10)"));
}

TEST_CASE("a sweep its problems already refuse holds one experiment, with the problems of every one", "[sweep]") {
  Diagnostics d;
  const Sweep s = expand(kBase + R"(  name: "x-{parallelism.dq}-{parallelism.tp}-{seed}-{parallelism.dp}"
sweep:
  parallelism.tp: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  parallelism.dp: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  parallelism.pp: []
)",
                         d);
  CHECK(s.combinations == 1000);
  CHECK(s.experiments.size() == 1);  // not 1,000 configurations built only to be refused
  CHECK(has(d, 10, "sweep.parallelism.pp", "expected a non-empty list"));
  CHECK(has(d, 5, "name", "'{parallelism.dq}' in the name template is set neither in base nor by an axis"));
}

TEST_CASE("unknown top-level keys, a missing base and YAML syntax errors", "[sweep]") {
  Diagnostics d;
  expand(kBase + "sweeps:\n  network.cc: [hpcc]\n", d);
  CHECK(has(d, 5, "sweeps", "unknown key (did you mean 'sweep'?)"));

  Diagnostics missing;
  expand("sweep: {network.cc: [hpcc]}\n", missing);
  CHECK(has(missing, 1, "base", "missing"));

  Diagnostics syntax;
  expand("base:\n  workload: {model: gpt3-13b\n  parallelism: {tp: 8}\n", syntax);
  REQUIRE(syntax.items().size() == 1);
  CHECK(syntax.items()[0].line == 3);
  CHECK(syntax.items()[0].message.find("YAML syntax error") == 0);

  Diagnostics unreadable;
  readSweep(kData / "no_such_file.yaml", unreadable);
  CHECK(has(unreadable, 0, "", "cannot open the file"));
}

TEST_CASE("a key written twice in one mapping is an error at the repeat", "[sweep]") {
  Diagnostics d;
  expand(R"(base:
  workload: {model: gpt3-13b, global_batch: 16, model: gpt3-175b}
  parallelism: {tp: 8}
  parallelism: {tp: 4}
  cluster: &c {gpu: a100-80gb}
  name: x
sweep:
  seed: [1, 2]
  seed: [3]
zip:
  - {network.cc: [hpcc], network.cc: [dcqcn]}
)",
         d);
  CHECK(has(d, 2, "base.workload.model", "duplicate key (first at line 2"));
  CHECK(has(d, 4, "base.parallelism", "duplicate key (first at line 3"));
  CHECK(has(d, 9, "sweep.seed", "duplicate key (first at line 8"));
  CHECK(has(d, 11, "zip[0].network.cc", "duplicate key (first at line 11"));
  CHECK_FALSE(has(d, 0, "base.parallelism.tp", "duplicate"));  // one key in each of two mappings

  Diagnostics aliased;  // a mapping reached twice through an alias is reported once
  expand("base:\n  workload: &w {model: gpt3-13b, model: x}\n  copy: *w\n", aliased);
  REQUIRE(aliased.items().size() == 1);
  CHECK(has(aliased, 2, "base.workload.model", "duplicate key"));
}

TEST_CASE("an axis may set a whole mapping and keys the base does not have", "[sweep]") {
  const Sweep s = expandOk(kBase + R"(sweep:
  topology:
    - {kind: fat_tree, k: 4}
    - {kind: star, nics: 16}
  topology.link_rate: [100Gbps, 400Gbps]
  collectives.all_reduce: [ring]
)");
  REQUIRE(s.experiments.size() == 4);
  const YAML::Node t = s.experiments[3].config["topology"];
  CHECK(t["kind"].Scalar() == "star");
  CHECK(t["nics"].Scalar() == "16");
  CHECK(t["link_rate"].Scalar() == "400Gbps");  // the deeper key is applied inside the mapping
  CHECK(swept(s.experiments[0], "topology") == "{kind: fat_tree, k: 4}");
  CHECK(s.experiments[0].config["collectives"]["all_reduce"].Scalar() == "ring");
}

// ----------------------------------------------------------------------------------------
// Constraints

TEST_CASE("constraints drop combinations", "[sweep]") {
  const Sweep s = expandOk(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8}
  cluster: {gpus: 32}
sweep:
  parallelism.pp: [1, 2, 4]
  parallelism.dp: [1, 2, 4]
  network.cc: [dcqcn, hpcc]
constraints:
  - "parallelism.tp * parallelism.pp * parallelism.dp == cluster.gpus"
  - "network.cc != 'dcqcn' || parallelism.pp > 1"
)");
  CHECK(s.combinations == 18);
  // tp*pp*dp == 32 keeps (1,4), (2,2), (4,1); dcqcn additionally needs pp > 1.
  REQUIRE(s.experiments.size() == 5);
  CHECK(s.dropped == 13);
  for (const ExpandedExperiment& x : s.experiments) {
    CHECK(std::stoi(swept(x, "parallelism.pp")) * std::stoi(swept(x, "parallelism.dp")) == 4);
  }
}

TEST_CASE("constraint errors name the constraint's line", "[sweep]") {
  Diagnostics d;
  expand(kBase + R"(sweep:
  parallelism.pp: [1, 2]
constraints:
  - "parallelism.pp * parallelism.zz == 2"
  - "network.cc == hpcc"
  - "parallelism.tp + 'x' > 1"
  - "parallelism.pp +"
  - "parallelism.pp * 2"
)",
         d);
  CHECK(has(d, 8, "constraints", "unknown key 'parallelism.zz'"));
  CHECK(has(d, 9, "constraints", "unknown key 'network.cc'"));
  CHECK(has(d, 10, "constraints", "'+' needs numbers"));
  CHECK(has(d, 11, "constraints", "column 17: unexpected end of the expression"));
  CHECK(has(d, 12, "constraints", "not a condition (it evaluates to 2)"));
  CHECK(d.items().size() == 5);  // each broken constraint reported once, not once per combination
}

TEST_CASE("the expression evaluator", "[sweep][expression]") {
  CHECK(std::get<int64_t>(eval("1 + 2 * 3")) == 7);
  CHECK(std::get<int64_t>(eval("(1 + 2) * 3")) == 9);
  CHECK(std::get<int64_t>(eval("7 / 2")) == 3);
  CHECK(std::get<int64_t>(eval("-7 % 3")) == -1);
  CHECK(std::get<double>(eval("7 / 2.0")) == 3.5);
  CHECK(std::get<double>(eval("1e3 + .5")) == 1000.5);
  CHECK(std::get<bool>(eval("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 4 || !false")));
  CHECK_FALSE(std::get<bool>(eval("!(1 == 1)")));
  CHECK(std::get<bool>(eval("2 == 2.0")));
  CHECK(std::get<bool>(eval("'abc' < \"abd\"")));
  CHECK(std::get<bool>(
      eval("a.b * 2 == 8 && c == 'x' && d", {{"a.b", int64_t{4}}, {"c", std::string("x")}, {"d", true}})));
  // || and && stop early: the unknown key on the right is never looked up.
  CHECK(std::get<bool>(eval("true || nope")));
  CHECK_FALSE(std::get<bool>(eval("false && nope")));
  CHECK(Expression("a.b + c.d * a.b").keys() == std::vector<std::string>{"a.b", "c.d"});

  CHECK_THROWS_WITH(eval("1 / 0"), Catch::Contains("division by zero"));
  CHECK_THROWS_WITH(eval("9223372036854775807 + 1"), Catch::Contains("integer overflow"));
  CHECK_THROWS_WITH(eval("1.5 % 2"), Catch::Contains("'%' needs integers"));
  CHECK_THROWS_WITH(eval("true < false"), Catch::Contains("cannot order"));
  CHECK_THROWS_WITH(eval("1 == 'a'"), Catch::Contains("cannot compare 1 (integer) with 'a' (string)"));
  CHECK_THROWS_WITH(eval("!3"), Catch::Contains("'!' needs true/false"));
  CHECK_THROWS_WITH(eval("hpcc == 1"), Catch::Contains("write strings in quotes"));
  CHECK_THROWS_WITH(Expression("(1 + 2"), Catch::Contains("column 7: expected ')'"));
  CHECK_THROWS_WITH(Expression("1 & 2"), Catch::Contains("column 3: unexpected '&'"));
  CHECK_THROWS_WITH(Expression("'open"), Catch::Contains("unterminated string"));
  CHECK_THROWS_WITH(Expression("1 < 2 < 3"), Catch::Contains("unexpected '<'"));
}

TEST_CASE("hostile nesting in a constraint is refused before anything recurses over it", "[sweep][expression]") {
  // 10,000 parentheses or 100,000 unary operators overflowed the parser's stack; a chain of
  // 100,000 '+' parses in a loop but is as deep a tree, which evaluation walks recursively.
  const std::string parens = std::string(10000, '(') + "1" + std::string(10000, ')');
  CHECK_THROWS_WITH(Expression(parens), Catch::Contains("nested deeper than 256 levels"));
  CHECK_THROWS_WITH(Expression(std::string(100000, '!') + "true"), Catch::Contains("nested deeper than 256 levels"));
  CHECK_THROWS_WITH(Expression(std::string(100000, '-') + "1"), Catch::Contains("nested deeper than 256 levels"));
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  CHECK_THROWS_WITH(Expression(chain), Catch::Contains("nested deeper than 256 levels"));
  // Up to the limit they parse and evaluate: 255 '!' over a literal, 255 '+' in a chain.
  CHECK_FALSE(std::get<bool>(eval(std::string(255, '!') + "true")));
  std::string at_limit = "1";
  for (int i = 0; i < 255; ++i) at_limit += " + 1";
  CHECK(std::get<int64_t>(eval(at_limit)) == 256);
  CHECK(std::get<int64_t>(eval(std::string(255, '(') + "7" + std::string(255, ')'))) == 7);
  // In a sweep file: one diagnostic on the constraint's line, quoting only its start.
  Diagnostics d;
  expand(kBase + "sweep:\n  parallelism.pp: [1, 2]\nconstraints:\n  - \"" + parens + "\"\n", d);
  REQUIRE(d.items().size() == 1);
  CHECK(d.items()[0].line == 8);
  CHECK_THAT(d.items()[0].message, Catch::Contains("nested deeper than 256 levels"));
  CHECK(d.items()[0].message.size() < 300);
}

TEST_CASE("scalar values: quoted text stays a string", "[sweep][expression]") {
  const YAML::Node n = YAML::Load("{a: 8, b: '8', c: 0.5, d: true, e: hpcc, f: 100Gbps}");
  CHECK(std::get<int64_t>(scalarValue(n["a"])) == 8);
  CHECK(std::get<std::string>(scalarValue(n["b"])) == "8");
  CHECK(std::get<double>(scalarValue(n["c"])) == 0.5);
  CHECK(std::get<bool>(scalarValue(n["d"])));
  CHECK(std::get<std::string>(scalarValue(n["e"])) == "hpcc");
  CHECK(std::get<std::string>(scalarValue(n["f"])) == "100Gbps");
}

// ----------------------------------------------------------------------------------------
// Names and ids

TEST_CASE("names come from the template, safe for file names", "[sweep][names]") {
  const Sweep s = expandOk(R"(base:
  name: "{workload.model}/tp{parallelism.tp}-{network.cc} {topology}"
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8}
  network: {cc: hpcc}
  topology: {kind: fat_tree, k: 4}
sweep:
  parallelism.tp: [4, 8]
)");
  REQUIRE(s.experiments.size() == 2);
  CHECK(s.experiments[0].name == "gpt3-13b_tp4-hpcc_fat_tree_4");
  CHECK(s.experiments[1].name == "gpt3-13b_tp8-hpcc_fat_tree_4");
  CHECK(s.experiments[1].config["name"].Scalar() == s.experiments[1].name);
}

TEST_CASE("default names: base name and the swept values", "[sweep][names]") {
  const Sweep s = expandOk(R"(base:
  name: study
  workload: {model: gpt3-13b, global_batch: 16}
sweep:
  network.cc: [hpcc]
  parallelism.pp: [2]
  parallelism.sp: [true, false]
  topology: [{kind: star, nics: 8}]
)");
  REQUIRE(s.experiments.size() == 2);
  CHECK(s.experiments[0].name == "study-hpcc-pp2-sp-star_8");
  CHECK(s.experiments[1].name == "study-hpcc-pp2-no_sp-star_8");
}

TEST_CASE("clashing names get -2, -3", "[sweep][names]") {
  const Sweep s = expandOk(R"(base:
  name: "{workload.model}"
  workload: {model: gpt3-13b, global_batch: 16}
sweep:
  parallelism.pp: [1, 2, 4]
)");
  REQUIRE(s.experiments.size() == 3);
  CHECK(s.experiments[0].name == "gpt3-13b");
  CHECK(s.experiments[1].name == "gpt3-13b-2");
  CHECK(s.experiments[2].name == "gpt3-13b-3");
}

TEST_CASE("name template problems", "[sweep][names]") {
  Diagnostics d;
  expand(R"(base:
  name: "{workload.model}-{parallelism.tp}-{oops"
  workload: {model: gpt3-13b, global_batch: 16}
)",
         d);
  CHECK(has(d, 2, "name", "'{parallelism.tp}' in the name template is set neither in base nor by an axis"));
  CHECK(has(d, 2, "name", "unclosed '{'"));
}

TEST_CASE("safeName and splitKeyPath", "[sweep][names]") {
  CHECK(safeName("a/b c:d") == "a_b_c_d");
  CHECK(safeName("../x") == "x");
  CHECK(safeName("-rf") == "rf");
  CHECK(safeName("///") == "experiment");
  CHECK(safeName("llama3.1-405b+x") == "llama3.1-405b+x");
  CHECK(safeName(std::string(300, 'a')).size() == 200);
  CHECK(splitKeyPath("a.b_c.d") == std::vector<std::string>{"a", "b_c", "d"});
  CHECK(splitKeyPath("a..b") == std::vector<std::string>{"a", "", "b"});
}

TEST_CASE("ids depend on the configuration only, not on axis order or name", "[sweep][ids]") {
  const std::string a = kBase + "sweep:\n  network.cc: [dcqcn, hpcc]\n  parallelism.pp: [1, 2]\n";
  const std::string b = kBase + "sweep:\n  parallelism.pp: [2, 1]\n  network.cc: [hpcc, dcqcn]\n";
  const std::string c = R"(base:
  name: other
  cluster: {gpu: a100-80gb}
  parallelism: {dp: 2, pp: 1, tp: 8}
  workload: {global_batch: 16, model: gpt3-13b}
zip:
  - {network.cc: [hpcc, dcqcn, hpcc, dcqcn], parallelism.pp: [1, 1, 2, 2]}
)";
  std::set<uint64_t> ids_a;
  std::set<uint64_t> ids_b;
  std::set<uint64_t> ids_c;
  for (const auto& x : expandOk(a).experiments) ids_a.insert(x.id);
  for (const auto& x : expandOk(b).experiments) ids_b.insert(x.id);
  for (const auto& x : expandOk(c).experiments) ids_c.insert(x.id);
  CHECK(ids_a.size() == 4);  // different configurations, different ids
  CHECK(ids_a == ids_b);
  CHECK(ids_a == ids_c);

  const Sweep one = expandOk(kBase);
  const Sweep changed = expandOk(R"(base:
  workload: {model: gpt3-13b, global_batch: 32}
  parallelism: {tp: 8, pp: 1, dp: 2}
  cluster: {gpu: a100-80gb}
)");
  CHECK(one.experiments[0].id != changed.experiments[0].id);
  CHECK(configId(YAML::Load("{a: 1, b: [x, y]}")) == configId(YAML::Load("{b: [x, y], a: 1, name: n}")));
  CHECK(configId(YAML::Load("{a: [x, y]}")) != configId(YAML::Load("{a: [y, x]}")));
  CHECK(canonicalText(YAML::Load("{b: 'x:y', a: {}}")) == "{1:a{}1:b3=x:y}");
}

TEST_CASE("combinations with one configuration are an error at the axis", "[sweep][ids]") {
  Diagnostics repeated;
  expand(kBase + "sweep:\n  seed: [1, 2, 1, 2]\n", repeated);
  REQUIRE(repeated.items().size() == 1);
  CHECK(has(repeated, 6, "sweep.seed",
            "experiments 'inline-seed1' and 'inline-seed1-2' have the same configuration (2 pairs in all)"));

  Diagnostics overridden;  // both values of `network` lose their cc to the deeper axis
  expand(kBase + "sweep:\n  network: [{cc: hpcc}, {cc: dcqcn}]\n  network.cc: [dctcp]\n", overridden);
  CHECK(has(overridden, 6, "sweep.network", "have the same configuration"));

  Diagnostics zipped;
  expand(kBase + "zip:\n  - {seed: [3, 3], parallelism.pp: [1, 1]}\n", zipped);
  CHECK(has(zipped, 6, "zip[0]", "have the same configuration"));
}

// ----------------------------------------------------------------------------------------
// Reading experiments

TEST_CASE("a full experiment round-trips into TrainingExperiment", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics d = readAll(R"(base:
  name: full
  seed: 7
  workload:
    model: {base: llama3-8b, layers: 16}
    global_batch: 32
    micro_batch: 2
    seq: 4096
    precision: fp8
    flash_attention: true
    grad_clip: false
    grad_reduce: param
  parallelism: {tp: 4, pp: 2, dp: 2, ep: 1, vpp: 2, sp: true, tp_comm_overlap: false, dp_comm_overlap: false,
                pp_comm_overlap: false, recompute: full, distributed_optimizer: true, schedule: interleaved}
  cluster: {gpu: h100, gpus: 16, gpus_per_server: 4, nics_per_server: 2, fabric: nvlink, nvls_all_reduce: false,
            tp_bandwidth_factor: 1.5, compute: {gemm_ceiling: 0.8, gemm_small_tile: 0.85,
                                                gemm_gradient: 0.9, gemm_quantization: false, memory_efficiency: 0.75, kernel_overhead: 2us}}
  topology: {kind: spine_leaf, leaves: 2, nics_per_leaf: 4, spines: 1, oversubscription: 4, link_rate: 200Gbps,
             link_delay: 500ns}
  network: {fidelity: analytical, cc: dctcp, load_balance: spray, wire: ns3, payload: 4000}
  collectives: {all_reduce: halving_doubling, all_gather: ring, reduce_scatter: halving_doubling,
                all_to_all: hierarchical, channels: 4, chunk: 1MiB, buffer: 8MiB, step_latency: 3us,
                dp_bucket: 20MiB, priority: 5}
  memory: {workspace: 2GiB, logits_bytes: 2}
)",
                                &xs);
  INFO(d.format());
  REQUIRE(d.empty());
  REQUIRE(xs.size() == 1);
  const TrainingExperiment& x = xs[0];
  CHECK(x.name == "full");
  CHECK(x.id != 0);
  CHECK(x.seed == 7);
  CHECK(x.model.name == "llama3-8b-custom");
  CHECK(x.model.layers == 16);
  CHECK(x.model.hidden == 4096);
  CHECK(x.model.kv_heads == 8);
  CHECK(x.model.ffn == 14336);
  CHECK(x.model.gated_mlp);
  CHECK(x.training.global_batch == 32);
  CHECK(x.training.micro_batch == 2);
  CHECK(x.training.seq == 4096);
  CHECK(x.training.precision == TrainingPrecision::kFp8);
  CHECK(x.training.flash_attention);
  CHECK_FALSE(x.training.grad_clip);
  CHECK(x.training.grad_reduce == GradReduce::kParam);
  CHECK(x.parallelism.tp == 4);
  CHECK(x.parallelism.pp == 2);
  CHECK(x.parallelism.dp == 2);
  CHECK(x.parallelism.vpp == 2);
  CHECK(x.parallelism.sequence_parallel);
  CHECK_FALSE(x.parallelism.tp_comm_overlap);
  CHECK_FALSE(x.parallelism.dp_comm_overlap);
  CHECK_FALSE(x.parallelism.pp_comm_overlap);
  CHECK(x.parallelism.recompute == Recompute::kFull);
  CHECK(x.parallelism.zero == mv::Zero::kOptimizer);
  CHECK(x.parallelism.schedule == PipelineSchedule::kInterleaved);
  CHECK(x.cluster.gpu == "h100");
  CHECK(x.cluster.gpus == 16);
  CHECK(x.cluster.gpus_per_server == 4);
  CHECK(x.cluster.nics_per_server == 2);
  CHECK(x.cluster.intra.fabric == ServerFabric::kNvlink);
  CHECK_FALSE(x.cluster.intra.nvls_all_reduce);
  CHECK(x.cluster.tp_bandwidth_factor == 1.5);
  CHECK(x.cluster.compute.gemm.ceiling == 0.8);
  CHECK(x.cluster.compute.gemm.small_tile == 0.85);
  CHECK(x.cluster.compute.gemm.gradient == 0.9);
  CHECK(!x.cluster.compute.gemm.quantization);
  CHECK(x.cluster.compute.memory_efficiency == 0.75);
  CHECK(x.cluster.compute.kernel_overhead == microseconds(2));
  CHECK(x.topology.nicCount() == 8);
  CHECK(x.topology.switches().size() == 3);
  CHECK(x.fidelity == NetworkFidelity::kAnalytical);
  CHECK(x.network.cc == net::CcKind::kDctcp);
  CHECK(x.network.load_balance == net::LoadBalance::kSpray);
  CHECK(x.network.payload_bytes == 4000);
  CHECK(x.network.wire == net::WireFormat::kNs3);
  CHECK(x.collectives.all_reduce == CollectiveAlgorithm::kHalvingDoubling);
  CHECK(x.collectives.all_gather == CollectiveAlgorithm::kRing);
  CHECK(x.collectives.reduce_scatter == CollectiveAlgorithm::kHalvingDoubling);
  CHECK(x.collectives.all_to_all == CollectiveAlgorithm::kHierarchical);
  CHECK(x.collectives.channels == 4);
  CHECK(x.collectives.chunk == mebibytes(1));
  CHECK(x.collectives.buffer == mebibytes(8));
  CHECK(x.collectives.step_latency == microseconds(3));
  CHECK(x.collectives.dp_bucket == mebibytes(20));
  CHECK(x.collectives.priority == 5);
  CHECK(x.memory.workspace == mebibytes(2048));
  CHECK(x.memory.logits_bytes == 2);
}

TEST_CASE("defaults: gpus from the parallelism, servers of 8, a rail fabric sized for the job", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics d = readAll(kBase, &xs);
  INFO(d.format());
  REQUIRE(xs.size() == 1);
  const TrainingExperiment& x = xs[0];
  CHECK(x.seed == 1);
  CHECK(x.model.name == "gpt3-13b");
  CHECK(x.training.micro_batch == 1);
  CHECK(x.training.seq == 0);
  CHECK(x.training.precision == TrainingPrecision::kBf16);
  CHECK(x.parallelism.schedule == PipelineSchedule::k1F1B);
  CHECK(x.parallelism.recompute == Recompute::kNone);
  CHECK(x.cluster.gpus == 16);
  CHECK(x.cluster.gpus_per_server == 8);
  CHECK(x.cluster.nics_per_server == 8);
  CHECK(x.fidelity == NetworkFidelity::kPacket);
  CHECK(x.network.cc == net::CcKind::kDcqcn);
  CHECK(x.topology.nicCount() == 16);
  CHECK(x.topology.serverCount() == 2);
  for (const TopoLink& l : x.topology.links()) {
    CHECK(l.rate == gigabitsPerSecond(100));
    CHECK(l.delay == microseconds(1));
  }
  CHECK(x.collectives.all_reduce == CollectiveAlgorithm::kAuto);  // NCCL's tuner picks ring or tree
  CHECK(x.collectives.all_to_all == CollectiveAlgorithm::kDirect);
  CHECK(x.collectives.channels == 0);  // auto
  CHECK(x.collectives.step_latency == microseconds(2));
  CHECK(x.memory.logits_bytes == 4);
}

TEST_CASE("an inline model without a base", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics d = readAll(R"(base:
  workload:
    model: {name: tiny, layers: 4, hidden: 512, heads: 8}
    global_batch: 8
)",
                                &xs);
  INFO(d.format());
  REQUIRE(xs.size() == 1);
  CHECK(xs[0].model.name == "tiny");
  CHECK(xs[0].model.kv_heads == 8);
  CHECK(xs[0].model.ffn == 2048);
  CHECK(xs[0].model.vocab == 51200);
  CHECK(xs[0].cluster.gpus == 1);
  CHECK(xs[0].cluster.gpus_per_server == 1);
  CHECK(xs[0].topology.nicCount() == 1);

  const Diagnostics missing = readAll("base:\n  workload:\n    model: {hidden: 512}\n    global_batch: 8\n");
  CHECK(has(missing, 3, "workload.model.layers", "missing"));
  CHECK(has(missing, 3, "workload.model.heads", "missing"));
}

TEST_CASE("unknown keys, wrong types and out-of-range values", "[sweep][experiment]") {
  const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16, micro_bach: 2}
  parallelism: {tp: 8, dp: two, recompute: some}
  cluster: {gpu: a100-80gb, nics_per_server: 0}
  collectives: {priority: 9, chunk: 4XB, buffer: 32KiB}
  netwrk: {cc: hpcc}
)");
  CHECK(has(d, 2, "workload.micro_bach", "unknown key (did you mean 'micro_batch'?)"));
  CHECK(has(d, 3, "parallelism.dp", "expected an integer, got 'two'"));
  CHECK(has(d, 3, "parallelism.recompute", "'some' is not one of none, selective, full"));
  CHECK(has(d, 4, "cluster.nics_per_server", "0 is out of range [1, 64]"));
  CHECK(has(d, 5, "collectives.priority", "9 is out of range [1, 7]"));
  CHECK(has(d, 5, "collectives.chunk", "bad size '4XB'"));
  CHECK(has(d, 5, "collectives.buffer", "32KiB is out of range [64KiB, 1GiB]"));
  CHECK(has(d, 6, "netwrk", "unknown key (did you mean 'network'?)"));
  for (const auto& [value, message] : {std::pair<const char*, const char*>{"0", "0 is out of range [1, 64]"},
                                       {"65", "65 is out of range [1, 64]"},
                                       {"many", "expected auto or a whole number from 1 to 64, got 'many'"},
                                       {"-2", "expected auto or a whole number from 1 to 64, got '-2'"}}) {
    const Diagnostics channels =
        readAll(std::string("base:\n  workload: {model: gpt3-13b, global_batch: 16}\n  collectives: {channels: ") +
                value + "}\n");
    INFO(channels.format());
    CHECK(has(channels, 3, "collectives.channels", message));
  }

  const Diagnostics compute = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  cluster:
    tp_bandwidth_factor: 9
    compute: {gemm_small_tile: 1.5, gemm_ceiling: 0.5, memory_eficiency: 1, kernel_overhead: 2ms, gemm_gradient: 0}
)");
  CHECK(has(compute, 4, "cluster.tp_bandwidth_factor", "9 is out of range [0.25, 4]"));
  CHECK(has(compute, 5, "cluster.compute.gemm_small_tile", "1.5 is out of range [0.01, 1]"));
  CHECK(has(compute, 5, "cluster.compute.memory_eficiency", "unknown key (did you mean 'memory_efficiency'?)"));
  CHECK(has(compute, 5, "cluster.compute.kernel_overhead", "2ms is out of range [0s, 1ms]"));
  CHECK(has(compute, 5, "cluster.compute.gemm_gradient", "0 is out of range [0.01, 1]"));
}

TEST_CASE("training runs send RoCEv2 frames at RoCE's MTU; the ns-3 packet is asked for by name", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics ok = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2, dp_bucket: 20000000}
sweep:
  network: [{cc: dcqcn}, {mtu: 1024}, {wire: ns3}, {wire: ns3, payload: 9000}]
)",
                                 &xs);
  INFO(ok.format());
  REQUIRE(ok.empty());
  REQUIRE(xs.size() == 4);
  CHECK(xs[0].network.wire == net::WireFormat::kRoce);
  CHECK(xs[0].network.payload_bytes == 4096);
  CHECK(xs[1].network.payload_bytes == 1024);
  CHECK(xs[2].network.wire == net::WireFormat::kNs3);
  CHECK(xs[2].network.payload_bytes == 1000);
  CHECK(xs[3].network.payload_bytes == 9000);
  CHECK(xs[0].parallelism.dp_bucket == 20'000'000);
  CHECK(xs[0].collectives.dp_bucket.count == 0);  // no byte override unless given
  // A RoCE packet holds at most 4096 B, in powers of two; mtu and payload belong to one format each.
  const Diagnostics bad = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {dp_bucket: lots}
sweep:
  network: [{payload: 9000}, {mtu: 3000}, {mtu: 8192}, {wire: ns3, mtu: 1024}]
)");
  CHECK(has(bad, 3, "parallelism.dp_bucket", "expected auto or a whole number"));
  CHECK(has(bad, 5, "network.payload", "RoCE packets carry network.mtu"));
  CHECK(has(bad, 5, "network.mtu", "RoCE's MTU is 256, 512, 1024, 2048 or 4096 B, not 3000"));
  CHECK(has(bad, 5, "network.mtu", "8192 is out of range [256, 4096]"));
  CHECK(has(bad, 5, "network.mtu", "with ns3 give network.payload"));
}

TEST_CASE("parallelism.zero names a ZeRO stage; distributed_optimizer is ZeRO-1", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics ok = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2}
sweep:
  parallelism.zero: [0, 1, 2, 3]
)",
                                 &xs);
  INFO(ok.format());
  REQUIRE(ok.empty());
  REQUIRE(xs.size() == 4);
  for (size_t i = 0; i < xs.size(); ++i) CHECK(xs[i].parallelism.zero == static_cast<Zero>(i));
  const Diagnostics both = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2, distributed_optimizer: true, zero: 3}
)",
                                   &xs);
  CHECK(both.empty());
  CHECK(xs.back().parallelism.zero == Zero::kParameters);
  const Diagnostics contradiction = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2, distributed_optimizer: false, zero: 2}
)");
  CHECK(has(contradiction, 3, "parallelism.zero", "zero: 2 contradicts distributed_optimizer: false"));
  const Diagnostics range = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2}
sweep:
  parallelism.zero: [4]
)");
  CHECK(has(range, 5, "parallelism.zero", "4 is out of range [0, 3]"));
}

TEST_CASE("cluster.gpu as a mapping changes its base catalogue entry", "[sweep][experiment]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8}
  cluster: {gpu: {base: h100, bf16_tflops: 1200, fp8_tflops: 0, hbm: 96GiB, hbm_gb_per_s: 4000,
                  nvlink_gb_per_s: 450, sms: 144}}
)",
                                &xs);
  INFO(d.format());
  REQUIRE(d.empty());
  REQUIRE(xs.size() == 1);
  const GpuSpec gpu = clusterGpu(xs[0].cluster);
  CHECK(xs[0].cluster.gpu == "h100");
  CHECK(peakFlops(gpu, Precision::kBf16) == Approx(1200e12));
  CHECK_FALSE(supportsPrecision(gpu, Precision::kFp8));
  CHECK(gpu.tf32_tflops == gpuByName("h100").tf32_tflops);  // not given: the base's
  CHECK(gpu.hbm_capacity == Bytes{96LL << 30});
  CHECK(gpu.hbm_bandwidth.bps == 4000LL * 8'000'000'000);
  CHECK(gpu.nvlink_bandwidth.bps == 450LL * 8'000'000'000);
  CHECK(computeSpecOf(gpu).sms == 144);
  CHECK(computeSpecOf(gpu).peak_flops == Approx(1200e12));

  const Diagnostics slow_nvlink = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  cluster:
    gpu: {base: h100, nvlink_gb_per_s: 0.5}
)");
  CHECK(has(slow_nvlink, 4, "cluster.gpu.nvlink_gb_per_s", "out of range"));
  xs.clear();
  const Diagnostics odd_nvlink = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8}
  cluster: {gpu: {base: h100, nvlink_gb_per_s: 123.4}}
)",
                                         &xs);
  INFO(odd_nvlink.format());
  CHECK(odd_nvlink.empty());
  CHECK(xs.size() == 1);

  const Diagnostics unknown = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  cluster:
    gpu: {base: h10}
)");
  CHECK(has(unknown, 4, "cluster.gpu.base", "unknown GPU 'h10'"));
  CHECK(has(unknown, 4, "cluster.gpu.base", "did you mean 'h100'?"));
  const Diagnostics no_base = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  cluster:
    gpu: {hbm: 96GiB}
)");
  CHECK(has(no_base, 4, "cluster.gpu", "needs 'base'"));
  const Diagnostics bad = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16, precision: fp8}
  cluster:
    gpu: {base: h100, fp8_tflops: 0, hbm_gbps: 3, sms: 0}
)");
  CHECK(has(bad, 4, "cluster.gpu.hbm_gbps", "unknown key"));
  CHECK(has(bad, 4, "cluster.gpu.sms", "0 is out of range [1, 4096]"));
  bool fp8 = false;
  for (const Diagnostic& x : bad.items()) fp8 = fp8 || x.message.find("no FP8 tensor cores") != std::string::npos;
  CHECK(fp8);  // fp8 training on a GPU whose fp8 peak was set to 0
  // Built in code, the overrides are checked before a run.
  TrainingExperiment x = xs[0];
  x.cluster.gpu_overrides.sms = 0;
  CHECK_FALSE(checkTrainingExperiment(x).empty());
}

TEST_CASE("cross-field problems are reported together", "[sweep][experiment]") {
  SECTION("infeasible parallelism") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 15}
  parallelism:
    tp: 8
    pp: 3
    dp: 2
)");
    CHECK(has(d, 5, "parallelism.pp", "layers (40) must be divisible by pp*vpp"));
    CHECK(has(d, 2, "workload.global_batch", "must be divisible by micro_batch*dp"));
  }
  SECTION("tp*pp*dp differs from cluster.gpus") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 1, dp: 2}
  cluster: {gpus: 32}
)");
    CHECK(has(d, 3, "parallelism", "tp*pp*dp = 8*1*2 = 16 but the cluster has 32 GPUs"));
  }
  SECTION("context parallelism: its GPUs, fused attention, the sequence split") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: llama3-8b, global_batch: 16, seq: 8196}
  parallelism: {tp: 8, cp: 4, dp: 2}
  cluster: {gpus: 32}
)");
    CHECK(has(d, 3, "parallelism", "tp*cp*pp*dp = 8*4*1*2 = 64 but the cluster has 32 GPUs"));
    CHECK(has(d, 3, "parallelism.cp", "needs workload.flash_attention: true"));
    const Diagnostics split = readAll(R"(base:
  workload: {model: llama3-8b, global_batch: 16, seq: 8196, flash_attention: true}
  parallelism: {tp: 8, cp: 4, dp: 2}
)");
    CHECK(has(split, 3, "parallelism.cp", "seq (8196) must be divisible by 2*cp (8)"));
    std::vector<TrainingExperiment> xs;
    const Diagnostics ok = readAll(R"(base:
  workload: {model: llama3-8b, global_batch: 16, seq: 8192, flash_attention: true}
  parallelism: {tp: 8, cp: 4, dp: 2}
)",
                                   &xs);
    INFO(ok.format());
    REQUIRE(xs.size() == 1);
    CHECK(xs[0].parallelism.cp == 4);
    CHECK(xs[0].cluster.gpus == 64);  // the default: tp * cp * pp * dp
  }
  SECTION("activation offload: its layers, the host link") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 4, dp: 2, offload_layers: 10}
  cluster: {host_copy_efficiency: 1.5}
)");
    CHECK(has(d, 3, "parallelism.offload_layers", "must be less than the layers of a model chunk (10)"));
    CHECK(has(d, 4, "cluster.host_copy_efficiency", "1.5"));
    std::vector<TrainingExperiment> xs;
    const Diagnostics ok = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 4, dp: 2, offload_layers: 9}
  cluster: {gpu: {base: h100, host_link_gb_per_s: 32}, host_copy_efficiency: 0.9}
)",
                                   &xs);
    INFO(ok.format());
    REQUIRE(xs.size() == 1);
    CHECK(xs[0].parallelism.offload_layers == 9);
    CHECK(xs[0].cluster.host_copy_efficiency == 0.9);
    CHECK(clusterGpu(xs[0].cluster).host_link.bps == 256'000'000'000);
  }
  SECTION("servers, TP placement and NICs") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 1, dp: 3}
  cluster: {gpus_per_server: 5, nics_per_server: 3}
)");
    CHECK(has(d, 4, "cluster.gpus", "24 GPUs do not fill whole servers of gpus_per_server = 5"));
    CHECK(has(d, 3, "parallelism.tp", "tp (8) must divide gpus_per_server (5)"));
    CHECK(has(d, 4, "cluster.nics_per_server", "must divide gpus_per_server (5: GPUs share a NIC) or be a multiple of it"));
  }
  SECTION("topology too small") {
    const Diagnostics d = readAll(kBase + "  topology: {kind: star, nics: 8}\n");
    CHECK(has(d, 5, "topology", "topology too small: it has 8 NICs, the job needs 16 (2 servers x 8 NICs per server)"));
  }
  SECTION("missing topology file") {
    const Diagnostics d = readAll(kBase + "  topology: {kind: file, path: missing_topology.txt}\n");
    REQUIRE(d.items().size() == 1);
    CHECK(d.items()[0].line == 5);
    CHECK(d.items()[0].key == "topology");
    CHECK(d.items()[0].message.find("missing_topology.txt") != std::string::npos);
  }
  SECTION("a topology file relative to the sweep file") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 2}
  parallelism: {tp: 1, dp: 2}
  cluster: {gpus_per_server: 1, nics_per_server: 1}
  topology: {kind: file, path: two_nics.txt}
)");
    INFO(d.format());
    CHECK(d.empty());
  }
  SECTION("unknown model and GPU") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13bb, global_batch: 16}
  parallelism: {tp: 8, dp: 2}
  cluster: {gpu: h10}
)");
    CHECK(has(d, 2, "workload.model", "unknown model 'gpt3-13bb'; valid names: gpt3-13b"));
    CHECK(has(d, 2, "workload.model", "(did you mean 'gpt3-13b'?)"));
    CHECK(has(d, 4, "cluster.gpu", "unknown GPU 'h10'; valid names: a100-80gb"));
    CHECK(has(d, 4, "cluster.gpu", "(did you mean 'h100'?)"));
  }
  SECTION("FP8 on a GPU without it") {
    const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16, precision: fp8}
  parallelism: {tp: 8, dp: 2}
)");
    CHECK(has(d, 2, "workload.precision", "a100-80gb has no FP8 tensor cores"));
  }
  SECTION("missing model and batch") {
    const Diagnostics d = readAll("base:\n  workload: {seq: 2048}\n");
    CHECK(has(d, 2, "workload.model", "missing: a zoo name"));
    CHECK(has(d, 2, "workload.global_batch", "missing"));
  }
}

TEST_CASE("Chakra traces are found relative to the sweep file, one per rank", "[sweep][experiment]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mv_test_sweep_chakra";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "traces");
  const std::string yaml = R"(base:
  workload: {model: gpt3-13b, chakra: traces/run, global_batch: 2}
  parallelism: {dp: 2}
  cluster: {gpus_per_server: 1, nics_per_server: 1}
)";
  auto readIn = [&](std::vector<TrainingExperiment>* out) {
    Diagnostics d;
    const Sweep s = parseSweep(yaml, dir / "sweep.yaml", d);
    readExperiments(s, d, [&](TrainingExperiment&& x) { out->push_back(std::move(x)); });
    return d;
  };
  std::vector<TrainingExperiment> xs;
  std::ofstream(dir / "traces" / "run.0.et").put('x');
  const Diagnostics missing = readIn(&xs);
  CHECK(has(missing, 2, "workload.chakra", "no trace for rank 1"));
  std::filesystem::create_directories(dir / "traces" / "run.1.et");
  const Diagnostics folder = readIn(&xs);
  CHECK(has(folder, 2, "workload.chakra", "traces/run.1.et: it is a directory, not a trace file"));
  std::filesystem::remove(dir / "traces" / "run.1.et");
  std::ofstream(dir / "traces" / "run.1.json").put('x');
  const Diagnostics found = readIn(&xs);
  INFO(found.format());
  CHECK(found.empty());
  REQUIRE(xs.size() == 1);
  CHECK(xs[0].chakra == (dir / "traces" / "run").string());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a bad value from an axis points at the axis line and names the experiment", "[sweep][experiment]") {
  const Diagnostics d = readAll(kBase + R"(sweep:
  parallelism.pp: [1, 3]
  network.cc: [hpcc, hpc]
  parallelism.vppp: [1]
)");
  CHECK(has(d, 6, "parallelism.pp", "layers (40) must be divisible by pp*vpp"));
  CHECK(has(d, 6, "parallelism.pp", "(experiment inline-pp3-hpcc-vppp1 and 1 more)"));
  CHECK(has(d, 7, "network.cc",
            "'hpc' is not one of none, dcqcn, hpcc, dctcp (did you mean 'hpcc'?) (experiment "
            "inline-pp1-hpc-vppp1 and 1 more)"));
  CHECK(has(d, 8, "parallelism.vppp", "unknown key (did you mean 'vpp'?) (every experiment)"));
}

TEST_CASE("every experiment of the example sweep reads cleanly", "[sweep][experiment]") {
  Diagnostics d;
  const Sweep s = readSweep(kData / "good_sweep.yaml", d);
  std::vector<std::string> names;
  std::vector<uint64_t> ids;
  std::vector<std::string> configs;
  readExperiments(s, d, [&](TrainingExperiment&& x) {
    names.push_back(x.name);
    ids.push_back(x.id);
    configs.push_back(x.resolved_config);
  });
  INFO(d.format());
  CHECK(d.empty());
  REQUIRE(ids.size() == s.experiments.size());
  // An experiment's id hashes its configuration with the defaults written out.
  for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == configId(YAML::Load(configs[i])));
  CHECK(std::set<uint64_t>(ids.begin(), ids.end()).size() == ids.size());
  CHECK(s.combinations == 18);
  CHECK(s.dropped == 12);
  CHECK(names == std::vector<std::string>{"gpt3-13b-tp8-pp1-dcqcn", "gpt3-13b-tp8-pp2-dcqcn", "gpt3-13b-tp8-pp4-dcqcn",
                                          "gpt3-13b-tp8-pp1-hpcc", "gpt3-13b-tp8-pp2-hpcc", "gpt3-13b-tp8-pp4-hpcc"});
}

TEST_CASE("an experiment's resolved configuration writes every default and reads back to itself",
          "[sweep][experiment]") {
  const std::filesystem::path examples = kData / ".." / ".." / ".." / "examples";
  std::vector<std::filesystem::path> files{kData / "good_sweep.yaml", examples / "quickstart.yaml",
                                           examples / "chakra" / "general.yaml", examples / "simai" / "simai.yaml"};
  for (const auto& e : std::filesystem::directory_iterator(examples / "studies")) files.push_back(e.path());
  size_t checked = 0;
  for (const std::filesystem::path& file : files) {
    Diagnostics d;
    const Sweep s = readSweep(file, d);
    std::vector<TrainingExperiment> xs;
    readExperiments(s, d, [&](TrainingExperiment&& x) { xs.push_back(std::move(x)); });
    INFO(file.string() << ": " << d.format());
    REQUIRE(d.empty());
    for (const TrainingExperiment& x : xs) {
      // Defaults the file leaves out are written: a key of every section.
      for (const char* key : {"precision:", "zero:", "host_copy_efficiency:", "cc:", "dp_bucket:", "workspace:"}) {
        CHECK(x.resolved_config.find(key) != std::string::npos);
      }
      Diagnostics again;
      const Sweep one = parseSweep(sweepOfExperiment(x.resolved_config), file, again);
      std::vector<TrainingExperiment> back;
      readExperiments(one, again, [&](TrainingExperiment&& y) { back.push_back(std::move(y)); });
      INFO(x.name << ":\n" << x.resolved_config << again.format());
      REQUIRE(again.empty());
      REQUIRE(back.size() == 1);
      CHECK(back[0].resolved_config == x.resolved_config);
      CHECK(back[0].id == x.id);  // the same random streams
      CHECK(back[0].name == x.name);
      CHECK(back[0].parallelism.zero == x.parallelism.zero);
      CHECK(back[0].network.cc == x.network.cc);
      CHECK(back[0].topology.nicCount() == x.topology.nicCount());
      CHECK(back[0].topology.links().size() == x.topology.links().size());
      CHECK(back[0].cluster.gpus == x.cluster.gpus);
      ++checked;
    }
  }
  CHECK(checked > 50);
  // A default written out or left out is the same experiment.
  std::vector<TrainingExperiment> plain, written;
  REQUIRE(readAll(kBase, &plain).empty());
  std::string explicit_defaults = kBase;
  explicit_defaults.replace(explicit_defaults.find("parallelism: {"), 14, "parallelism: {vpp: 1, zero: 0, ");
  INFO(explicit_defaults);
  REQUIRE(readAll(explicit_defaults, &written).empty());
  CHECK(plain.at(0).id == written.at(0).id);
  // Two combinations that are one experiment once their defaults are applied.
  const Diagnostics twins = readAll(kBase + "sweep:\n  collectives.chunk: [1MiB, 1048576]\n");
  bool found = false;
  for (const Diagnostic& t : twins.items())
    found |= t.message.find("are the same experiment once") != std::string::npos;
  INFO(twins.format());
  CHECK(found);
}

// ----------------------------------------------------------------------------------------
// Estimate

TEST_CASE("a configuration whose build fails is reported for each of its experiments and built once",
          "[sweep][estimate]") {
  const Sweep s = expandOk(kBase + R"(  network: {fidelity: packet}
sweep:
  seed: [1, 2, 3]
)");
  std::vector<TrainingExperiment> xs;
  Diagnostics d;
  readExperiments(s, d, [&](TrainingExperiment&& x) { xs.push_back(std::move(x)); });
  REQUIRE(xs.size() == 3);
  const int64_t budget = 1 << 20;  // far less than the packet storage of 16 GPUs' network
  MemoryMeter meter({}, budget);
  const std::vector<MemoryEstimate> m = measureSweep(s, xs, meter, budget, d);
  CHECK(meter.builds() == 1);
  REQUIRE(d.items().size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(m[i].total == 0);
    CHECK_THAT(d.items()[i].message, Catch::Contains("packet storage would take"));
  }
}

TEST_CASE("the memory estimate is measured once per configuration and follows the fidelity", "[sweep][estimate]") {
  const Sweep s = expandOk(kBase + R"(sweep:
  network.fidelity: [packet, flow, analytical]
  network.cc: [dcqcn, hpcc]
  seed: [1, 2]
)");
  std::vector<TrainingExperiment> xs;
  Diagnostics d;
  readExperiments(s, d, [&](TrainingExperiment&& x) { xs.push_back(std::move(x)); });
  REQUIRE(xs.size() == 12);
  MemoryMeter meter;
  const std::vector<MemoryEstimate> m = measureSweep(s, xs, meter, 0, d);
  INFO(d.format());
  REQUIRE(d.empty());
  CHECK(meter.builds() == 6);  // the seed changes no table
  // Experiments in axis order: fidelity, then cc, then seed.
  const auto at = [&](int fidelity, int cc, int seed) { return m[static_cast<size_t>(4 * fidelity + 2 * cc + seed)]; };
  for (int f = 0; f < 3; ++f) {
    for (int c = 0; c < 2; ++c) {
      CHECK(at(f, c, 0).total == at(f, c, 1).total);
      CHECK(at(f, c, 0).training > 0);
      CHECK(at(f, c, 0).total >= at(f, c, 0).training + at(f, c, 0).network + at(f, c, 0).run);
    }
  }
  const MemoryEstimate dcqcn = at(0, 0, 0);
  const MemoryEstimate hpcc = at(0, 1, 0);
  // Only HPCC packets carry INT records (80 B), in rows of their own (and a 4-byte
  // experiment id each in a static table): at least one per slot of the switches' shared pool.
  CHECK(hpcc.network - dcqcn.network >= int64_t{65536} * (80 + 4));
  // Every experiment holds the headers of its switch pool (a pool's rows keep no experiment id).
  CHECK(dcqcn.network > int64_t{65536} * static_cast<int64_t>(sizeof(net::PacketHeader)));
  CHECK(at(1, 0, 0).network > 0);
  // The analytical fidelity leaves the network tables empty (a few bytes of buffers each).
  CHECK(at(2, 0, 0).network < 64 * 1024);
  CHECK(at(2, 1, 0).network < 64 * 1024);
  // Flows are created during the run at packet and flow fidelity only; packet-level flows
  // need rows of their own besides the records.
  CHECK(dcqcn.run > at(1, 0, 0).run);
  CHECK(at(1, 0, 0).run > at(2, 0, 0).run);

  // An experiment that does not fit in GPU memory is not simulated and takes nothing.
  const Sweep big = expandOk(R"(base:
  workload: {model: gpt3-175b, global_batch: 16}
  parallelism: {tp: 1, pp: 1, dp: 16}
  cluster: {gpu: a100-80gb}
)");
  std::vector<TrainingExperiment> oom;
  readExperiments(big, d, [&](TrainingExperiment&& x) { oom.push_back(std::move(x)); });
  REQUIRE(oom.size() == 1);
  CHECK(measureSweep(big, oom, meter, 0, d).front().total == 0);
  CHECK(meter.builds() == 6);
}

TEST_CASE("an experiment's static tables are sized to their rows", "[sweep][estimate]") {
  std::vector<TrainingExperiment> xs;
  const Diagnostics d = readAll(R"(base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, pp: 2, dp: 1}
  cluster: {gpu: a100-80gb}
)",
                                &xs);
  INFO(d.format());
  REQUIRE(xs.size() == 1);
  const TrainingFootprint f = measureFootprint(xs[0]);
  // Per row: the components and the experiment id (4; static rows have no handle, key,
  // destroyed flag or free-list entry); per table a few hundred bytes of per-experiment
  // words and one-element buffers (a row's worth).
  constexpr int64_t kBookkeeping = 4;
  constexpr int64_t kPerTable = 512;
  const int64_t task_row = static_cast<int64_t>(sizeof(train::TaskState)) + kBookkeeping;
  const int64_t comm_row = static_cast<int64_t>(sizeof(train::CommState)) + kBookkeeping;
  const int64_t sent_row = static_cast<int64_t>(sizeof(train::SentState)) + kBookkeeping;
  const int64_t rank_row = kBookkeeping + static_cast<int64_t>(sizeof(train::RankInfo) + sizeof(train::RankStreams) +
                                                                sizeof(train::RankTimes));
  const int64_t rows_bytes =
      f.rank_tasks * task_row + f.rank_comms * comm_row + f.rank_sents * sent_row + f.ranks * rank_row;
  CHECK(f.ranks == 16);
  CHECK(f.rank_tasks > 1000);
  // Every task has a TaskState; only communication tasks a CommState and only receives and
  // their successors a send time. Without DP the communication is the pipeline's: each rank
  // sends and receives one message per micro-batch and pass (16 micro-batches), and each
  // receive releases one compute block.
  CHECK(f.rank_comms == 16 * 2 * 16);
  CHECK(f.rank_sents == 16 * 2 * 16);
  CHECK(static_cast<int64_t>(f.rank_bytes) >= rows_bytes);
  CHECK(static_cast<int64_t>(f.rank_bytes) <= rows_bytes + 4 * kPerTable + task_row + comm_row + sent_row + rank_row);
}

TEST_CASE("bytes are printed for people", "[sweep][estimate]") {
  CHECK(formatBytes(512) == "512 B");
  CHECK(formatBytes(3 * 1024 * 1024 / 2) == "1.5 MiB");
}
