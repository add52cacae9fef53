#include "systems/connections.hpp"

#include <algorithm>

namespace mv::train {
namespace {

/// The rows of experiment e's `count` connections in table A, by id (commits A first).
template <class A>
std::vector<Entity> connectionRows(TrainWorld& world, ExpId e, size_t count) {
  world.commitHost<A>();
  auto& flows = world.table<A>();
  std::vector<Entity> by_id(count);
  for (int64_t r = flows.expBegin(e); r < flows.expEnd(e); ++r) {
    const net::FlowSpec& spec = flows.template get<net::FlowSpec>(r);
    if (spec.connection != 0u && spec.id < count) by_id[spec.id] = flows.entity[r];
  }
  return by_id;
}

}  // namespace

int64_t addConnections(TrainWorld& world, ExpId e, std::vector<ConnectionEnds> ends, uint32_t prio, uint32_t qps,
                       bool fluid) {
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
  // Room for them all at once: a commit per few rows would lay the whole table out each time.
  const auto n = static_cast<int64_t>(ends.size());
  if (fluid) {
    world.grow<net::FluidFlow>(TableCapacity{world.table<net::FluidFlow>().rows + n, n});
  } else {
    world.grow<net::Flow>(TableCapacity{world.table<net::Flow>().rows + n, n});
  }
  for (size_t i = 0; i < ends.size(); ++i) {
    const ConnectionEnds& c = ends[i];
    const net::FlowSpec spec{c.src_nic, c.dst_nic, 0, 0, i, prio, 1};
    if (fluid) {
      world.createHost<net::FluidFlow>(e, net::flowKey(c.src_nic, i), spec, net::FluidFlowState{}, net::FluidListSlot{},
                                       net::FluidMessageNow{});
    } else {
      world.createHost<net::Flow>(e, net::flowKey(c.src_nic, i), spec, net::FlowSend{}, net::FlowCc{}, net::FlowRecv{});
    }
  }
  const std::vector<Entity> by_id =
      fluid ? connectionRows<net::FluidFlow>(world, e, ends.size()) : connectionRows<net::Flow>(world, e, ends.size());
  const int64_t first = world.appendStatic<net::ConnectionIndex>(e, static_cast<int64_t>(ends.size()));
  auto& index = world.table<net::ConnectionIndex>();
  for (size_t i = 0; i < ends.size(); ++i) {
    index.get<net::ConnectionRef>(first + static_cast<int64_t>(i)) = net::ConnectionRef{ends[i].key, by_id[i]};
  }
  return static_cast<int64_t>(ends.size());
}

}  // namespace mv::train
