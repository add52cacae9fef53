/**
 * @file detail_csv.hpp
 * What a packet-level run records about its network, as CSV text: links.csv (bytes per
 * directed link per time bin of `network.link_bin`, drained from LinkSample rows while the
 * run goes on) and queues.csv (per switch port: largest and mean occupancy, bytes sent,
 * utilisation over a period). netsim and training sweeps write the same formats
 * (docs/netsim.md, docs/sweep.md `network`). Host-side; any world with the network archetypes.
 */
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "ecs/world.hpp"
#include "network/components.hpp"

namespace mv::net {

/// Header line of links.csv.
inline constexpr const char* kLinksCsvHeader = "link,bin_start_ps,bytes,utilisation\n";

/**
 * Appends the link samples of every experiment of `world` with a `link_bin` as links.csv
 * rows to `rows[e]` and removes them from the world; for the experiments with
 * `flush_open[e]` (done), also the bins still open.
 */
template <class WorldT>
void drainLinkSamples(WorldT& world, std::vector<std::string>& rows, const std::vector<char>& flush_open) {
  auto& samples = world.template table<LinkSample>();
  auto& links = world.template table<Link>();
  std::vector<LinkBin> bins;
  for (ExpId e = 0; e < world.numExperiments(); ++e) {
    const int64_t bin_ps = world.config(e).net.network.link_bin_ps;
    if (bin_ps <= 0) continue;
    bins.clear();
    for (int64_t r = samples.expBegin(e); r < samples.expEnd(e); ++r) bins.push_back(samples.template get<LinkBin>(r));
    if (flush_open[e] != 0) {
      for (int64_t r = links.expBegin(e); r < links.expEnd(e); ++r) {
        const LinkBinState& b = links.template get<LinkBinState>(r);
        if (b.bytes > 0) bins.push_back(LinkBin{static_cast<uint32_t>(r - links.expBegin(e)), 0, b.bin, b.bytes});
      }
    }
    std::ostringstream out;
    for (const LinkBin& b : bins) {
      const int64_t rate = links.template get<LinkInfo>(links.expBegin(e) + b.link).rate_bps;
      out << b.link << ',' << b.bin * bin_ps << ',' << b.bytes << ','
          << static_cast<double>(b.bytes) * 8.0 / (static_cast<double>(bin_ps) * 1e-12 * static_cast<double>(rate))
          << '\n';
    }
    rows[e] += out.str();
  }
  for (int64_t r = 0; r < samples.rows; ++r) samples.destroyRow(r);
  world.template commitHost<LinkSample>();
}

/// queues.csv of experiment e: per switch port, its rate, largest and mean occupancy, bytes
/// sent and utilisation, means over [first, last] (an active period), 0 when it is empty.
template <class WorldT>
std::string queuesCsv(WorldT& world, ExpId e, int64_t first, int64_t last) {
  auto& ports = world.template table<Port>();
  const double span = last > first ? static_cast<double>(last - first) : 0.0;
  std::ostringstream queues;
  queues << "port,rate_bps,max_bytes,mean_bytes,tx_bytes,utilisation\n";
  for (int64_t row = ports.expBegin(e); row < ports.expEnd(e); ++row) {
    const PortQueue& q = ports.template get<PortQueue>(row);
    const int64_t rate = ports.template get<PortInfo>(row).rate_bps;
    queues << row - ports.expBegin(e) << ',' << rate << ',' << q.max_bytes << ',' << (span > 0 ? q.byte_ps / span : 0.0)
           << ',' << q.tx_bytes << ','
           << (span > 0 ? static_cast<double>(q.tx_bytes) * 8e12 / (span * static_cast<double>(rate)) : 0.0) << '\n';
  }
  return queues.str();
}

}  // namespace mv::net
