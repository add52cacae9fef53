#include "systems/connections.hpp"

#include <algorithm>

namespace mv::train {

int64_t addConnections(TrainWorld& world, ExpId e, std::vector<ConnectionEnds> ends, uint32_t prio, uint32_t qps) {
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  const size_t connections = ends.size();
  for (uint32_t q = 1; q < qps; ++q) {
    for (size_t i = 0; i < connections; ++i) {
      ends.push_back(ends[i]);
      ends.back().key.qp = q;
    }
  }
  std::sort(ends.begin(), ends.end());
  if (ends.empty()) return 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    const ConnectionEnds& c = ends[i];
    const net::FlowSpec spec{c.src_nic, c.dst_nic, 0, 0, i, prio, 1};
    world.createHost<net::Flow>(e, net::flowKey(c.src_nic, i), spec, net::FlowSend{}, net::FlowCc{}, net::FlowRecv{});
  }
  world.commitHost<net::Flow>();
  auto& flows = world.table<net::Flow>();
  std::vector<Entity> by_id(ends.size());
  for (int64_t r = flows.expBegin(e); r < flows.expEnd(e); ++r) {
    const net::FlowSpec& spec = flows.get<net::FlowSpec>(r);
    if (spec.connection != 0u && spec.id < by_id.size()) by_id[spec.id] = flows.entity[r];
  }
  const int64_t first = world.appendStatic<net::ConnectionIndex>(e, static_cast<int64_t>(ends.size()));
  auto& index = world.table<net::ConnectionIndex>();
  for (size_t i = 0; i < ends.size(); ++i) {
    index.get<net::ConnectionRef>(first + static_cast<int64_t>(i)) = net::ConnectionRef{ends[i].key, by_id[i]};
  }
  return static_cast<int64_t>(ends.size());
}

}  // namespace mv::train
