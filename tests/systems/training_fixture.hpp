/**
 * @file training_fixture.hpp
 * Small training experiments for tests: a GPT-style model of a few layers on servers
 * joined by one switch.
 */
#pragma once

#include <vector>

#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"

namespace mv::test {

/// A GPT-style model small enough to simulate in milliseconds.
inline ModelSpec tinyGpt(uint32_t layers, uint32_t hidden = 1024, uint32_t vocab = 1024) {
  ModelSpec m;
  m.name = "tiny-gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4 * hidden;
  m.vocab = vocab;
  m.seq = 512;
  return m;
}

/// tp·pp·dp GPUs, `per_server` per server with one NIC each, a star between servers, the
/// ring for all-reduces.
inline TrainingExperiment tinyExperiment(uint32_t tp, uint32_t pp, uint32_t dp, uint32_t micro_batches,
                                         uint32_t per_server) {
  TrainingExperiment x;
  x.name = "tiny";
  x.id = 7;
  x.model = tinyGpt(4 * pp);
  x.parallelism.tp = tp;
  x.parallelism.pp = pp;
  x.parallelism.dp = dp;
  x.training.micro_batch = 1;
  x.training.global_batch = micro_batches * dp;
  x.cluster.gpus = tp * pp * dp;
  x.cluster.gpus_per_server = per_server;
  x.cluster.nics_per_server = 1;
  x.topology = makeStar(x.cluster.gpus / per_server);
  x.network.cc = net::CcKind::kDctcp;
  // The ring, not NCCL's choice (the default): these tests check what the ring does.
  x.collectives.all_reduce = CollectiveAlgorithm::kRing;
  return x;
}

/// Simulates `x` alone with `threads` workers (and the given lookahead step; 0: the default).
inline TrainingResult runOne(const TrainingExperiment& x, int threads = 2, Picoseconds lookahead = {}) {
  SimulationOptions o;
  o.threads = threads;
  o.lookahead = lookahead;
  const std::vector<TrainingExperiment> one{x};
  return simulateTraining(one, o).front();
}

}  // namespace mv::test
