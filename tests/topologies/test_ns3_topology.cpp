/**
 * @file test_ns3_topology.cpp
 * The ns-3/HPCC topology.txt loader: a valid file with every unit, layout tolerance, and
 * one malformed input per error, each naming file, line and token.
 */
#include <catch2/catch.hpp>

#include "tests/topologies/test_support.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using Catch::Matchers::Contains;
using mv::test::TempDir;
using mv::test::topologyErrorOf;

namespace {

/// 4 NICs (0-3) under 2 switches (4, 5), one link per rate unit and delay unit.
constexpr const char* kValid =
    "6 2 5\n"
    "4 5\n"
    "0 4 100Gbps 0.001ms 0\n"
    "1 4 25Gbps 1us 0\n"
    "2 5 400Gbps 500ns 0\n"
    "3 5 100Mbps 2.5us 0.0\n"
    "4 5 1.6Tbps 1500ps 0\n";

}  // namespace

TEST_CASE("topology.txt: a valid file loads links, rates and delays exactly", "[topology][ns3]") {
  const TempDir dir;
  const Topology topo = loadNs3Topology(dir.write("topology.txt", kValid));
  CHECK(topo.name() == "topology.txt");
  CHECK(topo.nodeCount() == 6);
  CHECK(topo.nics() == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(topo.switches() == std::vector<uint32_t>{4, 5});
  CHECK(topo.node(4).tier == 0);
  CHECK(topo.serverCount() == 4);
  CHECK(topo.serverOf(3) == 3);
  REQUIRE(topo.linkCount() == 5);

  const auto check_link = [&](uint32_t l, uint32_t a, uint32_t b, int64_t bps, int64_t ps) {
    INFO("link " << l);
    CHECK(topo.link(l).a == a);
    CHECK(topo.link(l).b == b);
    CHECK(topo.link(l).rate.bps == bps);
    CHECK(topo.link(l).delay.ps == ps);
  };
  check_link(0, 0, 4, 100'000'000'000, 1'000'000);
  check_link(1, 1, 4, 25'000'000'000, 1'000'000);
  check_link(2, 2, 5, 400'000'000'000, 500'000);
  check_link(3, 3, 5, 100'000'000, 2'500'000);
  check_link(4, 4, 5, 1'600'000'000'000, 1'500);
  CHECK(topo.nicSwitch(2) == 5);
  CHECK(topo.nicSwitchPort(3) == 1);
  CHECK_NOTHROW(validateTopology(topo, 4));
}

TEST_CASE("topology.txt: switch ids over several lines, blank lines, CRLF, interleaved ids", "[topology][ns3]") {
  const TempDir dir;
  const Topology topo = loadNs3Topology(dir.write("t.txt",
                                                  "5 3 4\r\n"
                                                  "\r\n"
                                                  "0 2\r\n"
                                                  "4\r\n"
                                                  "1 0 100Gbps 1us 0\r\n"
                                                  "\r\n"
                                                  "3 2 100Gbps 1us 0\r\n"
                                                  "0 2 400Gbps 1us 0\r\n"
                                                  "2 4 400Gbps 1us 0\r\n"
                                                  "\r\n"));
  CHECK(topo.switches() == std::vector<uint32_t>{0, 2, 4});
  CHECK(topo.nics() == std::vector<uint32_t>{1, 3});
  CHECK(topo.nicIndex(3) == 1);
  CHECK(topo.linkCount() == 4);
  CHECK_NOTHROW(validateTopology(topo, 2));
}

TEST_CASE("topology.txt: each malformed input names file, line and token", "[topology][ns3]") {
  struct Case {
    const char* what;
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"bad rate unit", "3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbs 1us 0\n",
       "topology.txt:4: bad rate '100Gbs' (expected a number with bps, Kbps, Mbps, Gbps or Tbps)"},
      {"rate without unit", "3 1 2\n2\n0 2 100 1us 0\n1 2 100Gbps 1us 0\n", "topology.txt:3: bad rate '100'"},
      {"zero rate", "3 1 2\n2\n0 2 0Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: rate 0Gbps is out of range [100Mbps, 100Tbps]"},
      {"bad delay", "3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1 0\n",
       "topology.txt:4: bad delay '1' (expected a number with s, ms, us, ns or ps)"},
      {"sub-picosecond delay", "3 1 2\n2\n0 2 100Gbps 0.5ps 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: bad delay '0.5ps' (finer than one picosecond)"},
      {"zero delay", "3 1 2\n2\n0 2 100Gbps 0ns 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: delay 0ns is out of range [1ns, 1s]"},
      {"truncated", "3 1 3\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:4: file ends after 2 of 3 links announced on line 1"},
      {"more links than announced", "3 1 1\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:4: unexpected '1' after the 1 links announced on line 1"},
      {"node id out of range", "3 1 2\n2\n0 2 100Gbps 1us 0\n1 7 100Gbps 1us 0\n",
       "topology.txt:4: destination node id '7' is out of range (expected an integer from 0 to 2)"},
      {"non-numeric node id", "3 1 2\n2\nzero 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: bad source node id 'zero'"},
      {"negative node id", "3 1 2\n2\n-1 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: bad source node id '-1'"},
      {"self link", "3 1 2\n2\n2 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n", "topology.txt:3: link from node '2' to itself"},
      {"missing field", "3 1 2\n2\n0 2 100Gbps\n1 2 100Gbps 1us 0\n", "topology.txt:3: missing delay after '100Gbps'"},
      {"extra field", "3 1 2\n2\n0 2 100Gbps 1us 0 x\n1 2 100Gbps 1us 0\n", "topology.txt:3: unexpected token 'x'"},
      {"non-zero error rate", "3 1 2\n2\n0 2 100Gbps 1us 0.01\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: error rate '0.01' is not supported"},
      {"non-numeric error rate", "3 1 2\n2\n0 2 100Gbps 1us none\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: bad error rate 'none'"},
      {"non-numeric header", "3 one 2\n2\n", "topology.txt:1: bad switch count 'one'"},
      {"short header", "\n\n3 1\n2\n", "topology.txt:3: missing link count after '1'"},
      {"more switches than nodes", "3 4 2\n0 1 2\n", "topology.txt:1: switch count '4' exceeds the node count '3'"},
      {"switch id out of range", "3 1 2\n3\n", "topology.txt:2: switch id '3' is out of range"},
      {"switch listed twice", "4 2 3\n3 3\n", "topology.txt:2: switch id '3' is listed twice"},
      {"missing switch ids", "3 2 2\n2\n", "topology.txt:2: file ends after 1 of 2 switch ids announced on line 1"},
      {"too many switch ids", "3 1 2\n2 1\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:2: unexpected token '1' after the 1 switch ids"},
      {"empty file", "\n  \n", "topology.txt:1: empty file"},
      {"only switches", "2 2 1\n0 1\n0 1 100Gbps 1us 0\n", "topology.txt:1: every node is a switch: no NICs"},
      {"host without a link", "3 1 1\n2\n0 2 100Gbps 1us 0\n",
       "topology.txt:1: node 1 is a host (not listed as a switch) with no link"},
      {"link between hosts", "3 1 2\n2\n0 1 100Gbps 1us 0\n1 2 100Gbps 1us 0\n",
       "topology.txt:3: link between hosts '0' and '1'"},
  };
  const TempDir dir;
  for (const auto& c : cases) {
    INFO(c.what);
    const auto path = dir.write("topology.txt", c.text);
    const std::string message = topologyErrorOf([&] { loadNs3Topology(path); });
    CHECK_THAT(message, Contains(c.expected));
    CHECK_THAT(message, Contains(path.string() + ":"));
  }
}

TEST_CASE("topology.txt: a missing file is a TopologyError naming it", "[topology][ns3]") {
  CHECK_THAT(topologyErrorOf([&] { loadNs3Topology("/nonexistent/mv/topology.txt"); }),
             Contains("/nonexistent/mv/topology.txt: cannot open"));
  const TempDir dir;
  std::filesystem::create_directories(dir.path("topology.txt"));
  CHECK_THAT(topologyErrorOf([&] { loadNs3Topology(dir.path("topology.txt")); }),
             Contains("topology.txt: cannot open the topology file: it is a directory, not a file"));
}
