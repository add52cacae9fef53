#include "systems/connections.hpp"

#include <algorithm>

namespace mv::train {
namespace {

/// Creates the rows of experiment e's connections `ends` (in key order; id: the index) in
/// table A, each with `extra` components after its FlowSpec, all at once (a commit per few
/// rows would lay the whole table out each time), and returns their entities by id.
template <class A, class... Extra>
std::vector<Entity> createConnectionRows(TrainWorld& world, ExpId e, const std::vector<ConnectionEnds>& ends,
                                         uint32_t prio, const Extra&... extra) {
  const auto n = static_cast<int64_t>(ends.size());
  world.grow<A>(TableCapacity{world.table<A>().rows + n, n});
  for (size_t i = 0; i < ends.size(); ++i) {
    const ConnectionEnds& c = ends[i];
    world.createHost<A>(e, net::flowKey(c.src_nic, i), net::FlowSpec{c.src_nic, c.dst_nic, 0, 0, i, prio, 1}, extra...);
  }
  world.commitHost<A>();
  auto& flows = world.table<A>();
  std::vector<Entity> by_id(ends.size());
  for (int64_t r = flows.expBegin(e); r < flows.expEnd(e); ++r) {
    const net::FlowSpec& spec = flows.template get<net::FlowSpec>(r);
    if (spec.connection != 0u && spec.id < by_id.size()) by_id[spec.id] = flows.entity[r];
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
  const std::vector<Entity> by_id =
      fluid ? createConnectionRows<net::FluidFlow>(world, e, ends, prio, net::FluidFlowState{}, net::FluidListSlot{},
                                                   net::FluidMessageNow{})
            : createConnectionRows<net::Flow>(world, e, ends, prio, net::FlowSend{}, net::FlowCc{}, net::FlowRecv{});
  const int64_t first = world.appendStatic<net::ConnectionIndex>(e, static_cast<int64_t>(ends.size()));
  auto& index = world.table<net::ConnectionIndex>();
  for (size_t i = 0; i < ends.size(); ++i) {
    index.get<net::ConnectionRef>(first + static_cast<int64_t>(i)) = net::ConnectionRef{ends[i].key, by_id[i]};
  }
  return static_cast<int64_t>(ends.size());
}

}  // namespace mv::train
