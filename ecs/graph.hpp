/**
 * @file graph.hpp
 * The system execution graph: a fixed list of nodes with explicit dependencies, run once
 * per step. Nodes are grouped into levels; nodes of one level touch disjoint state and
 * run without a barrier between them, a barrier separates levels and every phase of an
 * engine node. `runSteps` is the step loop both backends execute (the megakernel body).
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ecs/engine.hpp"
#include "ecs/macros.hpp"
#include "ecs/system.hpp"
#include "ecs/type_list.hpp"

namespace mv {

namespace detail {
template <class N>
struct NodeKey {
  using type = N;
};
template <class S>
struct NodeKey<System<S>> {
  using type = S;
};
}  // namespace detail

/// One node's description, for printing.
struct NodeInfo {
  std::string name;
  std::string why;
  bool engine = false;
  int level = 0;
  bool barrier_after = false;
  std::vector<std::string> after;
};

/// Formats a graph as text (one line per node) or as Graphviz DOT.
std::string formatGraph(const std::vector<NodeInfo>& nodes);
std::string formatGraphDot(const std::vector<NodeInfo>& nodes);

/**
 * A system execution graph. `Nodes` are `System<S>` wrappers and engine nodes, listed in
 * an order that respects every node's `After` list; the last node must be AdvanceClocks,
 * and CommitAll, when the graph has it, the one before.
 */
template <class... Nodes>
struct Graph {
  using NodeList = TypeList<Nodes...>;
  using NodeTuple = std::tuple<Nodes...>;
  using Keys = TypeList<typename detail::NodeKey<Nodes>::type...>;
  static constexpr std::size_t kSize = sizeof...(Nodes);
  static_assert(kSize > 0, "a graph has nodes");
  static_assert(AllDistinct<Keys>::value, "a node appears once in a graph");

 private:
  template <class Deps, std::size_t I>
  struct DepsBefore;
  template <class... Ds, std::size_t I>
  struct DepsBefore<TypeList<Ds...>, I> : std::bool_constant<((kIndexOf<Ds, Keys> < I) && ...)> {};

  template <std::size_t... Is>
  static constexpr bool depsOrdered(std::index_sequence<Is...>) {
    return (DepsBefore<typename Nodes::After, Is>::value && ...);
  }

  template <class Deps>
  static constexpr int depLevel(const std::array<int, kSize>& levels, int floor) {
    int l = floor;
    forEachType(Deps{}, [&](auto t) {
      using D = typename decltype(t)::type;
      const int dep = levels[kIndexOf<D, Keys>] + 1;
      l = dep > l ? dep : l;
    });
    return l;
  }

  static constexpr std::array<int, kSize> computeLevels() {
    std::array<int, kSize> levels{};
    std::size_t i = 0;
    int floor = 0;
    (
        [&] {
          int l = i > 0 ? levels[i - 1] : 0;
          if constexpr (Nodes::kEngine) {
            l = i > 0 ? levels[i - 1] + 1 : 0;
            floor = l + 1;
          } else {
            l = depLevel<typename Nodes::After>(levels, l > floor ? l : floor);
          }
          levels[i++] = l;
        }(),
        ...);
    return levels;
  }

 public:
  static_assert(depsOrdered(std::index_sequence_for<Nodes...>{}),
                "every dependency of a node is a node listed before it");
  static_assert(std::is_same_v<typename detail::NodeKey<std::tuple_element_t<kSize - 1, std::tuple<Nodes...>>>::type,
                               AdvanceClocks>,
                "the last node of a graph is AdvanceClocks");
  static_assert(!kContains<CommitAll, Keys> || kIndexOf<CommitAll, Keys> + 2 == kSize,
                "CommitAll comes right before AdvanceClocks, whose phase finishes the commits");

  /// Level of each node: a barrier separates consecutive nodes of different levels.
  static constexpr std::array<int, kSize> kLevels = computeLevels();

  /// Whether a barrier follows node I (always after engine nodes and the last node).
  template <std::size_t I>
  static constexpr bool barrierAfter() {
    if constexpr (I + 1 >= kSize) {
      return true;
    } else {
      return kLevels[I] != kLevels[I + 1] ||
             std::tuple_element_t<I, NodeTuple>::kEngine ||
             std::tuple_element_t<I + 1, NodeTuple>::kEngine;
    }
  }

  /// Host description of every node, in order.
  static std::vector<NodeInfo> describe() { return describeNodes(std::index_sequence_for<Nodes...>{}); }

 private:
  template <std::size_t... Is>
  static std::vector<NodeInfo> describeNodes(std::index_sequence<Is...>) {
    std::vector<NodeInfo> out;
    (
        [&] {
          using N = std::tuple_element_t<Is, NodeTuple>;
          NodeInfo n{N::kName, N::kWhy, N::kEngine, kLevels[Is], barrierAfter<Is>(), {}};
          forEachType(typename N::After{}, [&](auto t) { n.after.push_back(decltype(t)::type::kName); });
          out.push_back(std::move(n));
        }(),
        ...);
    return out;
  }
};

/// Runs node I of graph G for one step: all its phases, with the barriers it needs.
MV_EXEC_CHECK_DISABLE
template <class G, std::size_t I, class Policy, class WV>
MV_HD MV_INLINE void runNode(const Policy& policy, WV& world) {
  using Node = std::tuple_element_t<I, typename G::NodeTuple>;
  const int phases = Node::phaseCount(world);
  for (int p = 0; p < phases; ++p) {
    Node::runPhase(policy, world, p);
    if (p + 1 < phases || G::template barrierAfter<I>()) {
      // A policy may take the barrier's place in the graph (the emulated device's profile).
      if constexpr (requires { policy.barrier(Node::kName, p); }) {
        policy.barrier(Node::kName, p);
      } else {
        policy.barrier();
      }
    }
  }
}

namespace detail {
MV_EXEC_CHECK_DISABLE
template <class G, class Policy, class WV, std::size_t... Is>
MV_HD MV_INLINE void runStepImpl(const Policy& policy, WV& world, std::index_sequence<Is...>) {
  (runNode<G, Is>(policy, world), ...);
}
}  // namespace detail

/// Runs every node of graph G once: one simulation step of every running experiment.
MV_EXEC_CHECK_DISABLE
template <class G, class Policy, class WV>
MV_HD void runStep(const Policy& policy, WV& world) {
  detail::runStepImpl<G>(policy, world, std::make_index_sequence<G::kSize>{});
}

/**
 * Runs up to `max_steps` steps and returns how many ran. Every thread of the policy calls
 * this; all of them leave together, after the step in which every experiment finished or
 * an error was raised.
 */
MV_EXEC_CHECK_DISABLE
template <class G, class Policy, class WV>
MV_HD int64_t runSteps(const Policy& policy, WV& world, int64_t max_steps) {
  int64_t k = 0;
  while (k < max_steps) {
    runStep<G>(policy, world);
    ++k;
    if (world.stop[(world.steps_run - 1) & 1] != 0u) break;
  }
  return k;
}

/// Prepares a world for a run: clears the per-parity done-detection counters.
template <class WV>
void prepareRun(WV& world) {
  world.active[world.steps_run & 1] = 0;
  world.stop[0] = world.stop[1] = 0;
}

}  // namespace mv
