/**
 * @file net_scenario.cpp
 * The packet-level test runs of net_scenario.hpp, compiled once for every test file that
 * uses them.
 */
#include "tests/support/net_scenario.hpp"

#include <stdexcept>

namespace mv::test {

namespace {

/// Adds experiment e's connections and their messages (ids as ConnectionDef says).
void addConnections(net::NetWorld& world, ExpId e, const std::vector<ConnectionDef>& connections) {
  auto& flows = world.table<net::Flow>();
  for (uint32_t j = 0; j < connections.size(); ++j) {
    const ConnectionDef& k = connections[j];
    const uint64_t id = (uint64_t{1} << 30) + j;
    world.createHost<net::Flow>(e, net::flowKey(k.src, id), net::FlowSpec{k.src, k.dst, 0, 0, id, 3, 1},
                                net::FlowSend{}, net::FlowCc{}, net::FlowRecv{});
    world.commitHost<net::Flow>();
    Entity conn;
    for (int64_t r = flows.expBegin(e); r < flows.expEnd(e); ++r) {
      if (flows.key[r] == net::flowKey(k.src, id)) conn = flows.entity[r];
    }
    for (uint32_t m = 0; m < k.messages.size(); ++m) {
      const uint64_t msg = uint64_t{1'000'000} * (j + 1) + m;
      world.createHost<net::Message>(e, net::flowKey(k.src, msg),
                                     net::MessageSpec{conn, msg, k.messages[m].bytes, k.messages[m].start_ps, -1, 0});
    }
  }
}

}  // namespace

std::vector<NetResult> runNetBatch(const std::vector<NetCase>& cases, int threads, int64_t block,
                                   const StepObserver& observe) {
  net::NetWorld world(static_cast<uint32_t>(cases.size()), TableCapacity{1 << 12, 1 << 12});
  for (ExpId e = 0; e < cases.size(); ++e) {
    const NetCase& c = cases[e];
    const Routing routing = computeRouting(*c.topo);
    const net::NetworkLayout layout = makeNetworkLayout(*c.topo, routing, c.cfg.payload_bytes);
    const int64_t lookahead = c.lookahead_ps > 0 ? c.lookahead_ps : layout.min_delay_ps;
    world.config(e).net = net::pathQuantities(layout, c.cfg);
    world.clock(e).lookahead_ps = lookahead;
    world.clock(e).seed = c.seed;
    world.clock(e).stable_id = c.stable_id;
    net::buildNetwork(world, e, layout, c.cfg, lookahead);
    for (uint32_t i = 0; i < c.flows.size(); ++i) {
      const FlowDef& f = c.flows[i];
      net::addFlow(world, e, f.src, f.dst, f.bytes, f.start_ps, i, f.prio);
    }
    addConnections(world, e, c.connections);
  }
  world.commitAllHost();
  int64_t total_flows = 0;
  for (const NetCase& c : cases) {
    total_flows += static_cast<int64_t>(c.flows.size());
    for (const ConnectionDef& k : c.connections) total_flows += static_cast<int64_t>(k.messages.size());
  }
  world.grow<net::FlowRecord>(TableCapacity{total_flows + 16, total_flows + 16});
  const CpuExecutor exec(threads, block);
  RunReport r;
  if (observe) {
    do {
      r = exec.run<net::NetGraph>(world.view(), 1);
      observe(world);
    } while (!r.finished && r.status == 0u && r.steps > 0);
  } else {
    r = exec.runToEnd<net::NetGraph>(world.view());
  }
  if (r.status != 0u) throw std::runtime_error("network run failed with status " + std::to_string(r.status));
  std::vector<NetResult> out;
  auto& records = world.table<net::FlowRecord>();
  auto& ports = world.table<net::Port>();
  for (ExpId e = 0; e < cases.size(); ++e) {
    NetResult res;
    for (int64_t row = records.expBegin(e); row < records.expEnd(e); ++row)
      res.flows.push_back(records.get<net::FlowResult>(row));
    res.counters = net::experimentCounters(world, e);
    for (int64_t row = ports.expBegin(e); row < ports.expEnd(e); ++row) {
      const net::PortQueue& q = ports.get<net::PortQueue>(row);
      res.ports.push_back(PortStats{q.max_bytes, q.byte_ps, q.tx_bytes});
    }
    res.end_ps = world.clock(e).now_ps;
    res.steps = world.clock(e).steps;
    out.push_back(std::move(res));
  }
  return out;
}

RunReport runNetToEnd(net::NetWorld& world, int threads) {
  return CpuExecutor(threads, 0).runToEnd<net::NetGraph>(world.view());
}

}  // namespace mv::test
