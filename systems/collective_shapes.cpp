#include "systems/collective_shapes.hpp"

#include <algorithm>
#include <string>

#include "ecs/units.hpp"

namespace mv::train {

namespace {

bool powerOfTwo(uint32_t n) { return n > 0 && (n & (n - 1)) == 0; }
uint32_t log2Of(uint32_t n) {
  uint32_t l = 0;
  while ((1u << l) < n) ++l;
  return l;
}

/// Collects transfers and their dependencies.
class ShapeBuilder {
 public:
  explicit ShapeBuilder(uint32_t chunks) : chunks_(chunks) {}
  uint32_t chunks() const { return chunks_; }
  /// A transfer of 1/parts of one chunk of the buffer from member src to member dst.
  uint32_t add(uint32_t src, uint32_t dst, uint32_t parts) {
    TransferDef t;
    t.src = src;
    t.dst = dst;
    t.den = parts * chunks_;
    shape_.transfers.push_back(t);
    deps_.emplace_back();
    return static_cast<uint32_t>(shape_.transfers.size() - 1);
  }
  /// `later` starts only after `earlier` arrived.
  void after(uint32_t later, uint32_t earlier) { deps_[earlier].push_back(later); }
  /// Transfer t runs on `channel`, its hop inside a server beside `sharing` streams.
  void setChannel(uint32_t t, uint32_t channel, uint32_t sharing) {
    shape_.transfers[t].channel = static_cast<uint16_t>(channel);
    shape_.transfers[t].sharing = static_cast<uint16_t>(sharing);
  }
  CollectiveShape finish() {
    for (size_t i = 0; i < deps_.size(); ++i) {
      TransferDef& t = shape_.transfers[i];
      t.succ_begin = static_cast<uint32_t>(shape_.succs.size());
      t.succ_count = static_cast<uint32_t>(deps_[i].size());
      for (uint32_t s : deps_[i]) {
        shape_.succs.push_back(s);
        shape_.transfers[s].dep_count += 1;
      }
    }
    return std::move(shape_);
  }

 private:
  uint32_t chunks_;
  CollectiveShape shape_;
  std::vector<std::vector<uint32_t>> deps_;
};

inline constexpr uint32_t kNone = 0xffffffffu;

/**
 * A ring over `ring` (group member ids) for one chunk: in step j ring position i sends
 * 1/parts of the chunk to position i+1, after receiving step j−1 from i−1. `ready_in[i]`
 * (or kNone) is what position i's first send waits for; returns, per position, the last
 * transfer it received.
 */
std::vector<uint32_t> ringPhase(ShapeBuilder& b, const std::vector<uint32_t>& ring, uint32_t steps, uint32_t parts,
                                const std::vector<uint32_t>& ready_in) {
  const auto n = static_cast<uint32_t>(ring.size());
  std::vector<uint32_t> last_in(ready_in);
  for (uint32_t j = 0; j < steps; ++j) {
    std::vector<uint32_t> received(n, kNone);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t t = b.add(ring[i], ring[(i + 1) % n], parts);
      if (last_in[i] != kNone) b.after(t, last_in[i]);
      received[(i + 1) % n] = t;
    }
    last_in = received;
  }
  return last_in;
}

/// The members in the order channel q of a ring visits them: server by server, the even
/// servers' g members from local index q up, the odd ones' from q − 1 down (each server is
/// left on the rail the next is entered on; ringRotation gives g).
std::vector<uint32_t> channelOrder(uint32_t n, uint32_t g, uint32_t q) {
  std::vector<uint32_t> order;
  for (uint32_t server = 0; server < n / g; ++server) {
    uint32_t local = server % 2 == 0 ? q % g : (q + g - 1) % g;
    for (uint32_t j = 0; j < g; ++j) {
      order.push_back(server * g + local);
      local = server % 2 == 0 ? (local + 1) % g : (local + g - 1) % g;
    }
  }
  return order;
}

/// `channels` rings over all n members, each on 1/channels of the buffer (channelOrder).
/// With `window` w > 0 a member's first send of chunk c waits for its last receive of
/// chunk c − w in the same ring (NCCL's loops); with 0 every chunk starts at once.
CollectiveShape ring(CollectiveOp op, uint32_t n, uint32_t chunks, uint32_t per_server, uint32_t channels,
                     uint32_t window) {
  ShapeBuilder b(chunks);
  const uint32_t steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  const uint32_t g = ringRotation(n, per_server, channels);
  // last_in[c][q]: per ring position, the last transfer chunk c's ring q delivered to it.
  std::vector<std::vector<std::vector<uint32_t>>> last_in(chunks);
  for (uint32_t c = 0; c < chunks; ++c) {
    for (uint32_t q = 0; q < channels; ++q) {
      const std::vector<uint32_t> ready =
          window > 0 && c >= window ? last_in[c - window][q] : std::vector<uint32_t>(n, kNone);
      last_in[c].push_back(ringPhase(b, channelOrder(n, g, q), steps, n * channels, ready));
    }
  }
  return b.finish();
}

/// Recursive halving (reduce-scatter: distance n/2, ..., 1; sizes S/2, S/4, ...) and/or
/// doubling (all-gather: distance 1, ..., n/2; sizes S/n, 2S/n, ...).
CollectiveShape halvingDoubling(CollectiveOp op, uint32_t n, uint32_t chunks) {
  const uint32_t l = log2Of(n);
  std::vector<uint32_t> distance;
  std::vector<uint32_t> parts;
  if (op != CollectiveOp::kAllGather) {
    for (uint32_t k = 0; k < l; ++k) {
      distance.push_back(n >> (k + 1));
      parts.push_back(2u << k);
    }
  }
  if (op != CollectiveOp::kReduceScatter) {
    for (uint32_t k = 0; k < l; ++k) {
      distance.push_back(1u << k);
      parts.push_back(n >> k);
    }
  }
  ShapeBuilder b(chunks);
  for (uint32_t c = 0; c < chunks; ++c) {
    std::vector<uint32_t> last_in(n, kNone);
    std::vector<uint32_t> last_out(n, kNone);
    for (size_t j = 0; j < distance.size(); ++j) {
      std::vector<uint32_t> received(n, kNone);
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t t = b.add(i, i ^ distance[j], parts[j]);
        // What a member sends combines everything it received so far: the previous step's
        // receive, and (through its own previous send) all earlier ones.
        if (last_in[i] != kNone) b.after(t, last_in[i]);
        if (last_out[i] != kNone) b.after(t, last_out[i]);
        received[i ^ distance[j]] = t;
        last_out[i] = t;
      }
      last_in = received;
    }
  }
  return b.finish();
}

/// Direct all-to-all: every member sends 1/n of its buffer to every other member at once.
CollectiveShape direct(uint32_t n, uint32_t chunks) {
  ShapeBuilder b(chunks);
  for (uint32_t c = 0; c < chunks; ++c) {
    for (uint32_t j = 1; j < n; ++j) {
      for (uint32_t i = 0; i < n; ++i) b.add(i, (i + j) % n, n);
    }
  }
  return b.finish();
}

/**
 * NCCL's tree all-reduce: a double binary tree between k = n / g servers over chains of
 * their g consecutive members. Channel c (of `channels`) reduces and broadcasts
 * 1/channels of each chunk over tree c mod 2, tree 0 the heap tree over servers 0..k−1 and
 * tree 1 the same over them in reverse order (most inner servers of one are leaves of the
 * other). Server s's chain for channel c starts at its head, local member
 * h = ⌊c / nics⌋ mod g (the one whose NIC the channel leaves by), and runs through the others
 * in order. Up: a chain member sends to the one before it once it received from the one
 * after; a head sends to its parent server's head once it received from its chain and its
 * child servers' heads. Down: the root server's head, once it has everything, sends to its
 * chain and its child servers' heads; every other member forwards what it received. A hop
 * inside a server also waits for the same hop of the chunk before (one NVLink stream per
 * pair, direction and channel) and shares its member's NVLink with the up and down streams
 * of all channels, 2 · channels, once the chunks fill the chains' depth d = g − 1 + ⌈log₂k⌉
 * hops, 2 · channels · chunks / d before (TransferDef::sharing). With g = 1 and two channels this is the
 * double binary tree over the members, each tree on half the buffer.
 */
CollectiveShape ncclTree(uint32_t n, uint32_t g, uint32_t chunks, uint32_t channels, uint32_t nics) {
  const uint32_t k = n / g;
  ShapeBuilder b(chunks);
  const uint32_t sharing = treeSharing(channels, chunks, treeDepth(n, g));
  std::vector<uint32_t> previous;  // the hops inside servers of the chunk before, in order
  for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
    std::vector<uint32_t> inside;
    auto hop = [&](uint32_t src, uint32_t dst, uint32_t channel) {
      const uint32_t t = b.add(src, dst, channels);
      b.setChannel(t, channel, g > 1 ? sharing : 1);
      if (g > 1 && src / g == dst / g) {
        if (!previous.empty()) b.after(t, previous[inside.size()]);
        inside.push_back(t);
      }
      return t;
    };
    for (uint32_t c = 0; c < channels; ++c) {
      const uint32_t tree = c % 2;
      const uint32_t head = c / std::max<uint32_t>(nics, 1) % g;
      auto server = [&](uint32_t pos) { return tree == 0 ? pos : k - 1 - pos; };
      auto member = [&](uint32_t s, uint32_t i) { return s * g + (head + i) % g; };
      // Up: chains, then servers; what the root's head waits for.
      std::vector<uint32_t> chain_in(k, kNone);  // per server: the send its head gets from its chain
      for (uint32_t s = 0; s < k; ++s) {
        uint32_t from_after = kNone;
        for (uint32_t i = g; i-- > 1;) {
          const uint32_t t = hop(member(s, i), member(s, i - 1), c);
          if (from_after != kNone) b.after(t, from_after);
          from_after = t;
        }
        chain_in[s] = from_after;
      }
      std::vector<uint32_t> up(k, kNone);
      for (uint32_t pos = k; pos-- > 1;) {
        up[pos] = hop(member(server(pos), 0), member(server((pos - 1) / 2), 0), c);
        if (chain_in[server(pos)] != kNone) b.after(up[pos], chain_in[server(pos)]);
        for (uint32_t child : {2 * pos + 1, 2 * pos + 2}) {
          if (child < k) b.after(up[pos], up[child]);
        }
      }
      auto afterRoot = [&](uint32_t t) {
        if (chain_in[server(0)] != kNone) b.after(t, chain_in[server(0)]);
        for (uint32_t child : {1u, 2u}) {
          if (child < k) b.after(t, up[child]);
        }
      };
      // Down: servers, then chains.
      std::vector<uint32_t> down(k, kNone);
      for (uint32_t pos = 1; pos < k; ++pos) {
        const uint32_t parent = (pos - 1) / 2;
        down[pos] = hop(member(server(parent), 0), member(server(pos), 0), c);
        if (parent == 0) {
          afterRoot(down[pos]);
        } else {
          b.after(down[pos], down[parent]);
        }
      }
      for (uint32_t pos = 0; pos < k; ++pos) {
        uint32_t from_before = kNone;
        for (uint32_t i = 1; i < g; ++i) {
          const uint32_t t = hop(member(server(pos), i - 1), member(server(pos), i), c);
          if (from_before != kNone) {
            b.after(t, from_before);
          } else if (pos == 0) {
            afterRoot(t);
          } else {
            b.after(t, down[pos]);
          }
          from_before = t;
        }
      }
    }
    previous = std::move(inside);
  }
  return b.finish();
}

/**
 * Hierarchical (members grouped by server, g per server, k servers, member m on server
 * m / g): reduce-scatter inside each server over NVLink, the operation across servers
 * between the members with the same local index (one ring per rail, on 1/g of the buffer),
 * all-gather inside each server. Reduce-scatter skips the last phase, all-gather the first.
 */
CollectiveShape hierarchical(CollectiveOp op, uint32_t n, uint32_t g, uint32_t chunks) {
  const uint32_t k = n / g;
  ShapeBuilder b(chunks);
  for (uint32_t c = 0; c < chunks; ++c) {
    std::vector<uint32_t> ready(n, kNone);
    auto local = [&](uint32_t server) {
      std::vector<uint32_t> v;
      for (uint32_t l = 0; l < g; ++l) v.push_back(server * g + l);
      return v;
    };
    auto rail = [&](uint32_t l) {
      std::vector<uint32_t> v;
      for (uint32_t s = 0; s < k; ++s) v.push_back(s * g + l);
      return v;
    };
    auto phase = [&](auto groups, uint32_t count, uint32_t steps, uint32_t parts) {
      std::vector<uint32_t> next(n, kNone);
      for (uint32_t q = 0; q < count; ++q) {
        const std::vector<uint32_t> ring = groups(q);
        std::vector<uint32_t> in;
        for (uint32_t m : ring) in.push_back(ready[m]);
        const std::vector<uint32_t> out = ringPhase(b, ring, steps, parts, in);
        for (size_t i = 0; i < ring.size(); ++i) next[ring[i]] = out[i];
      }
      ready = next;
    };
    if (op != CollectiveOp::kAllGather) phase(local, k, g - 1, g);
    if (op == CollectiveOp::kAllReduce) phase(rail, g, 2 * (k - 1), g * k);
    if (op == CollectiveOp::kReduceScatter) phase(rail, g, k - 1, g * k);
    if (op == CollectiveOp::kAllGather) phase(rail, g, k - 1, g * k);
    if (op != CollectiveOp::kReduceScatter) phase(local, k, g - 1, g);
  }
  return b.finish();
}

/// True when the hierarchical algorithm really has phases inside and across servers: some
/// servers with g members each, 1 < g < n; otherwise it runs as the ring.
bool splitsByServer(CollectiveAlgorithm algorithm, uint32_t members, uint32_t per_server) {
  return algorithm == CollectiveAlgorithm::kHierarchical && per_server > 1 && per_server < members &&
         members % per_server == 0;
}

}  // namespace

uint32_t ringRotation(uint32_t members, uint32_t per_server, uint32_t channels) {
  return channels > 1 && per_server > 1 && per_server < members && members % per_server == 0 ? per_server : 1;
}

bool algorithmSupports(CollectiveAlgorithm algorithm, CollectiveOp op, uint32_t members, uint32_t per_server) {
  const bool reduce_like =
      op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter;
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return reduce_like;
    case CollectiveAlgorithm::kHalvingDoubling:
      return reduce_like && powerOfTwo(members);
    case CollectiveAlgorithm::kTree:
      return op == CollectiveOp::kAllReduce;
    case CollectiveAlgorithm::kHierarchical:
      return reduce_like && per_server >= 1 && members % per_server == 0;
    case CollectiveAlgorithm::kDirect:
      return op == CollectiveOp::kAllToAll;
    case CollectiveAlgorithm::kAuto:  // resolved per collective before it is built; the ring runs anything else
      return reduce_like;
  }
  return false;
}

CollectiveShape makeShape(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, uint32_t chunks,
                          uint32_t per_server, uint32_t channels, uint32_t nics_per_member, uint32_t window) {
  if (members < 2 || chunks < 1 || channels < 1) {
    throw std::invalid_argument("a collective shape needs two members, one chunk and one channel");
  }
  if (!algorithmSupports(algorithm, op, members, per_server)) {
    throw std::invalid_argument(std::string("the ") + algorithmName(algorithm) + " algorithm cannot run " +
                                collectiveOpName(op) + " over " + std::to_string(members) + " ranks");
  }
  switch (algorithm) {
    case CollectiveAlgorithm::kDirect:
      return direct(members, chunks);
    case CollectiveAlgorithm::kHalvingDoubling:
      return halvingDoubling(op, members, chunks);
    case CollectiveAlgorithm::kTree:
      return ncclTree(members, treeBlock(members, per_server), chunks, channels, nics_per_member);
    case CollectiveAlgorithm::kHierarchical:
      if (splitsByServer(algorithm, members, per_server)) return hierarchical(op, members, per_server, chunks);
      return ring(op, members, chunks, per_server, 1, 0);
    case CollectiveAlgorithm::kRing:
    case CollectiveAlgorithm::kAuto:
      break;
  }
  return ring(op, members, chunks, per_server, channels, window);
}

RingChunking ncclRingChunking(int64_t per_peer, int64_t buffer) {
  const int64_t chunk = std::max<int64_t>(buffer / 2, 1);
  const int64_t loops = std::clamp<int64_t>((per_peer + chunk - 1) / chunk, 1, kMaxRingLoops);
  const int64_t loop_chunk = (per_peer + loops - 1) / loops;
  RingChunking r;
  r.window = loop_chunk > buffer / 128 ? 2 : 1;
  r.chunks = static_cast<uint32_t>(loops) * r.window;
  return r;
}

uint32_t ncclTreeChunks(int64_t share, uint32_t depth, int64_t buffer) {
  const int64_t slot = std::max<int64_t>(buffer / 8, 1);
  int64_t chunk = slot;
  while (share / chunk < int64_t{depth} * 8 && chunk > slot / 4) chunk /= 2;
  return static_cast<uint32_t>(std::clamp<int64_t>((share + chunk - 1) / chunk, 1, 64));
}

uint32_t treeBlock(uint32_t members, uint32_t per_server) {
  return per_server > 1 && per_server < members && members % per_server == 0 ? per_server : 1;
}

uint32_t treeDepth(uint32_t members, uint32_t per_server) {
  const uint32_t g = treeBlock(members, per_server);
  return g - 1 + log2Of(members / g);
}

uint32_t treeSharing(uint32_t channels, uint32_t chunks, uint32_t depth) {
  return std::max(1u, 2 * channels * std::min(chunks, depth) / std::max(depth, 1u));
}

bool generatedRing(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::kRing || algorithm == CollectiveAlgorithm::kHierarchical;
}

std::vector<RingPhaseDef> ringPhases(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members,
                                     uint32_t per_server, uint32_t channels) {
  if (members < 2 || channels < 1 || !generatedRing(algorithm) ||
      !algorithmSupports(algorithm, op, members, per_server)) {
    throw std::invalid_argument(std::string("the ") + algorithmName(algorithm) + " algorithm cannot run " +
                                collectiveOpName(op) + " over " + std::to_string(members) + " ranks as rings");
  }
  const uint32_t n = members;
  std::vector<RingPhaseDef> phases;
  auto add = [&](uint32_t rings, uint32_t size, bool consecutive, uint32_t steps, uint32_t parts) {
    RingPhaseDef p;
    p.rings = rings;
    p.size = size;
    p.ring_stride = consecutive ? size : 1;
    p.pos_stride = consecutive ? 1 : rings;
    p.steps = steps;
    p.parts = parts;
    phases.push_back(p);
  };
  const bool hierarchical = splitsByServer(algorithm, n, per_server);
  if (!hierarchical) {
    const uint32_t rings = algorithm == CollectiveAlgorithm::kRing ? channels : 1;
    add(rings, n, true, op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1, n * rings);
    if (rings > 1) {  // channels: every ring over all members (RingPhaseDef)
      phases.back().ring_stride = 0;
      phases.back().rotate = ringRotation(n, per_server, rings);
    }
  } else {
    // Reduce-scatter inside each server, one ring per rail across the k servers on 1/g of
    // the buffer, all-gather inside each server (the order of `hierarchical` above).
    const uint32_t g = per_server;
    const uint32_t k = n / g;
    if (op != CollectiveOp::kAllGather) add(k, g, true, g - 1, g);
    add(g, k, false, op == CollectiveOp::kAllReduce ? 2 * (k - 1) : k - 1, g * k);
    if (op != CollectiveOp::kReduceScatter) add(k, g, true, g - 1, g);
  }
  uint64_t first = 0;
  for (RingPhaseDef& p : phases) {
    const uint64_t count = uint64_t{p.rings} * p.steps * p.size;
    if (first + count >= (uint64_t{1} << 32)) {
      throw std::length_error(std::string("a ") + algorithmName(algorithm) + " " + collectiveOpName(op) + " over " +
                              std::to_string(n) + " ranks has 2^32 transfers or more per chunk");
    }
    p.first = static_cast<uint32_t>(first);
    p.count = static_cast<uint32_t>(count);
    first += count;
  }
  return phases;
}

namespace {

/// Time `bytes` take at the path's NIC rate, and over its NVLink (0 without one).
int64_t nicPs(const AnalyticalPath& path, int64_t bytes) {
  return serializationTime(Bytes{bytes}, BitsPerSecond{path.nic_rate_bps}).ps;
}
int64_t nvlinkPs(const AnalyticalPath& path, int64_t bytes) {
  return path.nvlink_bps > 0 ? serializationTime(Bytes{bytes}, BitsPerSecond{path.nvlink_bps}).ps : 0;
}

/// The ring over n members in `steps` steps (analyticalTime): the slower of one chunk's
/// chain of hops and the busiest NIC's or NVLink's bytes.
int64_t ringTime(int64_t n, int64_t steps, int64_t bytes, const AnalyticalPath& path) {
  RingPhaseDef p;
  p.rings = std::max<uint32_t>(path.channels, 1);
  p.ring_stride = p.rings > 1 ? 0 : 1;
  p.rotate = ringRotation(static_cast<uint32_t>(n), path.per_server, p.rings);
  const int64_t c = p.rings;
  const int64_t chunks = std::max<uint32_t>(path.chunks, 1);
  const int64_t g = path.per_server;
  const auto hop = static_cast<int64_t>((static_cast<Int128>(bytes) + n * c * chunks - 1) / (n * c * chunks));
  const int64_t sharing = nvlinkSharing(p);
  // One chunk's hops around the ring, each waiting for the one before: with g consecutive
  // members per server one hop in g crosses servers, the others are NVLink hops beside the
  // hops of the channels the member does not exit.
  const int64_t inter = g > 1 ? (steps + g - 1) / g : steps;
  const int64_t chain = inter * (path.step_ps + nicPs(path, hop)) +
                        (steps - inter) * (path.nvlink_step_ps + nvlinkPs(path, hop * sharing));
  // With a window of w chunks (NCCL's loops) a chunk's chain waits for the same slice's
  // chain of the loop before, the loops' w slices a hop apart: ⌈chunks / w⌉ chains and w − 1
  // hops. Without one every chunk starts at once.
  const int64_t window = ringChunksAtOnce(static_cast<uint32_t>(chunks), path.window);
  const int64_t chains = (chunks + window - 1) / window * chain + (path.window > 0 ? (window - 1) * nicPs(path, hop) : 0);
  // Every chunk's bytes through the busiest NIC (a server's exit member of ⌈c/g⌉ channels
  // when they rotate, of all c otherwise, over its NICs) and NVLink, after one hop's latency.
  const int64_t member_exits = p.rotate > 1 ? (c + p.rotate - 1) / p.rotate : c;
  const int64_t nics = std::max<int64_t>(path.nics_per_member, 1);
  const int64_t sent = hop * steps * chunks;
  int64_t busiest = nicPs(path, sent * ((member_exits + nics - 1) / nics));
  if (g > 1) busiest = std::max(busiest, nvlinkPs(path, sent * sharing));
  return std::max(chains, path.step_ps + busiest);
}

/// NCCL's tree all-reduce over n members (analyticalTime, ncclTree): one chunk's hops up
/// the deepest chain and tree and back down, then a further chunk every period of the
/// slowest stream (an NVLink hop, which waits for its predecessor's, or the busiest NIC's
/// sends of one chunk).
int64_t treeTime(int64_t n, int64_t bytes, const AnalyticalPath& path) {
  const auto g = static_cast<int64_t>(treeBlock(static_cast<uint32_t>(n), path.per_server));
  const int64_t k = n / g;
  const int64_t c = std::max<uint32_t>(path.channels, 1);
  const int64_t chunks = std::max<uint32_t>(path.chunks, 1);
  const int64_t nics = std::max<uint32_t>(path.nics_per_member, 1);
  const auto hop = static_cast<int64_t>((static_cast<Int128>(bytes) + c * chunks - 1) / (c * chunks));
  const int64_t sharing =
      g > 1 ? treeSharing(static_cast<uint32_t>(c), static_cast<uint32_t>(chunks),
                          treeDepth(static_cast<uint32_t>(n), path.per_server))
            : 1;
  int64_t levels = 0;  // the heap tree's depth, ⌊log₂k⌋
  while ((int64_t{2} << levels) <= k) ++levels;
  const int64_t nvlink = path.nvlink_step_ps + nvlinkPs(path, hop * sharing);
  const int64_t net = path.step_ps + nicPs(path, hop);
  // A head sends once up and once to each child server per chunk of its channel's tree; a
  // NIC is the head's of ⌈c / (g · nics)⌉ channels.
  const int64_t sends = k >= 4 ? 3 : k - 1;
  const int64_t per_nic = (c + g * nics - 1) / (g * nics);
  const int64_t nic_period = nicPs(path, hop * sends * per_nic);
  const int64_t chain = 2 * (g - 1) * nvlink + 2 * levels * net;
  return chain + (chunks - 1) * std::max(g > 1 ? nvlink : 0, nic_period);
}

}  // namespace

int64_t analyticalTime(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, int64_t bytes,
                       const AnalyticalPath& path) {
  const int64_t n = members;
  const int64_t g = path.per_server;
  if (splitsByServer(algorithm, members, path.per_server)) {
    const int64_t k = n / g;
    const int64_t intra_steps =
        (op != CollectiveOp::kAllGather ? g - 1 : 0) + (op != CollectiveOp::kReduceScatter ? g - 1 : 0);
    const int64_t intra_step =
        path.nvlink_step_ps + serializationTime(Bytes{(bytes + g - 1) / g}, BitsPerSecond{path.nvlink_bps}).ps;
    const int64_t inter_steps = op == CollectiveOp::kAllReduce ? 2 * (k - 1) : k - 1;
    const auto inter_sent = static_cast<int64_t>((static_cast<Int128>(bytes) * inter_steps + g * k - 1) / (g * k));
    return intra_steps * intra_step + inter_steps * path.step_ps +
           serializationTime(Bytes{inter_sent}, BitsPerSecond{path.nic_rate_bps}).ps;
  }
  int64_t steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  // The hierarchical algorithm with g = 1 or g = n is the ring.
  if (algorithm == CollectiveAlgorithm::kRing || algorithm == CollectiveAlgorithm::kHierarchical) {
    return ringTime(n, steps, bytes, path);
  }
  if (algorithm == CollectiveAlgorithm::kTree) return treeTime(n, bytes, path);
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) steps = (op == CollectiveOp::kAllReduce ? 2 : 1) * log2Of(members);
  if (algorithm == CollectiveAlgorithm::kDirect) steps = 1;
  const int64_t factor = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  const auto sent = static_cast<int64_t>((static_cast<Int128>(bytes) * factor + n - 1) / n);
  return steps * path.step_ps + serializationTime(Bytes{sent}, BitsPerSecond{path.nic_rate_bps}).ps;
}

const char* algorithmName(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kHalvingDoubling:
      return "halving_doubling";
    case CollectiveAlgorithm::kDirect:
      return "direct";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
    case CollectiveAlgorithm::kAuto:
      return "auto";
  }
  return "?";
}

}  // namespace mv::train
