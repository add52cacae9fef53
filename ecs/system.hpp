/**
 * @file system.hpp
 * Systems: free functions over one row's components, and the context they receive.
 *
 * A system is a struct with a name, a one-line reason, its dependencies and a static
 * `run(const Ctx&, const In&..., Out&...)`. The components it touches are deduced from
 * `run`'s parameters (const = read); the system then runs on every row of every archetype
 * that has all of them (the query), across all experiments still running.
 */
#pragma once

#include <cstdint>
#include <type_traits>

#include "ecs/entity.hpp"
#include "ecs/macros.hpp"
#include "ecs/policy.hpp"
#include "ecs/rng.hpp"
#include "ecs/type_list.hpp"
#include "ecs/units.hpp"
#include "ecs/world.hpp"

namespace mv {

/// What a system sees of its row and its experiment.
template <class WorldViewT>
struct RowContext {
  WorldViewT* world;
  ExpId exp;
  int64_t row;
  Entity self;            ///< the row's handle (none for a StaticArchetype's row)
  uint64_t key;            ///< the row's creation key, unique within its experiment
  Picoseconds now;         ///< start of this step's window
  Picoseconds window_end;  ///< events before this time are processed this step

  MV_HD const typename WorldViewT::ConfigType& config() const { return world->configs[exp]; }
  /// The experiment will not skip past `t` (report every pending event each step).
  MV_HD void wakeAt(Picoseconds t) const { world->wakeAt(exp, t); }
  /// This row's random stream, keyed by (experiment seed, stable experiment id, the row's
  /// creation key); counters are the caller's (e.g. a draw count kept in a component).
  MV_HD RandomStream random() const {
    const ExperimentClock& c = world->clocks[exp];
    return RandomStream{c.seed, c.stable_id, key};
  }
  template <class A>
  MV_HD TableView<A>& table() const {
    return world->template table<A>();
  }
};

namespace detail {

template <class F>
struct SystemSignature;
template <class Ctx, class... Params>
struct SystemSignature<void (*)(const Ctx&, Params...)> {
  using Context = Ctx;
  using Components = TypeList<std::remove_cvref_t<Params>...>;
  static_assert((std::is_reference_v<Params> && ...),
                "system parameters are component references: const C& to read, C& to write");
};

template <class S>
concept HasAfter = requires { typename S::After; };
template <class S>
struct AfterOf {
  using type = TypeList<>;
};
template <class S>
  requires HasAfter<S>
struct AfterOf<S> {
  using type = typename S::After;
};

}  // namespace detail

/// Components a system reads or writes, deduced from its `run`.
template <class S>
using SystemComponents = typename detail::SystemSignature<decltype(&S::run)>::Components;

/// True for a team system: `static constexpr bool kTeam = true` and, beside `run` (which
/// names its components), `template <class Team> runTeam(const Ctx&, const Team&, ...)`
/// that the lanes of a team (a warp on a GPU) run together on each row (parallelForTeams).
template <class S>
concept TeamSystem = requires {
  requires S::kTeam;
};
template <class S>
inline constexpr bool kTeamSystem = TeamSystem<S>;

/// True when archetype A has every component system S touches (the system's query).
template <class S, class A>
inline constexpr bool kSystemMatches = kContainsAll<SystemComponents<S>, typename A::Components>;

/// Graph node that runs system S over every matching row of every running experiment (of
/// the rows of experiments [run_first, run_end), which hold all running ones).
template <class S>
struct System {
  static constexpr const char* kName = S::kName;
  static constexpr const char* kWhy = S::kWhy;
  static constexpr bool kEngine = false;
  using After = typename detail::AfterOf<S>::type;
  using Inner = S;

  template <class WV>
  MV_HD static int phaseCount(const WV&) {
    return 1;
  }
  template <class WV>
  MV_HD static int maxPhaseCount(const WV&) {
    return 1;
  }

  MV_EXEC_CHECK_DISABLE
  template <class Policy, class WV>
  MV_HD static void runPhase(const Policy& policy, WV& world, int) {
    runTables(policy, world, typename WV::Archetypes{});
  }

 private:
  MV_EXEC_CHECK_DISABLE
  template <class Policy, class WV, class... As>
  MV_HD static void runTables(const Policy& policy, WV& world, TypeList<As...>) {
    (runTable<As>(policy, world), ...);
  }

  MV_EXEC_CHECK_DISABLE
  template <class A, class Policy, class WV>
  MV_HD static void runTable(const Policy& policy, WV& world) {
    if constexpr (kSystemMatches<S, A>) {
      static_assert(!PoolArchetype<A>, "a pool's records keep no experiment ids: no system may visit them row by row");
      TableView<A>& t = world.template table<A>();
      const int64_t first = world.run_first < world.num_exps ? t.expBegin(world.run_first) : t.rows;
      const int64_t end = world.run_end < world.num_exps ? t.expBegin(world.run_end) : t.rows;
      const int64_t n = end > first ? end - first : 0;
      if constexpr (kTeamSystem<S>) {
        parallelForTeams(policy, n, [&](int64_t i, const auto& team) {
          visitRow(world, t, first + i,
                   [&](const RowContext<WV>& ctx) { callRunTeam(ctx, team, t, ctx.row, SystemComponents<S>{}); });
        });
      } else {
        parallelForUnits(policy, n, [&](int64_t i) {
          visitRow(world, t, first + i,
                   [&](const RowContext<WV>& ctx) { callRun(ctx, t, ctx.row, SystemComponents<S>{}); });
        });
      }
    }
  }

  /// Calls f with row `row`'s context, unless the row is a gap or its experiment is done.
  MV_EXEC_CHECK_DISABLE
  template <class A, class WV, class F>
  MV_HD MV_INLINE static void visitRow(WV& world, TableView<A>& t, int64_t row, F&& f) {
    const ExpId e = t.exp[row];
    if (e == kGapRow) return;
    const ExperimentClock& c = world.clocks[e];
    if (c.done()) return;
    // A StaticArchetype's rows have no handle, and their key is their index within the
    // experiment (World::appendStatic): static tables never move rows.
    Entity self = Entity::none();
    uint64_t key = static_cast<uint64_t>(row - t.expBegin(e));
    if constexpr (!StaticArchetype<A>) {
      self = t.entity[row];
      key = t.key[row];
    }
    f(RowContext<WV>{&world, e, row, self, key, Picoseconds{c.now_ps}, Picoseconds{c.now_ps + c.lookahead_ps}});
  }

  template <class Ctx, class A, class... Cs>
  MV_HD static void callRun(const Ctx& ctx, TableView<A>& t, int64_t row, TypeList<Cs...>) {
    S::run(ctx, t.template get<Cs>(row)...);
  }
  template <class Ctx, class Team, class A, class... Cs>
  MV_HD static void callRunTeam(const Ctx& ctx, const Team& team, TableView<A>& t, int64_t row, TypeList<Cs...>) {
    S::runTeam(ctx, team, t.template get<Cs>(row)...);
  }
};

}  // namespace mv
