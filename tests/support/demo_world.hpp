/**
 * @file demo_world.hpp
 * A small but complete simulation for engine tests: walkers that hop at exact event
 * times, draw random numbers, spawn children and die. It exercises creation and
 * destruction inside parallel systems, per-experiment configuration, clock jumps and
 * done detection, and it respects the lookahead rule (a child's first event is at least
 * one lookahead after its creation), so its results must not depend on the thread count,
 * on the lookahead, on the backend, or on which other experiments share the batch.
 */
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ecs/graph.hpp"
#include "ecs/rng.hpp"
#include "ecs/world.hpp"

namespace mv::demo {

struct Position {
  int64_t x = 0;
};
struct Timer {
  int64_t next_ps = 0;   ///< time of the next hop
  int64_t period_ps = 0; ///< time between hops
};
struct Life {
  uint32_t draws = 0;    ///< random numbers drawn so far (the stream counter)
  uint32_t children = 0;
  uint32_t depth = 0;
  uint32_t hops = 0;
};
struct Tally {
  int64_t sum = 0;       ///< a row that only accumulates (archetype without Timer)
};
static_assert(sizeof(Position) == 8 && sizeof(Timer) == 16 && sizeof(Life) == 16);

struct Walker : Archetype<Position, Timer, Life> {
  static constexpr const char* kName = "Walker";
};
struct Counter : Archetype<Tally> {
  static constexpr const char* kName = "Counter";
};

/// Per-experiment parameters.
struct Config {
  int64_t horizon_ps = 1'000'000;  ///< no hop at or after this time
  double spawn_probability = 0.2;  ///< per hop
  double death_probability = 0.1;  ///< per hop, for walkers of depth > 0
  int64_t max_step = 10;           ///< hop length is uniform in [-max_step, max_step]
  uint32_t max_depth = 4;
};

using DemoView = WorldView<Config, Walker, Counter>;
using DemoWorld = World<Config, Walker, Counter>;
using Ctx = RowContext<DemoView>;

/// Processes every hop of the window in time order, at its exact time.
struct Hop {
  static constexpr const char* kName = "hop";
  static constexpr const char* kWhy = "move each walker at its exact hop times; spawn and retire walkers";
  MV_HD static void run(const Ctx& ctx, Position& pos, Timer& timer, Life& life) {
    const Config& cfg = ctx.config();
    const RandomStream rng = ctx.random();
    while (timer.next_ps < ctx.window_end.ps && timer.next_ps < cfg.horizon_ps) {
      const int64_t t = timer.next_ps;
      pos.x += static_cast<int64_t>(rng.below(life.draws++, static_cast<uint64_t>(2 * cfg.max_step + 1))) - cfg.max_step;
      life.hops += 1;
      timer.next_ps = t + timer.period_ps;
      if (life.depth < cfg.max_depth && rng.uniform(life.draws++) < cfg.spawn_probability) {
        const uint64_t child_key = mix64(ctx.key ^ mix64(life.children++));
        ctx.table<Walker>().create(ctx.exp, child_key, Position{pos.x},
                                   Timer{t + timer.period_ps, timer.period_ps},
                                   Life{0, 0, life.depth + 1, 0});
        ctx.wakeAt(Picoseconds{t + timer.period_ps});  // whoever schedules an event reports it
      }
      if (life.depth > 0 && rng.uniform(life.draws++) < cfg.death_probability) {
        ctx.table<Walker>().destroyRow(ctx.row);
        return;
      }
    }
    if (timer.next_ps < cfg.horizon_ps) ctx.wakeAt(Picoseconds{timer.next_ps});
  }
};

/// Reads nothing but its own row; shows that a system runs only on matching archetypes.
struct Accumulate {
  static constexpr const char* kName = "accumulate";
  static constexpr const char* kWhy = "count steps on rows that have a Tally";
  MV_HD static void run(const Ctx&, Tally& tally) { tally.sum += 1; }
};

using DemoGraph = Graph<System<Hop>, System<Accumulate>, CommitAll, AdvanceClocks>;

/// One walker as seen from the host, for comparisons.
struct WalkerState {
  uint64_t key;
  int64_t x;
  int64_t next_ps;
  uint32_t draws, children, depth, hops;
  bool operator==(const WalkerState&) const = default;
  bool operator<(const WalkerState& o) const { return key < o.key; }
};

/// Seeds experiment `e` with `walkers` root walkers and sets its clock.
inline void seedExperiment(DemoWorld& world, ExpId e, uint32_t walkers, int64_t lookahead_ps, uint64_t seed) {
  world.clock(e).lookahead_ps = lookahead_ps;
  world.clock(e).seed = seed;
  for (uint32_t i = 0; i < walkers; ++i) {
    const int64_t period = 700 + 37 * static_cast<int64_t>(i % 11);
    world.createHost<Walker>(e, mix64(1000 + i), Position{0}, Timer{static_cast<int64_t>(i) * 13, period},
                             Life{0, 0, 0, 0});
  }
  world.createHost<Counter>(e, 1, Tally{0});
}

/// The walkers of experiment e, in row order.
inline std::vector<WalkerState> walkersOf(DemoWorld& world, ExpId e) {
  std::vector<WalkerState> out;
  auto& t = world.table<Walker>();
  for (int64_t r = t.expBegin(e); r < t.expEnd(e); ++r) {
    const Life& l = t.get<Life>(r);
    out.push_back(WalkerState{t.key[r], t.get<Position>(r).x, t.get<Timer>(r).next_ps, l.draws, l.children, l.depth,
                              l.hops});
  }
  return out;
}

}  // namespace mv::demo
