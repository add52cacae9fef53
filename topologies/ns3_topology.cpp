/**
 * @file ns3_topology.cpp
 * Loader for the ns-3/HPCC `topology.txt` link-list format (declared in generators.hpp).
 * Every error names the file, the line and the offending token.
 */
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ecs/input_file.hpp"
#include "ecs/quantity.hpp"
#include "topologies/generators.hpp"

namespace mv {

namespace {

/// One non-blank line of the file, split on whitespace.
struct Line {
  uint32_t number = 0;
  std::vector<std::string> tokens;
};

/// The file as non-blank lines plus the context every error message needs.
class Ns3Reader {
 public:
  explicit Ns3Reader(const std::filesystem::path& path) : file_(path.string()) {
    const InputFile input = readInputFile(path);
    if (!input.ok()) throw TopologyError(file_ + ": cannot open the topology file: " + input.problem);
    std::istringstream in(input.text);
    std::string text;
    uint32_t number = 0;
    while (std::getline(in, text)) {
      ++number;
      std::istringstream fields(text);
      Line line{number, {}};
      for (std::string token; fields >> token;) line.tokens.push_back(std::move(token));
      if (!line.tokens.empty()) lines_.push_back(std::move(line));
    }
    last_line_ = number;
  }

  /// The non-blank lines in file order.
  const std::vector<Line>& lines() const { return lines_; }
  /// Number of the file's last line, for errors at the end of the file.
  uint32_t lastLine() const { return last_line_; }

  /// Throws "<file>:<line>: <message>".
  [[noreturn]] void fail(uint32_t line, const std::string& message) const {
    throw TopologyError(file_ + ":" + std::to_string(line) + ": " + message);
  }

  /// A non-negative integer field; `what` names it in the error.
  uint64_t count(const Line& line, const std::string& token, const char* what) const {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size()) {
      fail(line.number, std::string("bad ") + what + " '" + token + "' (expected a non-negative integer)");
    }
    return value;
  }

  /// A node id below `nodes`.
  uint32_t nodeId(const Line& line, const std::string& token, const char* what, uint64_t nodes) const {
    const std::string expected = "(expected an integer from 0 to " + std::to_string(nodes - 1) + ")";
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size()) {
      fail(line.number, std::string("bad ") + what + " '" + token + "' " + expected);
    }
    if (value >= nodes) {
      fail(line.number, std::string(what) + " '" + token + "' is out of range " + expected);
    }
    return static_cast<uint32_t>(value);
  }

  /// A rate such as "100Gbps" or "2.5Gbps", within the engine's rate range.
  BitsPerSecond rate(const Line& line, const std::string& token) const {
    int64_t bps = 0;
    const QuantityStatus status = parseRate(token, bps);
    if (status != QuantityStatus::kOk) fail(line.number, quantityError(status, token, "rate"));
    if (const std::string range = outOfRange(token, bps, kMinRateBps, kMaxRateBps, formatRate); !range.empty()) {
      fail(line.number, "rate " + range);
    }
    return BitsPerSecond{bps};
  }

  /// A delay such as "0.001ms", "1us" or "500ns", from 1 ns to 1 s.
  Picoseconds delay(const Line& line, const std::string& token) const {
    int64_t ps = 0;
    const QuantityStatus status = parseDuration(token, ps);
    if (status != QuantityStatus::kOk) fail(line.number, quantityError(status, token, "delay"));
    if (const std::string range = outOfRange(token, ps, kMinLinkDelayPs, kMaxLatencyPs, formatDuration);
        !range.empty()) {
      fail(line.number, "delay " + range);
    }
    return Picoseconds{ps};
  }

  /// The error-rate column: must read as a number, and only 0 is supported.
  void errorRate(const Line& line, const std::string& token) const {
    double value = 0.0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size() || !(value >= 0.0 && value <= 1.0)) {
      fail(line.number, "bad error rate '" + token + "' (expected a number from 0 to 1)");
    }
    if (value != 0.0) {
      fail(line.number, "error rate '" + token + "' is not supported (random link loss is not modelled; use 0)");
    }
  }

 private:
  std::string file_;
  std::vector<Line> lines_;
  uint32_t last_line_ = 0;
};

}  // namespace

Topology loadNs3Topology(const std::filesystem::path& path) {
  const Ns3Reader reader(path);
  const auto& lines = reader.lines();
  if (lines.empty()) reader.fail(1, "empty file (expected 'nodes switches links' on the first line)");

  const Line& header = lines[0];
  constexpr std::array<const char*, 3> kHeaderFields{"node count", "switch count", "link count"};
  if (header.tokens.size() < kHeaderFields.size()) {
    reader.fail(header.number, std::string("missing ") + kHeaderFields[header.tokens.size()] + " after '" +
                                   header.tokens.back() + "' (expected 'nodes switches links')");
  }
  if (header.tokens.size() > kHeaderFields.size()) {
    reader.fail(header.number, "unexpected token '" + header.tokens[3] + "' after 'nodes switches links'");
  }
  const uint64_t nodes = reader.count(header, header.tokens[0], kHeaderFields[0]);
  const uint64_t switches = reader.count(header, header.tokens[1], kHeaderFields[1]);
  const uint64_t links = reader.count(header, header.tokens[2], kHeaderFields[2]);
  if (nodes == 0 || nodes > kMaxNodes) {
    reader.fail(header.number, "node count '" + header.tokens[0] + "' must be from 1 to " + std::to_string(kMaxNodes));
  }
  if (switches > nodes) {
    reader.fail(header.number,
                "switch count '" + header.tokens[1] + "' exceeds the node count '" + header.tokens[0] + "'");
  }
  // Every node needs a link and a link line joins two nodes: a count the file's lines cannot
  // connect is refused before the nodes are built (64 million of them took seconds and GBs).
  if (nodes > 2 * lines.size()) {
    reader.fail(header.number, "node count '" + header.tokens[0] + "' needs at least " +
                                   std::to_string((nodes + 1) / 2) + " link lines (every node has a link), but the file has " +
                                   std::to_string(lines.size()) + " lines");
  }
  const std::string announced = " announced on line " + std::to_string(header.number);

  // Switch ids: the next `switches` tokens, possibly spread over several lines.
  std::vector<bool> is_switch(nodes, false);
  uint64_t seen = 0;
  size_t next = 1;
  for (; seen < switches; ++next) {
    if (next == lines.size()) {
      reader.fail(reader.lastLine(), "file ends after " + std::to_string(seen) + " of " + std::to_string(switches) +
                                         " switch ids" + announced);
    }
    const Line& line = lines[next];
    for (const auto& token : line.tokens) {
      if (seen == switches) {
        reader.fail(line.number, "unexpected token '" + token + "' after the " + std::to_string(switches) +
                                     " switch ids" + announced);
      }
      const uint32_t id = reader.nodeId(line, token, "switch id", nodes);
      if (is_switch[id]) reader.fail(line.number, "switch id '" + token + "' is listed twice");
      is_switch[id] = true;
      ++seen;
    }
  }

  if (switches == nodes) {
    reader.fail(header.number, "every node is a switch: no NICs (the hosts are the nodes not listed as switches)");
  }

  Topology topo;
  topo.setName(path.filename().string());
  for (uint64_t n = 0, server = 0; n < nodes; ++n) {
    if (is_switch[n]) {
      topo.addSwitch(0);
    } else {
      topo.addNic(static_cast<uint32_t>(server++));
    }
  }

  constexpr std::array<const char*, 5> kLinkFields{"source node id", "destination node id", "rate", "delay",
                                                   "error rate"};
  uint64_t loaded = 0;
  for (; next < lines.size(); ++next) {
    const Line& line = lines[next];
    const auto& t = line.tokens;
    if (loaded == links) {
      reader.fail(line.number, "unexpected '" + t[0] + "' after the " + std::to_string(links) + " links" + announced);
    }
    if (t.size() < kLinkFields.size()) {
      reader.fail(line.number, std::string("missing ") + kLinkFields[t.size()] + " after '" + t.back() +
                                   "' (expected 'src dst rate delay error_rate')");
    }
    if (t.size() > kLinkFields.size()) {
      reader.fail(line.number, "unexpected token '" + t[5] + "' after 'src dst rate delay error_rate'");
    }
    const uint32_t src = reader.nodeId(line, t[0], kLinkFields[0], nodes);
    const uint32_t dst = reader.nodeId(line, t[1], kLinkFields[1], nodes);
    if (src == dst) reader.fail(line.number, "link from node '" + t[0] + "' to itself");
    if (!is_switch[src] && !is_switch[dst]) {
      reader.fail(line.number, "link between hosts '" + t[0] + "' and '" + t[1] +
                                   "' (nodes not listed as switches): every host attaches to a switch");
    }
    const BitsPerSecond rate = reader.rate(line, t[2]);
    const Picoseconds delay = reader.delay(line, t[3]);
    reader.errorRate(line, t[4]);
    topo.addLink(src, dst, rate, delay);
    ++loaded;
  }
  if (loaded < links) {
    reader.fail(reader.lastLine(),
                "file ends after " + std::to_string(loaded) + " of " + std::to_string(links) + " links" + announced);
  }
  for (const uint32_t nic : topo.nics()) {
    if (topo.ports(nic).empty()) {
      reader.fail(header.number, "node " + std::to_string(nic) +
                                     " is a host (not listed as a switch) with no link: every host attaches to a switch");
    }
  }
  return topo;
}

}  // namespace mv
