#include "systems/collective_shapes.hpp"

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

/// Collects transfers indexed by (step, member, chunk) and their dependencies.
class ShapeBuilder {
 public:
  ShapeBuilder(uint32_t steps, uint32_t members, uint32_t chunks)
      : members_(members), chunks_(chunks), deps_(size_t{steps} * members * chunks) {
    shape_.transfers.resize(deps_.size());
  }
  uint32_t index(uint32_t step, uint32_t member, uint32_t chunk) const {
    return (step * members_ + member) * chunks_ + chunk;
  }
  void set(uint32_t step, uint32_t src, uint32_t dst, uint32_t chunk, uint32_t num, uint32_t den) {
    TransferDef& t = shape_.transfers[index(step, src, chunk)];
    t.src = src;
    t.dst = dst;
    t.num = num;
    t.den = den * chunks_;
  }
  void dependsOn(uint32_t step, uint32_t member, uint32_t chunk, uint32_t on_step, uint32_t on_member) {
    deps_[index(on_step, on_member, chunk)].push_back(index(step, member, chunk));
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
  uint32_t members_;
  uint32_t chunks_;
  CollectiveShape shape_;
  std::vector<std::vector<uint32_t>> deps_;
};

/// Ring: in step j member i sends 1/n of the buffer to i+1, after receiving step j−1 from i−1.
CollectiveShape ring(uint32_t n, uint32_t chunks, uint32_t steps) {
  ShapeBuilder b(steps, n, chunks);
  for (uint32_t j = 0; j < steps; ++j) {
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t c = 0; c < chunks; ++c) {
        b.set(j, i, (i + 1) % n, c, 1, n);
        if (j > 0) b.dependsOn(j, i, c, j - 1, (i + n - 1) % n);
      }
    }
  }
  return b.finish();
}

/// Recursive halving (reduce-scatter: distance n/2, n/4, ..., 1; sizes S/2, S/4, ...) and/or
/// doubling (all-gather: distance 1, 2, ..., n/2; sizes S/n, 2S/n, ...). Each step's send
/// waits for the previous step's receive from the previous partner.
CollectiveShape halvingDoubling(uint32_t n, uint32_t chunks, bool halving, bool doubling) {
  const uint32_t l = log2Of(n);
  const uint32_t steps = (halving ? l : 0) + (doubling ? l : 0);
  ShapeBuilder b(steps, n, chunks);
  std::vector<uint32_t> distance;
  std::vector<uint32_t> parts;  // the step moves 1/parts of the buffer
  if (halving) {
    for (uint32_t k = 0; k < l; ++k) {
      distance.push_back(n >> (k + 1));
      parts.push_back(2u << k);
    }
  }
  if (doubling) {
    for (uint32_t k = 0; k < l; ++k) {
      distance.push_back(1u << k);
      parts.push_back(n >> k);
    }
  }
  for (uint32_t j = 0; j < steps; ++j) {
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t c = 0; c < chunks; ++c) {
        b.set(j, i, i ^ distance[j], c, 1, parts[j]);
        if (j > 0) b.dependsOn(j, i, c, j - 1, i ^ distance[j - 1]);
      }
    }
  }
  return b.finish();
}

/// Direct all-to-all: every member sends 1/n of its buffer to every other member at once.
CollectiveShape direct(uint32_t n, uint32_t chunks) {
  ShapeBuilder b(n - 1, n, chunks);
  for (uint32_t j = 0; j + 1 < n; ++j) {
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t c = 0; c < chunks; ++c) b.set(j, i, (i + j + 1) % n, c, 1, n);
    }
  }
  return b.finish();
}

}  // namespace

bool algorithmSupports(CollectiveAlgorithm algorithm, CollectiveOp op, uint32_t members) {
  const bool reduce_like =
      op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter;
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return reduce_like;
    case CollectiveAlgorithm::kHalvingDoubling:
      return reduce_like && powerOfTwo(members);
    case CollectiveAlgorithm::kDirect:
      return op == CollectiveOp::kAllToAll;
    default:
      return false;
  }
}

CollectiveShape makeShape(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, uint32_t chunks) {
  if (members < 2 || chunks < 1) throw std::invalid_argument("a collective shape needs two members and one chunk");
  if (!algorithmSupports(algorithm, op, members)) {
    throw std::invalid_argument(std::string("the ") + algorithmName(algorithm) + " algorithm cannot run " +
                                collectiveOpName(op) + " over " + std::to_string(members) + " ranks");
  }
  if (algorithm == CollectiveAlgorithm::kDirect) return direct(members, chunks);
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) {
    return halvingDoubling(members, chunks, op != CollectiveOp::kAllGather, op != CollectiveOp::kReduceScatter);
  }
  const uint32_t steps = op == CollectiveOp::kAllReduce ? 2 * (members - 1) : members - 1;
  return ring(members, chunks, steps);
}

int64_t analyticalTime(CollectiveOp op, CollectiveAlgorithm algorithm, uint32_t members, int64_t bytes,
                       int64_t nic_rate_bps, int64_t step_ps) {
  const int64_t n = members;
  int64_t steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) steps = (op == CollectiveOp::kAllReduce ? 2 : 1) * log2Of(members);
  if (algorithm == CollectiveAlgorithm::kDirect) steps = 1;
  const int64_t factor = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  const auto sent = static_cast<int64_t>((static_cast<Int128>(bytes) * factor + n - 1) / n);
  return steps * step_ps + serializationTime(Bytes{sent}, BitsPerSecond{nic_rate_bps}).ps;
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
  }
  return "?";
}

}  // namespace mv::train
