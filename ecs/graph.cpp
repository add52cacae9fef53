/**
 * @file graph.cpp
 * Printable forms of a system execution graph (`--dump-graph`).
 */
#include "ecs/graph.hpp"

#include <sstream>

namespace mv {

std::string formatGraph(const std::vector<NodeInfo>& nodes) {
  std::ostringstream out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& n = nodes[i];
    out << "level " << n.level << "  " << n.name << (n.engine ? "  [engine]" : "  [system]");
    if (!n.after.empty()) {
      out << "  after:";
      for (const std::string& d : n.after) out << ' ' << d;
    }
    out << "\n    why: " << n.why << '\n';
    if (n.barrier_after) out << "  -- barrier --\n";
  }
  return out.str();
}

std::string formatGraphDot(const std::vector<NodeInfo>& nodes) {
  std::ostringstream out;
  out << "digraph multiverse_step {\n  rankdir=TB;\n";
  for (const NodeInfo& n : nodes) {
    out << "  \"" << n.name << "\" [shape=" << (n.engine ? "box" : "ellipse") << ", label=\"" << n.name
        << "\\nlevel " << n.level << "\"];\n";
  }
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    if (nodes[i].level != nodes[i - 1].level) {
      out << "  \"" << nodes[i - 1].name << "\" -> \"" << nodes[i].name << "\" [style=dotted];\n";
    }
  }
  for (const NodeInfo& n : nodes) {
    for (const std::string& d : n.after) out << "  \"" << d << "\" -> \"" << n.name << "\";\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace mv
