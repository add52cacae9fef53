/**
 * @file flow_files.cpp
 * flows.csv and fct.txt rows from finished flows.
 */
#include "systems/flow_files.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "ecs/units.hpp"
#include "network/nic_system.hpp"
#include "systems/network_layout.hpp"

namespace mv {

FlowFiles flowFiles(const Topology& topo, const Routing& routing, const net::NetworkConfig& cfg,
                    std::span<const net::FlowResult> flows, const FlowPorts& ports) {
  FlowFiles out;
  std::ostringstream csv;
  csv << "flow,src,dst,bytes,start_ps,finish_ps,fct_ps,ideal_fct_ps\n";
  auto address = [&](uint32_t nic) {
    const uint32_t node = topo.nicNode(nic);
    return 0x0b000001u + (node / 256) * 0x10000u + (node % 256) * 0x100u;
  };
  const int64_t header = net::dataWireBytes(0, cfg.cc, cfg.wire);
  std::vector<std::tuple<int64_t, uint64_t, std::string>> lines;  // (finish, id, line)
  for (size_t i = 0; i < flows.size(); ++i) {
    const net::FlowResult& f = flows[i];
    const int64_t packets = (f.bytes + cfg.payload_bytes - 1) / cfg.payload_bytes;
    const int64_t first_wire = std::min<int64_t>(f.bytes, cfg.payload_bytes) + header;
    const int64_t ideal = idealFct(topo, routing, f.src_nic, f.dst_nic, first_wire, f.bytes + packets * header);
    const int64_t fct = f.finish_ps - f.start_ps;
    csv << f.id << ',' << f.src_nic << ',' << f.dst_nic << ',' << f.bytes << ',' << f.start_ps << ',' << f.finish_ps
        << ',' << fct << ',' << ideal << '\n';
    out.slowdowns.push_back(static_cast<double>(fct) / static_cast<double>(ideal));
    out.last = std::max(out.last, f.finish_ps);
    const int64_t standalone_ps =
        idleRtt(topo, routing, f.src_nic, f.dst_nic, cfg.payload_bytes) +
        serializationTimeWholeNs(Bytes{f.bytes + packets * net::dataWireBytes(0, net::CcKind::kNone, cfg.wire)},
                                 BitsPerSecond{bottleneckRate(topo, routing, f.src_nic, f.dst_nic)})
            .ps;
    const auto [sport, dport] = ports(i);
    char line[192];
    std::snprintf(line, sizeof line, "%08x %08x %u %u %lld %lld %lld %lld\n", address(f.src_nic), address(f.dst_nic),
                  sport, dport, static_cast<long long>(f.bytes), static_cast<long long>(f.start_ps / 1000),
                  static_cast<long long>(fct / 1000), static_cast<long long>(standalone_ps / 1000));
    lines.emplace_back(f.finish_ps, f.id, line);
  }
  out.csv = csv.str();
  std::sort(lines.begin(), lines.end());
  for (const auto& line : lines) out.fct_txt += std::get<2>(line);
  return out;
}

}  // namespace mv
