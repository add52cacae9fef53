/**
 * @file network_yaml.cpp
 * Network parameters, topologies and flow lists from YAML and text files.
 */
#include "experiments/network_yaml.hpp"

#include <charconv>
#include <sstream>

#include "ecs/input_file.hpp"
#include "ecs/quantity.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"

namespace mv {

namespace {
/// The lowest rate floor a congestion control may cut a flow to, 1 Mbps: at 1 bps one
/// packet took hours of simulated time, its CC timers ticking all along, and a small incast
/// never finished.
constexpr int64_t kMinCcFloorBps = 1'000'000;
}  // namespace

net::NetworkConfig readNetworkConfig(const ConfigReader& r, const net::NetworkConfig& base) {
  net::NetworkConfig c = base;
  r.allowOnly({"cc", "load_balance", "wire", "mtu", "payload", "ack_interval", "ack_high_priority", "nack_interval", "rto", "window",
               "switch_pool_slots", "link_ring_factor", "nic_control_slots", "link_bin", "whole_ns", "pfc", "ecn", "dcqcn", "hpcc", "dctcp"});
  c.cc = static_cast<net::CcKind>(r.choice("cc", static_cast<int>(c.cc), {"none", "dcqcn", "hpcc", "dctcp"}));
  c.load_balance = static_cast<net::LoadBalance>(r.choice("load_balance", static_cast<int>(c.load_balance), {"ecmp", "spray"}));
  c.wire = static_cast<net::WireFormat>(r.choice("wire", static_cast<int>(c.wire), {"ns3", "roce"}));
  if (c.wire == net::WireFormat::kRoce) {
    // RoCE carries an RDMA MTU per packet: a power of two from 256 to 4096 bytes.
    if (r.has("payload")) {
      r.error("payload", "RoCE packets carry network.mtu (256, 512, 1024, 2048 or 4096 B); the ns-3 reference's "
                         "payload (up to 9000 B) needs network.wire: ns3");
    }
    const int64_t fallback = base.wire == net::WireFormat::kRoce ? base.payload_bytes : net::kRoceMaxMtu;
    const int64_t mtu = r.integer("mtu", fallback, 256, net::kRoceMaxMtu);
    if ((mtu & (mtu - 1)) != 0) r.error("mtu", "RoCE's MTU is 256, 512, 1024, 2048 or 4096 B, not " + std::to_string(mtu));
    c.payload_bytes = static_cast<int32_t>(mtu);
  } else {
    if (r.has("mtu")) r.error("mtu", "network.mtu sizes RoCE packets (network.wire: roce); with ns3 give network.payload");
    const int64_t fallback = base.wire == net::WireFormat::kNs3 ? base.payload_bytes : net::NetworkConfig{}.payload_bytes;
    c.payload_bytes = static_cast<int32_t>(r.integer("payload", fallback, 64, 9000));
  }
  c.ack_interval = static_cast<int32_t>(r.integer("ack_interval", c.ack_interval, 1, 64));
  if (r.has("ack_high_priority")) {
    c.ack_priority = r.boolean("ack_high_priority", true) ? net::AckPriority::kHigh : net::AckPriority::kData;
  }
  c.nack_interval_ps = r.durationPs("nack_interval", c.nack_interval_ps, 1, kMaxLatencyPs);
  c.rto_ps = r.durationPs("rto", c.rto_ps, 1, kTimeHorizonPs);
  c.window = r.boolean("window", c.window);
  c.switch_pool_slots = static_cast<int32_t>(r.integer("switch_pool_slots", c.switch_pool_slots, 64, net::kMaxSwitchPoolSlots));
  c.link_ring_factor = static_cast<int32_t>(r.integer("link_ring_factor", c.link_ring_factor, 1, net::kMaxLinkRingFactor));
  c.nic_control_slots = static_cast<int32_t>(r.integer("nic_control_slots", c.nic_control_slots, 4, net::kMaxNicControlSlots));
  c.link_bin_ps = r.has("link_bin") ? r.durationPs("link_bin", 0, 1, kTimeHorizonPs) : c.link_bin_ps;
  c.whole_ns = r.boolean("whole_ns", c.whole_ns);

  const ConfigReader pfc = r.child("pfc");
  pfc.allowOnly({"enabled", "buffer", "reserve", "resume_offset", "headroom_rtts", "dynamic_threshold", "static_xoff"});
  c.pfc.enabled = pfc.boolean("enabled", c.pfc.enabled);
  c.pfc.buffer_bytes = pfc.sizeBytes("buffer", c.pfc.buffer_bytes, 1, kMaxInputBytes);
  c.pfc.reserve_bytes = pfc.sizeBytes("reserve", c.pfc.reserve_bytes, 1, kMaxInputBytes);
  c.pfc.resume_offset_bytes = pfc.sizeBytes("resume_offset", c.pfc.resume_offset_bytes, 1, kMaxInputBytes);
  c.pfc.headroom_rtts = static_cast<int32_t>(pfc.integer("headroom_rtts", c.pfc.headroom_rtts, 0, 100));
  c.pfc.dynamic_threshold = pfc.boolean("dynamic_threshold", c.pfc.dynamic_threshold);
  c.pfc.static_xoff_bytes = pfc.sizeBytes("static_xoff", c.pfc.static_xoff_bytes, 1, kMaxInputBytes);

  const ConfigReader ecn = r.child("ecn");
  ecn.allowOnly({"enabled", "kmin_per_25g", "kmax_per_25g", "pmax"});
  c.ecn.enabled = ecn.boolean("enabled", c.ecn.enabled);
  c.ecn.kmin_per_25g_bytes = ecn.sizeBytes("kmin_per_25g", c.ecn.kmin_per_25g_bytes, 1, kMaxInputBytes);
  c.ecn.kmax_per_25g_bytes = ecn.sizeBytes("kmax_per_25g", c.ecn.kmax_per_25g_bytes, 1, kMaxInputBytes);
  c.ecn.pmax = ecn.real("pmax", c.ecn.pmax, 0.0, 1.0);
  if (c.ecn.kmax_per_25g_bytes <= c.ecn.kmin_per_25g_bytes) ecn.error("kmax_per_25g", "must exceed kmin_per_25g");

  const ConfigReader dq = r.child("dcqcn");
  dq.allowOnly({"g", "alpha_interval", "decrease_interval", "increase_interval", "fast_recovery_stages", "rai_per_25g",
                "rhai_per_25g", "rmin", "clamp_target_rate"});
  c.dcqcn.g = dq.real("g", c.dcqcn.g, 0.0, 1.0);
  c.dcqcn.alpha_interval_ps = dq.durationPs("alpha_interval", c.dcqcn.alpha_interval_ps, 1, kMaxLatencyPs);
  c.dcqcn.decrease_interval_ps = dq.durationPs("decrease_interval", c.dcqcn.decrease_interval_ps, 1, kMaxLatencyPs);
  c.dcqcn.increase_interval_ps = dq.durationPs("increase_interval", c.dcqcn.increase_interval_ps, 1, kMaxLatencyPs);
  c.dcqcn.fast_recovery_stages = static_cast<uint32_t>(dq.integer("fast_recovery_stages", c.dcqcn.fast_recovery_stages, 0, 100));
  c.dcqcn.rai_per_25g_bps = dq.rateBps("rai_per_25g", c.dcqcn.rai_per_25g_bps, 1, kMaxRateBps);
  c.dcqcn.rhai_per_25g_bps = dq.rateBps("rhai_per_25g", c.dcqcn.rhai_per_25g_bps, 1, kMaxRateBps);
  c.dcqcn.rmin_bps = dq.rateBps("rmin", c.dcqcn.rmin_bps, kMinCcFloorBps, kMaxRateBps);
  c.dcqcn.clamp_target_rate = dq.boolean("clamp_target_rate", c.dcqcn.clamp_target_rate);

  const ConfigReader hp = r.child("hpcc");
  hp.allowOnly({"eta", "max_stage", "rai", "rmin", "base_rtt", "int_multi"});
  c.hpcc.eta = hp.real("eta", c.hpcc.eta, 0.01, 1.0);
  c.hpcc.max_stage = static_cast<uint32_t>(hp.integer("max_stage", c.hpcc.max_stage, 0, 100));
  c.hpcc.rai_bps = hp.rateBps("rai", c.hpcc.rai_bps, 1, kMaxRateBps);
  c.hpcc.rmin_bps = hp.rateBps("rmin", c.hpcc.rmin_bps, kMinCcFloorBps, kMaxRateBps);
  c.hpcc.base_rtt_ps = hp.durationPs("base_rtt", c.hpcc.base_rtt_ps, 1, kMaxLatencyPs);
  c.hpcc.int_multi = static_cast<uint32_t>(hp.integer("int_multi", c.hpcc.int_multi, 0, net::kMaxIntMulti));

  const ConfigReader dc = r.child("dctcp");
  dc.allowOnly({"g", "rai", "rmin", "k_per_10g"});
  c.dctcp.g = dc.real("g", c.dctcp.g, 0.0, 1.0);
  c.dctcp.rai_bps = dc.rateBps("rai", c.dctcp.rai_bps, 1, kMaxRateBps);
  c.dctcp.rmin_bps = dc.rateBps("rmin", c.dctcp.rmin_bps, kMinCcFloorBps, kMaxRateBps);
  c.dctcp.k_per_10g_bytes = dc.sizeBytes("k_per_10g", c.dctcp.k_per_10g_bytes, 1, kMaxInputBytes);
  return c;
}

Topology readTopology(const ConfigReader& r, const std::filesystem::path& dir) {
  const int kind = r.choice("kind", -1, {"star", "fat_tree", "rail_optimized", "spine_leaf", "file"});
  // Read only when given: their absence means "derived" for some kinds (a rail-optimised
  // fabric's own link defaults, a spine-leaf's fabric rate from its spines).
  const BitsPerSecond rate{r.has("link_rate") ? r.rateBps("link_rate", 100'000'000'000) : 100'000'000'000};
  const Picoseconds delay{r.has("link_delay") ? r.durationPs("link_delay", 1'000'000, kMinLinkDelayPs, kMaxLatencyPs)
                                              : 1'000'000};
  const BitsPerSecond fabric_rate{r.has("fabric_rate") ? r.rateBps("fabric_rate", rate.bps) : rate.bps};
  const Picoseconds fabric_delay{
      r.has("fabric_delay") ? r.durationPs("fabric_delay", delay.ps, kMinLinkDelayPs, kMaxLatencyPs) : delay.ps};
  const std::vector<std::string> common{"kind", "link_rate", "link_delay", "fabric_rate", "fabric_delay"};
  auto allow = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    r.allowOnly(extra);
  };
  try {
    switch (kind) {
      case 0: {
        allow({"nics"});
        const auto nics = static_cast<uint32_t>(r.integer("nics", 2, 2, Routing::kMaxSwitchPorts));
        Topology t;
        for (uint32_t i = 0; i < nics; ++i) t.addNic(i);
        const uint32_t sw = t.addSwitch(1);
        for (uint32_t i = 0; i < nics; ++i) t.addLink(t.nicNode(i), sw, rate, delay);
        t.setName("star of " + std::to_string(nics) + " NICs");
        return t;
      }
      case 1: {
        allow({"k", "nics_per_server"});
        FatTreeParams p{static_cast<uint32_t>(r.integer("k", 8, 2, 128)), rate, delay, fabric_rate, fabric_delay,
                        static_cast<uint32_t>(r.integer("nics_per_server", 1, 1, 64))};
        return makeFatTree(p);
      }
      case 2: {
        allow({"servers", "nics_per_server", "spines", "leaf_radix_down"});
        RailParams p;
        p.servers = static_cast<uint32_t>(r.integer("servers", p.servers, 1, 1 << 20));
        p.nics_per_server = static_cast<uint32_t>(r.integer("nics_per_server", p.nics_per_server, 1, 64));
        p.spines = static_cast<uint32_t>(r.integer("spines", p.spines, 1, 4096));
        p.leaf_radix_down = static_cast<uint32_t>(r.integer("leaf_radix_down", p.leaf_radix_down, 1, 4096));
        if (r.has("link_rate")) p.nic_rate = rate;
        if (r.has("link_delay")) p.nic_delay = delay;
        if (r.has("fabric_rate")) p.fabric_rate = fabric_rate;
        if (r.has("fabric_delay")) p.fabric_delay = fabric_delay;
        return makeRailOptimized(p);
      }
      case 3: {
        allow({"leaves", "nics_per_leaf", "spines", "oversubscription"});
        SpineLeafParams p;
        p.leaves = static_cast<uint32_t>(r.integer("leaves", p.leaves, 1, 1 << 16));
        p.nics_per_leaf = static_cast<uint32_t>(r.integer("nics_per_leaf", p.nics_per_leaf, 1, 4096));
        p.spines = static_cast<uint32_t>(r.integer("spines", p.spines, 0, 4096));
        p.oversubscription = r.real("oversubscription", p.oversubscription, 0.01, 1000.0);
        p.nic_rate = rate;
        p.nic_delay = delay;
        if (r.has("fabric_rate")) {
          p.fabric_rate = fabric_rate;
        } else if (p.spines > 0) {
          p.fabric_rate = BitsPerSecond{0};  // derived from the spine count
        }
        p.fabric_delay = fabric_delay;
        return makeSpineLeaf(p);
      }
      case 4: {
        r.allowOnly({"kind", "path"});
        const std::string path = r.text("path", "");
        if (path.empty()) {
          r.error("path", "a topology file is required for kind: file");
          return Topology{};
        }
        return loadNs3Topology(dir / path);
      }
      default:
        if (!r.has("kind")) r.error("kind", "missing (star, fat_tree, rail_optimized, spine_leaf or file)");
        return Topology{};
    }
  } catch (const TopologyError& e) {
    r.error("", e.what());
    return Topology{};
  }
}

namespace {

/// Splits a line on commas or whitespace.
std::vector<std::string> fieldsOf(const std::string& line, bool csv) {
  std::vector<std::string> out;
  if (csv) {
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, ',')) {
      const auto b = field.find_first_not_of(" \t\r");
      const auto e = field.find_last_not_of(" \t\r");
      out.push_back(b == std::string::npos ? std::string() : field.substr(b, e - b + 1));
    }
  } else {
    std::istringstream in(line);
    for (std::string f; in >> f;) out.push_back(f);
  }
  return out;
}

template <class T>
bool parseNumber(const std::string& s, T& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

/// A start time in (fractional) units of 10^-exponent seconds, exactly, to picoseconds.
bool parseStart(const std::string& s, const char* unit, int64_t& ps) {
  return parseDuration(s + unit, ps) == QuantityStatus::kOk || (s == "0" && (ps = 0, true));
}

/// Why node id `n` of a flow.txt cannot be a flow's endpoint ("" when it can).
std::string nodeEndpointProblem(const Topology& topo, uint32_t n) {
  if (n >= topo.nodeCount()) {
    return "node id " + std::to_string(n) + " out of range (the topology has " + std::to_string(topo.nodeCount()) +
           " nodes, 0.." + std::to_string(topo.nodeCount() - 1) + "); flow.txt names node ids, not NIC indices";
  }
  if (topo.isSwitch(n)) return "node id " + std::to_string(n) + " is a switch, not a host";
  return "";
}

}  // namespace

std::vector<FlowLine> readFlowFile(const std::filesystem::path& path, const Topology& topo, Diagnostics& diags) {
  std::vector<FlowLine> flows;
  const uint32_t nics = topo.nicCount();
  const std::string file = path.string();
  const InputFile input = readInputFile(path);
  if (!input.ok()) {
    diags.add(Diagnostic{file, 0, "", "cannot open the flow list: " + input.problem});
    return flows;
  }
  std::istringstream in(input.text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const bool csv = !lines.empty() && lines[0].find(',') != std::string::npos;
  auto fail = [&](size_t i, const std::string& m) { diags.add(Diagnostic{file, static_cast<int>(i + 1), "", m}); };
  size_t first = 1;
  size_t announced = 0;
  if (csv) {
    const std::vector<std::string> header = fieldsOf(lines[0], true);
    const bool with_prio = header.size() == 5 && header[4] == "priority";
    if (header.size() < 4 || header[0] != "src" || header[1] != "dst" || header[2] != "bytes" || header[3] != "start_us" ||
        (header.size() == 5 && !with_prio) || header.size() > 5) {
      fail(0, "bad header (expected src,dst,bytes,start_us[,priority])");
      return flows;
    }
  } else {
    const std::vector<std::string> count = lines.empty() ? std::vector<std::string>() : fieldsOf(lines[0], false);
    if (count.empty() || !parseNumber(count[0], announced)) {
      fail(0, "expected the number of flows on the first line (HPCC flow.txt) or a CSV header");
      return flows;
    }
    // ns-3 reads the file as one stream of tokens: a second one here would be its first flow's.
    if (count.size() > 1) {
      fail(0, "unexpected token '" + count[1] + "' after the flow count (ns-3 would read it as the first flow's source)");
      return flows;
    }
  }
  for (size_t i = first; i < lines.size(); ++i) {
    const std::vector<std::string> f = fieldsOf(lines[i], csv);
    if (f.empty() || (f.size() == 1 && f[0].empty())) continue;
    FlowLine fl;
    bool ok = true;
    if (csv) {
      ok = f.size() >= 4 && f.size() <= 5 && parseNumber(f[0], fl.src) && parseNumber(f[1], fl.dst) &&
           parseNumber(f[2], fl.bytes) && parseStart(f[3], "us", fl.start_ps) &&
           (f.size() == 4 || parseNumber(f[4], fl.prio));
    } else {
      ok = f.size() == 6 && parseNumber(f[0], fl.src) && parseNumber(f[1], fl.dst) && parseNumber(f[2], fl.prio) &&
           parseNumber(f[3], fl.dport) && fl.dport <= 65535 && parseNumber(f[4], fl.bytes) &&
           parseStart(f[5], "s", fl.start_ps);
    }
    if (!ok) {
      fail(i, "malformed flow '" + lines[i] + "'");
      continue;
    }
    if (!csv) {
      const std::string src = nodeEndpointProblem(topo, fl.src);
      const std::string dst = nodeEndpointProblem(topo, fl.dst);
      if (!src.empty() || !dst.empty()) {
        fail(i, src + (!src.empty() && !dst.empty() ? "; " : "") + dst);
        continue;
      }
      fl.src = topo.nicIndex(fl.src);
      fl.dst = topo.nicIndex(fl.dst);
    }
    if (fl.src >= nics || fl.dst >= nics) {
      fail(i, "NIC index out of range (the topology has " + std::to_string(nics) + " NICs, 0.." +
                  std::to_string(nics - 1) + ")");
    } else if (fl.src == fl.dst) {
      fail(i, "a flow from a NIC to itself");
    } else if (fl.bytes <= 0) {
      fail(i, "a flow carries at least one byte");
    } else if (const std::string range = outOfRange(f[csv ? 2 : 4] + " bytes", fl.bytes, 1, kMaxInputBytes, formatSize);
               !range.empty()) {
      fail(i, "flow size " + range);
    } else if (fl.start_ps >= kTimeHorizonPs) {
      fail(i, "start " + f[csv ? 3 : 5] + (csv ? " us" : " s") + " is at or past the engine's time horizon (" +
                  formatDuration(kTimeHorizonPs) + ")");
    } else if (fl.prio == 0 || fl.prio > 7) {
      fail(i, "priority must be 1..7 (0 is the control class)");
    } else {
      flows.push_back(fl);
    }
  }
  if (!csv && flows.size() != announced && diags.empty()) {
    fail(lines.size() - 1, "the file announces " + std::to_string(announced) + " flows but has " +
                               std::to_string(flows.size()) + " (truncated?)");
  }
  return flows;
}

}  // namespace mv
