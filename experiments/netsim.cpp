/**
 * @file netsim.cpp
 * The `netsim` command: YAML -> topology, flows and network variants -> batches of
 * consecutive variants on CPU workers side by side -> flows.csv, queues.csv per experiment
 * and summary.csv.
 */
#include "experiments/netsim.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "ecs/device_fault.hpp"
#include "ecs/input_file.hpp"
#include "ecs/policy.hpp"
#include "ecs/quantity.hpp"
#include "ecs/text.hpp"
#include "experiments/backend.hpp"
#include "experiments/cli.hpp"
#include "experiments/config_reader.hpp"
#include "experiments/estimate.hpp"
#include "experiments/network_yaml.hpp"
#include "experiments/results.hpp"
#include "experiments/sweep.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "network/builder.hpp"
#include "network/detail_csv.hpp"
#include "network/network_sim.hpp"
#include "systems/flow_files.hpp"
#include "systems/network_layout.hpp"
#include "topologies/routing.hpp"

namespace mv {

namespace {

/// One variant of the network configuration.
struct Variant {
  std::string name;
  net::NetworkConfig cfg;
  uint64_t seed = 1;
};

/// Everything a netsim file describes, validated.
struct NetsimInput {
  std::string name;
  Topology topo;
  std::vector<FlowLine> flows;
  std::vector<Variant> variants;
  int64_t lookahead_ps = 0;
  Routing routing;            ///< of `topo`, once it is valid
  int64_t memory_budget = 0;  ///< bytes one variant's world may take (--max-memory)
};

const char* ccName(net::CcKind cc) {
  switch (cc) {
    case net::CcKind::kNone: return "none";
    case net::CcKind::kDcqcn: return "dcqcn";
    case net::CcKind::kHpcc: return "hpcc";
    case net::CcKind::kDctcp: return "dctcp";
  }
  return "?";
}

/// The lookahead of every experiment of `in`: the smallest link delay, or the file's
/// `lookahead` when smaller.
int64_t lookaheadOf(const NetsimInput& in) {
  int64_t min_delay = INT64_MAX;
  for (const TopoLink& l : in.topo.links()) min_delay = std::min(min_delay, l.delay.ps);
  return in.lookahead_ps > 0 ? std::min(in.lookahead_ps, min_delay) : min_delay;
}

/// The packet storage of one experiment of `in` under `cfg`, counted from the topology.
net::PacketStorage storageOf(const NetsimInput& in, const net::NetworkConfig& cfg) {
  return net::packetStorage(makeNetworkLayout(in.topo, in.routing, cfg.payload_bytes), cfg, lookaheadOf(in));
}

/// Why variant `v` cannot be built within `in.memory_budget` with configuration `cfg` (its
/// packet storage, counted before anything is allocated), or "".
std::string storageProblem(const NetsimInput& in, const Variant& v, const net::NetworkConfig& cfg) {
  const net::NetworkLayout layout = makeNetworkLayout(in.topo, in.routing, cfg.payload_bytes);
  const net::PacketStorage st = net::packetStorage(layout, cfg, lookaheadOf(in));  // storageOf, on this layout
  std::string problem = net::layoutProblem(layout, cfg);
  if (problem.empty()) {
    problem = net::packetStorageProblem(st, net::packetStorageBytes<net::NetWorld>(st, cfg), in.memory_budget, cfg);
  }
  return problem.empty() ? problem : "experiment '" + v.name + "': " + problem;
}

/// Reads and checks the whole input; every problem goes to `diags`. `budget`: the bytes one
/// variant's world may take.
NetsimInput readInput(const std::filesystem::path& yaml, int64_t budget, Diagnostics& diags) {
  NetsimInput in;
  in.memory_budget = budget;
  const InputFile input = readInputFile(yaml);
  if (!input.ok()) {
    diags.add(Diagnostic{yaml.string(), 0, "", "cannot open the file: " + input.problem});
    return in;
  }
  YAML::Node root;
  try {
    root = YAML::Load(input.text);
  } catch (const YAML::ParserException& e) {
    diags.add(Diagnostic{yaml.string(), e.mark.line + 1, "", "YAML syntax error: " + e.msg});
    return in;
  }
  if (!checkExpandedSize(root, yaml.string(), diags)) return in;
  if (!checkKeys(root, yaml.string(), diags)) return in;
  if (!root.IsMap()) {
    diags.add(Diagnostic{yaml.string(), 1, "", "expected a mapping with topology, network, flows"});
    return in;
  }
  const std::filesystem::path dir = yaml.parent_path();
  const ConfigReader r(root, yaml.string(), "", diags);
  r.allowOnly({"name", "seed", "topology", "network", "flows", "experiments", "lookahead"});
  in.name = safeName(r.text("name", yaml.stem().string()));  // a folder name: never a path
  const auto seed = static_cast<uint64_t>(r.integer("seed", 1, 0, INT64_MAX));
  in.lookahead_ps = r.has("lookahead") ? r.durationPs("lookahead", 0, 1, kMaxLatencyPs) : 0;
  if (!r.has("topology")) r.error("topology", "missing: the network to simulate");
  const size_t before_topology = diags.items().size();
  in.topo = readTopology(r.child("topology"), dir);
  // A topology with problems is a stand-in: its flows are checked once it is right, not
  // against the stand-in's NICs (which gave an error per flow).
  const bool topology_read = diags.items().size() == before_topology;
  const net::NetworkConfig base = readNetworkConfig(r.child("network"), net::NetworkConfig{});
  if (!r.has("flows")) {
    r.error("flows", "missing: a flow list file (CSV src,dst,bytes,start_us[,priority] or HPCC flow.txt)");
  } else if (topology_read && in.topo.nicCount() > 0) {
    in.flows = readFlowFile(dir / r.text("flows", ""), in.topo, diags);
    if (in.flows.empty() && diags.empty()) r.error("flows", "the flow list is empty");
  }
  bool routed = false;
  if (in.topo.nodeCount() > 0) {  // a topology was built: it must have NICs, each on a switch
    try {
      validateTopology(in.topo, 2);
      in.routing = computeRouting(in.topo);
      routed = true;
    } catch (const TopologyError& e) {
      r.error("topology", e.what());
    }
  }
  // A variant's folder sits beside the files netsim writes: a name that is one of them
  // would take its path (summary.csv as a folder left the run without a summary).
  const auto reserved = [](const std::string& name) {
    return name == "summary.csv" || name == "report.html" || name == ".lock" ||
           (name.size() >= 4 && name.compare(name.size() - 4, 4, ".tmp") == 0);
  };
  const std::string reserved_note = " is a file netsim writes in the results folder (summary.csv, report.html, "
                                    ".lock, *.tmp); choose another name";
  const YAML::Node list = root["experiments"];
  if (!list.IsDefined()) {
    if (reserved(in.name)) r.error("name", "'" + in.name + "'" + reserved_note);
    in.variants.push_back(Variant{in.name, base, seed});
  } else if (!list.IsSequence() || list.size() == 0) {
    r.error("experiments", "expected a non-empty list of {name, network} variants");
  } else {
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      const ConfigReader v(list[i], yaml.string(), "experiments[" + std::to_string(i) + "]", diags);
      if (!list[i].IsMap()) {
        v.error("", "expected a mapping with name and network");
        continue;
      }
      v.allowOnly({"name", "network", "seed"});
      Variant var{safeName(v.text("name", "exp" + std::to_string(i))), readNetworkConfig(v.child("network"), base),
                  static_cast<uint64_t>(v.integer("seed", static_cast<int64_t>(seed), 0, INT64_MAX))};
      if (!names.insert(var.name).second) {
        v.error("name", "duplicate experiment name '" + var.name + "' (names are made safe as folder names)");
      }
      if (reserved(var.name)) v.error("name", "'" + var.name + "'" + reserved_note);
      in.variants.push_back(var);
    }
  }
  if (in.topo.linkCount() > 0) {
    int64_t min_delay = INT64_MAX;
    for (const TopoLink& l : in.topo.links()) min_delay = std::min(min_delay, l.delay.ps);
    if (in.lookahead_ps > min_delay) {
      r.error("lookahead", formatDuration(in.lookahead_ps) + " is longer than the smallest link delay (" +
                               formatDuration(min_delay) + "): packets would arrive inside the step that sent them");
    }
    const int64_t lookahead = lookaheadOf(in);
    for (const Variant& v : in.variants) {
      if (v.cfg.link_bin_ps > 0 && v.cfg.link_bin_ps < lookahead) {
        r.error("network", "experiment '" + v.name + "': link_bin must be at least the lookahead (" +
                               std::to_string(lookahead) + " ps)");
      }
    }
  }
  if (routed) {
    for (const Variant& v : in.variants) {
      if (const std::string problem = storageProblem(in, v, v.cfg); !problem.empty()) r.error("topology", problem);
    }
  }
  return in;
}

/// One world of variants, run on one CPU worker (or device): experiment e of the world is
/// variant `variants[e]` of the file, with the pooled storage of `cfgs[e]`.
struct NetsimWorld {
  std::vector<uint32_t> variants;
  std::vector<net::NetworkConfig> cfgs;
  std::unique_ptr<net::NetWorld> world;
  std::vector<std::string> link_rows;  ///< per experiment of the world: links.csv rows
  RunReport report;
  std::string error;  ///< why the batch stopped early (a device fault, a write error)
};

/// Link samples are drained to the results between chunks of steps, so their table never
/// needs more than a chunk's worth of rows.
constexpr int64_t kChunkSteps = 256;

/// Builds the world of `w.variants` (configurations `w.cfgs`) with every flow.
std::unique_ptr<net::NetWorld> buildNetsimWorld(const NetsimInput& in, const Routing& routing, const NetsimWorld& w) {
  const auto count = static_cast<uint32_t>(w.variants.size());
  auto world = std::make_unique<net::NetWorld>(count, TableCapacity{1024, 1024});
  const int64_t lookahead = lookaheadOf(in);
  std::vector<net::NetworkLayout> layouts;
  net::PacketStorage all;
  net::PacketStorage hpcc;
  for (ExpId e = 0; e < count; ++e) {
    layouts.push_back(makeNetworkLayout(in.topo, routing, w.cfgs[e].payload_bytes));
    const net::PacketStorage st = net::packetStorage(layouts.back(), w.cfgs[e], lookahead);
    all += st;
    if (w.cfgs[e].cc == net::CcKind::kHpcc) hpcc += st;
  }
  net::reservePacketStorage(*world, all, false);
  net::reservePacketStorage(*world, hpcc, true);
  for (ExpId e = 0; e < count; ++e) {
    const Variant& v = in.variants[w.variants[e]];
    world->config(e).net = net::pathQuantities(layouts[e], w.cfgs[e]);
    world->clock(e).lookahead_ps = lookahead;
    world->clock(e).seed = v.seed;
    world->clock(e).stable_id = w.variants[e];  // the variant's index: its random streams do not depend on the worker
    net::buildNetwork(*world, e, layouts[e], w.cfgs[e], lookahead);
  }
  for (ExpId e = 0; e < count; ++e) {
    for (uint32_t i = 0; i < in.flows.size(); ++i) {
      const FlowLine& f = in.flows[i];
      net::addFlow(*world, e, f.src, f.dst, f.bytes, f.start_ps, i, f.prio);
    }
  }
  world->commitAllHost();
  world->fitStaticTables();
  const auto flows_total = static_cast<int64_t>(in.flows.size()) * count;
  world->grow<net::FlowRecord>(TableCapacity{flows_total + 1, flows_total + 1});
  for (ExpId e = 0; e < count; ++e) world->reserveRegion<net::FlowRecord>(e, static_cast<int64_t>(in.flows.size()));
  int64_t links_total = 0;
  for (ExpId e = 0; e < count; ++e) links_total += world->table<net::Link>().expRows(e);
  world->grow<net::LinkSample>(TableCapacity{links_total * (kChunkSteps + 1), links_total});
  return world;
}

/**
 * Variants [first, end) cut into consecutive batches that fit `budget` bytes each: a batch
 * takes variants while the sum of their sizes fits (a variant larger than the budget is a
 * batch of its own). On a device (`on_device`) a variant's size is its whole world, built
 * alone to measure it (a batch too large for the device then fails); on the CPU it is its
 * packet storage, counted from the topology. The worlds are built when their batch runs.
 */
std::vector<NetsimWorld> cutToBudget(const NetsimInput& in, const Routing& routing, uint32_t first, uint32_t end,
                                     int64_t budget, bool on_device) {
  std::vector<NetsimWorld> batches;
  int64_t used = 0;
  for (uint32_t x = first; x < end; ++x) {
    int64_t bytes = 0;
    if (on_device) {
      NetsimWorld one;
      one.variants = {x};
      one.cfgs = {in.variants[x].cfg};
      bytes = static_cast<int64_t>(buildNetsimWorld(in, routing, one)->totalBytes());
    } else {
      bytes = net::packetStorageBytes<net::NetWorld>(storageOf(in, in.variants[x].cfg), in.variants[x].cfg);
    }
    if (batches.empty() || used + bytes > budget) {
      batches.emplace_back();
      used = 0;
    }
    batches.back().variants.push_back(x);
    batches.back().cfgs.push_back(in.variants[x].cfg);
    used += bytes;
  }
  return batches;
}

/**
 * Writes each variant's results as soon as it finishes (from any worker thread): its own
 * files, then summary.csv again with every variant finished so far, in file order.
 */
class NetsimWriter {
 public:
  NetsimWriter(const NetsimInput& in, const Routing& routing, std::filesystem::path out, bool quiet)
      : in_(in), routing_(routing), out_(std::move(out)), quiet_(quiet), rows_(in.variants.size()) {
    std::vector<uint32_t> next_port(in.topo.nicCount(), kFirstSourcePort);
    for (const FlowLine& f : in.flows) {
      first_start_ = std::min(first_start_, f.start_ps);
      source_ports_.push_back(next_port[f.src]++);
    }
  }

  /// Variants `xs` run again from the start with the pooled storage of `cfgs`.
  void grew(const std::vector<uint32_t>& xs, const std::vector<net::NetworkConfig>& cfgs) {
    if (quiet_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < xs.size(); ++i) {
      std::printf("  %-16s packet storage ran out in its batch: again from the start with switch_pool_slots %d, "
                  "link_ring_factor %d, nic_control_slots %d\n",
                  in_.variants[xs[i]].name.c_str(), cfgs[i].switch_pool_slots, cfgs[i].link_ring_factor,
                  cfgs[i].nic_control_slots);
    }
    std::fflush(stdout);
  }

  /// Variant x is experiment e of `world`, done; `links` are its links.csv rows and
  /// `wall_s` its batch's wall time so far.
  void finished(uint32_t x, net::NetWorld& world, ExpId e, const std::string& links, double wall_s) {
    const Variant& v = in_.variants[x];
    const FlowStats fs = flowStats(v, world, e);
    std::filesystem::create_directories(out_ / v.name);
    writeFileAtomically(out_ / v.name / "flows.csv", fs.csv);
    writeFileAtomically(out_ / v.name / "fct.txt", fs.fct_txt);
    writeFileAtomically(out_ / v.name / "queues.csv", net::queuesCsv(world, e, first_start_, fs.last));
    if (v.cfg.link_bin_ps > 0) {
      writeFileAtomically(out_ / v.name / "links.csv", net::kLinksCsvHeader + links);
    }
    const net::NetCounters c = net::experimentCounters(world, e);
    std::ostringstream row;
    row << v.name << ',' << ccName(v.cfg.cc) << ',' << (v.cfg.load_balance == net::LoadBalance::kEcmp ? "ecmp" : "spray")
        << ',' << in_.flows.size() << ',' << fs.slowdowns.size() << ',' << fs.last << ',' << fs.mean << ',' << fs.p99
        << ',' << c.packet_hops << ',' << c.ecn_marks << ',' << c.cnps << ',' << c.pauses << ',' << c.paused_ps << ','
        << c.drops << ',' << c.retransmits << ',' << c.timeouts << ',' << wall_s << '\n';
    const std::lock_guard<std::mutex> lock(mutex_);
    rows_[x] = row.str();
    std::string summary =
        "experiment,cc,load_balance,flows,finished,last_finish_ps,mean_slowdown,p99_slowdown,packet_hops,ecn_marks,"
        "cnps,pauses,paused_ps,drops,retransmits,timeouts,wall_s\n";
    for (const std::string& r : rows_) summary += r;
    writeFileAtomically(out_ / "summary.csv", summary);
    if (!quiet_) {
      std::printf("  %-16s %-6s flows %zu/%zu  last finish %.3f us  slowdown mean %.2f p99 %.2f  drops %ld  pauses %ld\n",
                  v.name.c_str(), ccName(v.cfg.cc), fs.slowdowns.size(), in_.flows.size(),
                  static_cast<double>(fs.last) * 1e-6, fs.mean, fs.p99, static_cast<long>(c.drops),
                  static_cast<long>(c.pauses));
      if (world.clock(e).outcome == Outcome::kTimeLimit) {
        std::printf("  %-16s stopped at the engine's time horizon (%s simulated) with flows unfinished\n",
                    v.name.c_str(), formatDuration(kTimeHorizonPs).c_str());
      }
      std::fflush(stdout);
    }
  }

 private:
  /// An experiment's completed flows: flows.csv, fct.txt, their FCT slowdowns (sorted),
  /// mean, p99 and the last finish.
  struct FlowStats {
    std::string csv;
    std::string fct_txt;
    std::vector<double> slowdowns;
    double mean = 0;
    double p99 = 0;
    int64_t last = 0;
  };
  FlowStats flowStats(const Variant& v, net::NetWorld& world, ExpId e) const {
    auto& records = world.table<net::FlowRecord>();
    std::vector<net::FlowResult> flows;
    for (int64_t row = records.expBegin(e); row < records.expEnd(e); ++row) {
      flows.push_back(records.get<net::FlowResult>(row));
    }
    FlowFiles files = flowFiles(in_.topo, routing_, v.cfg, flows, [&](size_t i) {
      return std::make_pair(source_ports_[flows[i].id], in_.flows[flows[i].id].dport);
    });
    FlowStats fs;
    fs.csv = std::move(files.csv);
    fs.fct_txt = std::move(files.fct_txt);
    fs.slowdowns = std::move(files.slowdowns);
    fs.last = files.last;
    std::sort(fs.slowdowns.begin(), fs.slowdowns.end());
    for (double sd : fs.slowdowns) fs.mean += sd;
    if (!fs.slowdowns.empty()) {
      fs.mean /= static_cast<double>(fs.slowdowns.size());
      fs.p99 = fs.slowdowns[static_cast<size_t>(0.99 * static_cast<double>(fs.slowdowns.size() - 1))];
    }
    return fs;
  }

  /// The reference's first source port of a host.
  static constexpr uint32_t kFirstSourcePort = 10000;

  const NetsimInput& in_;
  const Routing& routing_;
  std::filesystem::path out_;
  bool quiet_;
  std::mutex mutex_;
  std::vector<std::string> rows_;  ///< summary rows of the variants written so far
  int64_t first_start_ = INT64_MAX;     ///< earliest flow start: the active period begins
  std::vector<uint32_t> source_ports_;  ///< per flow: its source port in fct.txt
};

/**
 * Runs a world to its end on `threads` threads (fewer while the machine is busy when
 * `yield_to_load`), or on a device when `device` is set,
 * draining its link samples as it goes and writing each variant's results as soon as it is
 * done. When pooled storage runs out, the variants not yet written run again from the
 * start in a new world, those that ran out with that storage doubled (as often as needed,
 * up to the knobs' limits): their results are those of a run that fitted from the start.
 */
void runNetsimWorld(NetsimWorld& w, const NetsimInput& in, const Routing& routing, int threads, int64_t cpu_block,
                    bool yield_to_load, const net::NetworkStepRunner& device, NetsimWriter& writer) {
  const CpuExecutor exec(threads, cpu_block, yield_to_load);
  for (;;) {
    const uint32_t count = w.world->numExperiments();
    w.link_rows.assign(count, std::string());
    std::vector<char> written(count, 0);
    bool link_bins = false;
    for (ExpId e = 0; e < count; ++e) link_bins = link_bins || w.world->config(e).net.network.link_bin_ps > 0;
    // On a device the world stays there between chunks: the host fetches the link samples
    // it drains, and the whole world only when a variant is written or the run failed.
    std::unique_ptr<StepSession<net::NetWorld>> session = openStepSession<net::NetGraph>(device, exec, *w.world);
    RunReport r;
    for (;;) {
      r = session->run(kChunkSteps);
      w.report.steps += r.steps;
      w.report.wall_seconds += r.wall_seconds;
      w.report.status = r.status;
      if (r.status != 0u) session->syncHost();
      std::vector<char> done(count, 0);
      bool any_done = false;
      for (ExpId e = 0; e < count; ++e) {
        // One whose storage ran out lost a packet: it runs again even if its clock says done.
        const bool lost = r.status != 0u && net::experimentCounters(*w.world, e).overflow > 0;
        done[e] = written[e] == 0 && w.world->clock(e).done() && !lost ? 1 : 0;
        any_done = any_done || done[e] != 0;
      }
      if (any_done) session->syncHost();
      if (link_bins) {
        session->syncTable<net::LinkSample>();
        session->syncTable<net::Link>();
        net::drainLinkSamples(*w.world, w.link_rows, done);
        session->pushTable<net::LinkSample>();
      }
      for (ExpId e = 0; e < count; ++e) {
        if (done[e] == 0) continue;
        writer.finished(w.variants[e], *w.world, e, w.link_rows[e], w.report.wall_seconds);
        std::string().swap(w.link_rows[e]);  // written: its rows need not wait for the others
        written[e] = 1;
      }
      if (r.finished || r.status != 0u || r.steps == 0) break;
    }
    session.reset();
    if ((r.status & ~net::kStatusPacketPool) != 0u || (r.status & net::kStatusPacketPool) == 0u) return;
    NetsimWorld again;
    for (ExpId e = 0; e < count; ++e) {
      if (written[e] != 0) continue;
      net::NetworkConfig cfg = w.cfgs[e];
      const bool ran_out = net::experimentCounters(*w.world, e).overflow > 0;
      if (ran_out && !net::growPooledStorage(r.status, cfg)) return;  // at a limit: the error stands
      if (const std::string problem = storageProblem(in, in.variants[w.variants[e]], cfg); !problem.empty()) {
        throw std::runtime_error("its packet storage ran out, and doubling it is refused: " + problem);
      }
      again.variants.push_back(w.variants[e]);
      again.cfgs.push_back(cfg);
    }
    writer.grew(again.variants, again.cfgs);
    w.variants = std::move(again.variants);
    w.cfgs = std::move(again.cfgs);
    w.world.reset();  // free the old world before building the larger one
    w.world = buildNetsimWorld(in, routing, w);
    w.report.status = 0;
  }
}

}  // namespace

std::string describeNetworkGraph(bool dot) {
  const auto nodes = net::NetGraph::describe();
  return dot ? formatGraphDot(nodes) : formatGraph(nodes);
}

void checkNetsimFile(const std::filesystem::path& yaml, int64_t budget, Diagnostics& diags) {
  readInput(yaml, budget, diags);
}

int runNetsim(const std::filesystem::path& yaml, const NetsimOptions& options) {
  Diagnostics diags;
  const NetsimInput in = readInput(yaml, options.max_memory > 0 ? options.max_memory : defaultMemoryBudget(), diags);
  const auto n = static_cast<uint32_t>(in.variants.size());
  BackendPlan plan = planBackend(options.backend, 0, usableCudaDevices(), cudaBackendBuilt());
  if (!plan.error.empty()) diags.add(Diagnostic{"", 0, "--backend", plan.error});
  if (plan.error.empty() && diags.empty()) {
    const std::string warning = confirmAutoBackend(plan, options.backend, CheckedWorlds::kNetwork);
    if (!warning.empty()) std::cerr << "multiverse: warning: " << warning << "\n";
  }
  if (plan.cuda && plan.devices.size() > n) plan.devices.resize(std::max<uint32_t>(n, 1));  // no empty batch
  if (diags.empty()) {
    // Auto CPU workers: no more than copies of the largest variant's storage the budget holds.
    int64_t largest = 1;
    for (const Variant& v : in.variants) {
      largest = std::max(largest, net::packetStorageBytes<net::NetWorld>(storageOf(in, v.cfg), v.cfg));
    }
    planCpuWorkers(plan, options.cpu_workers, options.threads, std::min<int64_t>(n, in.memory_budget / largest));
    if (!plan.error.empty()) diags.add(Diagnostic{"", 0, "--cpu-workers", plan.error});
  }
  if (!diags.empty()) {
    std::cerr << diags.format();
    return kExitUsageError;
  }
  const std::filesystem::path out = options.out.empty() ? std::filesystem::path("results") / in.name : options.out;
  const FolderLock lock(out);  // throws FolderBusy when another run writes there: exit 1
  // A folder netsim wrote carries its marker (or, written before the marker, its summary's
  // header); --force replaces only such a folder's results, never a sweep's or a user's.
  const std::filesystem::path marker = out / ".multiverse-netsim";
  if (std::filesystem::exists(out / ".multiverse")) {
    std::cerr << "multiverse: " << printable(out.string())
              << " holds a sweep's results (.multiverse); nothing was changed: choose another output folder\n";
    return kExitUsageError;
  }
  if (std::filesystem::exists(out / "summary.csv")) {
    std::ifstream summary(out / "summary.csv");
    std::string header;
    std::getline(summary, header);
    if (!std::filesystem::exists(marker) && header.rfind("experiment,cc,load_balance,", 0) != 0) {
      std::cerr << "multiverse: " << printable(out.string())
                << " holds a summary.csv netsim did not write; nothing was changed: choose another output folder\n";
      return kExitUsageError;
    }
    if (!options.force) {
      std::cerr << "multiverse: " << printable(out.string())
                << " already holds netsim results (summary.csv); use --force to replace them, or choose another "
                   "output folder\n";
      return kExitUsageError;
    }
    std::filesystem::remove(out / "summary.csv");
    for (const Variant& v : in.variants) std::filesystem::remove_all(out / v.name);
  }
  writeFileAtomically(marker, "multiverse netsim results: summary.csv and the variants' folders; --force replaces "
                              "them (docs/netsim.md)\n");
  const Routing& routing = in.routing;
  const auto workers = static_cast<uint32_t>(plan.workers());
  // Each worker's variants, in batches that fit its device (one batch on the CPU).
  std::vector<std::vector<NetsimWorld>> work(workers);
  size_t batch_count = 0;
  for (uint32_t k = 0; k < workers; ++k) {
    const int64_t device = deviceMemoryBudget(plan, static_cast<int>(k));
    work[k] = cutToBudget(in, routing, static_cast<uint32_t>(partBegin(n, workers, k)),
                          static_cast<uint32_t>(partBegin(n, workers, k + 1)),
                          device > 0 ? device : in.memory_budget / workers, device > 0);
    batch_count += work[k].size();
  }
  if (!options.quiet) {
    std::cout << "netsim " << printable(in.name + ": " + in.topo.name()) << ", " << in.flows.size() << " flows, " << n
              << " experiment(s); backend " << plan.describe();
    if (batch_count > workers) {
      std::cout << "; " << batch_count << " batches to fit " << (plan.cuda ? "the GPU's memory" : "--max-memory");
    }
    std::cout << "\n";
  }
  NetsimWriter writer(in, routing, out, options.quiet);
  std::vector<std::thread> threads;
  for (uint32_t k = 0; k < workers; ++k) {
    threads.emplace_back([&, k] {
      for (NetsimWorld& w : work[k]) {
        try {
          w.world = buildNetsimWorld(in, routing, w);
          runNetsimWorld(w, in, routing, plan.threadsOf(static_cast<int>(k), options.threads), options.cpu_block,
                         options.threads == 0, networkStepRunner(plan, static_cast<int>(k)), writer);
          w.world.reset();
        } catch (const DeviceOutOfMemory& e) {  // this batch only: the device is still usable
          w.error = e.what();
          w.world.reset();
        } catch (const std::exception& e) {  // a device fault, or results that cannot be written
          w.error = e.what();
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  bool stopped = false;
  for (const std::vector<NetsimWorld>& batches : work) {
    for (const NetsimWorld& w : batches) {
      if (w.error.empty()) continue;
      std::cerr << "multiverse: a batch of netsim variants stopped: " << w.error
                << " (the results of the variants that finished are in " << printable(out.string()) << ")\n";
      stopped = true;
    }
  }
  if (stopped) return kExitRunError;
  RunReport report;
  for (const std::vector<NetsimWorld>& batches : work) {
    double worker_seconds = 0;
    for (const NetsimWorld& w : batches) {
      report.steps += w.report.steps;
      worker_seconds += w.report.wall_seconds;
      report.status |= w.report.status;
    }
    report.wall_seconds = std::max(report.wall_seconds, worker_seconds);
  }
  if (report.status != 0u) {
    std::string why = net::pooledStorageMessage(report.status);
    if ((report.status & ~net::kStatusPacketPool) != 0u) {
      why += (why.empty() ? "" : "; ") + net::NetWorld::statusMessage(report.status & ~net::kStatusPacketPool, "network");
    }
    std::cerr << "multiverse: the simulation stopped: " << why
              << " (the results of the experiments that finished before are in " << printable(out.string()) << ")\n";
    return kExitRunError;
  }
  if (!options.quiet) {
    std::printf("  wall %.3f s, %ld steps; results in %s\n", report.wall_seconds, static_cast<long>(report.steps),
                printable(out.string()).c_str());
  }
  return kExitOk;
}

}  // namespace mv
