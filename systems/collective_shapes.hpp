/**
 * @file collective_shapes.hpp
 * Decomposition of an inter-server collective into transfers between its members (the
 * NCCL algorithms of docs/training.md): ring, recursive halving-doubling, double binary
 * tree, hierarchical (NVLink inside servers, rings across them per rail) and direct, each
 * chunked so consecutive steps pipeline. A shape depends only on (op, algorithm, members,
 * members per server, chunks); instances of one shape share it. Host-side only.
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "analytical/collective_model.hpp"
#include "systems/ring_schedule.hpp"
#include "systems/training_components.hpp"

namespace mv::train {

/// A collective's transfers and their successor lists (indices local to the shape).
struct CollectiveShape {
  std::vector<TransferDef> transfers;
  std::vector<uint32_t> succs;
};

/// Whether `algorithm` can run `op` over `members` ranks, `per_server` on each server
/// (ring: all-reduce, all-gather, reduce-scatter; halving-doubling: the same for
/// power-of-two groups; tree: all-reduce; hierarchical: the ring ops when per_server
/// divides the group; direct: all-to-all).
bool algorithmSupports(CollectiveAlgorithm algorithm, CollectiveOp op, uint32_t members, uint32_t per_server = 1);

/// The transfers of `op` over `members` ranks (`per_server` consecutive members per server)
/// split into `chunks` pipelined chunks; the ring runs `channels` rings, each on 1/channels
/// of the buffer, rotated so that each leaves a server on a different member's NIC
/// (RingPhaseDef); the tree runs `channels` trees over chains inside the servers (treeBlock
/// members each), channel c's chain head the member of NIC c of the `nics_per_member`
/// each member has. The ring's `window` w > 0 releases a member's first send of chunk
/// c + w by its last receive of chunk c (NCCL's loops, ncclRingChunking); 0 starts every
/// chunk at once. Throws std::invalid_argument when the algorithm cannot run the op
/// (algorithmSupports).
CollectiveShape makeShape(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, uint32_t chunks,
                          uint32_t per_server = 1, uint32_t channels = 1, uint32_t nics_per_member = 1,
                          uint32_t window = 0);

/// Members per server the tree chains: `per_server` when the group is k > 1 whole servers
/// of that many, else 1 (a tree over the members).
uint32_t treeBlock(uint32_t members, uint32_t per_server);

/// Hops of the tree's chains and tree each way: g − 1 + ⌈log₂k⌉ (g = treeBlock, k = members / g).
uint32_t treeDepth(uint32_t members, uint32_t per_server);

/// NVLink streams a member of a tree in `channels` channels carries at once (TransferDef::
/// sharing): the up and down streams of every channel, 2 · channels, once `chunks` fill the
/// `depth` hops, 2 · channels · chunks / depth before; at least 1.
uint32_t treeSharing(uint32_t channels, uint32_t chunks, uint32_t depth);

/// NCCL's Simple ring (NCCL 2.19 `src/include/collectives.h`, `src/device/all_reduce.h` and
/// `prims_simple.h`, read through the search tool) moves a member's per-peer share of one
/// channel (`per_peer` bytes: the buffer over members and channels) in loops: one chunk
/// per step of NCCL_BUFFSIZE / NCCL_STEPS × ALLREDUCE_CHUNKSTEPS (4 of 8 slots: buffer / 2),
/// the share spread evenly over its loops (at most kMaxRingLoops: larger shares get larger
/// chunks), each chunk sent in two slices (SLICESTEPS 2 of 4) unless it is at most
/// buffer / 128 (NCCL's slice floor), then in one. A member starts a loop after its last
/// receive of the one before, so `window` slices of a ring are in flight per member.
struct RingChunking {
  uint32_t chunks = 1;  ///< pipelined chunks of the transfers: every loop's slices
  uint32_t window = 1;  ///< slices per loop (CollInfo::window); 0 for other algorithms: all chunks at once
};
inline constexpr uint32_t kMaxRingLoops = 32;
RingChunking ncclRingChunking(int64_t per_peer, int64_t buffer);

/// NCCL's tree chunks (2.19 `enqueue.cc`) of a channel's `share`: chunks of NCCL_BUFFSIZE
/// / NCCL_STEPS (one slot: 512 KiB by default), halved down to a quarter of that while the
/// channel would have fewer than 8 per hop of its `depth`; at most 64.
uint32_t ncclTreeChunks(int64_t share, uint32_t depth, int64_t buffer);

/// Members per server the channels of a ring rotate by (RingPhaseDef::rotate): g when
/// there are several channels and the group is k > 1 servers of g > 1 members each, else 1.
uint32_t ringRotation(uint32_t members, uint32_t per_server, uint32_t channels);

/// Whether the run time generates `algorithm`'s transfers step by step (ring, hierarchical:
/// ringPhases) rather than holding its DAG (makeShape).
bool generatedRing(CollectiveAlgorithm algorithm);

/// The phases of a generated ring collective of `op` over `members` ranks (`per_server`
/// consecutive members per server), with their `first` and `count` filled: the DAG of
/// makeShape for one chunk, numbered the same way. Throws std::invalid_argument when the
/// algorithm cannot run the op, and std::length_error when one chunk would have 2^32
/// transfers or more.
std::vector<RingPhaseDef> ringPhases(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members,
                                     uint32_t per_server = 1, uint32_t channels = 1);

/// What the α-β time of a collective between servers depends on besides its operation.
struct AnalyticalPath {
  int64_t nic_rate_bps = 0;    ///< each rank's NIC
  int64_t step_ps = 0;         ///< per step between servers: the step latency and the path's round trip
  uint32_t per_server = 1;     ///< consecutive members on one server (the hierarchical algorithm's g)
  int64_t nvlink_bps = 0;      ///< per direction: the hierarchical algorithm's steps inside a server
  int64_t nvlink_step_ps = 0;  ///< per step inside a server: the step latency
  uint32_t channels = 1;       ///< the ring algorithm's channels (makeShape)
  uint32_t nics_per_member = 1;  ///< NICs of each member the channels spread over (railOf)
  uint32_t chunks = 1;           ///< pipelined chunks of the ring's buffer (makeShape)
  uint32_t window = 0;           ///< the ring's chunks a member has in flight (NCCL's loops); 0: all
};

/**
 * α-β time of the same algorithm between servers: per sequential step the step latency and
 * the path's round trip, plus the bytes each rank sends at the NIC rate (all-to-all
 * (n−1)/n·S/B; halving-doubling and tree as the ring's bytes). The ring (2(n−1) steps for
 * all-reduce, n−1 for all-gather and reduce-scatter) is the slower of two bounds as its
 * transfers run it: one chunk's chain of hops around the ring (with g consecutive members
 * per server, one hop in g between servers at a step latency, a round trip and the hop's
 * bytes at the NIC rate, the others over NVLink at a step latency and their bytes beside
 * the other channels' hops), and every chunk's bytes through the busiest NIC or NVLink
 * after one step between servers. The
 * hierarchical algorithm over k servers of g members each (1 < g < n) is its three phases
 * as its transfers run them: g − 1 NVLink steps of S/g inside each server, then a ring per
 * rail across the servers on S/g (2(k−1) steps of S/(g·k) for all-reduce, k − 1 otherwise,
 * every rail's NIC busy at once), then g − 1 NVLink steps again (all-reduce: both intra
 * phases; reduce-scatter: the first; all-gather: the last). With g = 1 or g = n it is the ring.
 * The ring in c > 1 channels moves S/c per channel, and its busiest NIC is a server's exit
 * member of ⌈c/g⌉ channels when they rotate (g members per server, k > 1 servers), of all
 * c otherwise, spread over the member's NICs (railOf: the busiest of them exits by ⌈exits/k⌉
 * of them); its busiest NVLink carries the other c − ⌊c/g⌋ channels' hops side by side
 * (nvlinkSharing).
 */
int64_t analyticalTime(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, int64_t bytes,
                       const AnalyticalPath& path);

/// "ring", "tree", "halving_doubling", "direct", "hierarchical".
const char* algorithmName(CollectiveAlgorithm algorithm);

}  // namespace mv::train
