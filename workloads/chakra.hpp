/**
 * @file chakra.hpp
 * Chakra execution traces (MLCommons): one rank's work as a DAG of nodes, one file per rank
 * (`<prefix>.<rank>.et`). This header holds a plain in-memory form of a trace, readers and
 * writers for the binary form (length-prefixed protobuf messages, decoded and encoded by hand:
 * no libprotobuf) and for a JSON form, validation, and a topological order. Host-side only.
 * docs/chakra.md describes the schema subset, the JSON layout and every error.
 *
 * Field and enum numbers follow schema/protobuf/et_def.proto of mlcommons/chakra; attribute
 * names follow the Chakra converters and ASTRA-sim's feeder (comm_type, comm_size, ...).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"

namespace mv {

/// `NodeType` of et_def.proto (same numbers).
enum class ChakraNodeType : int32_t {
  kInvalid = 0,
  kMetadata = 1,
  kMemLoad = 2,
  kMemStore = 3,
  kComp = 4,
  kCommSend = 5,
  kCommRecv = 6,
  kCommColl = 7,
  kStorage = 8,
  kBatch = 9,
  kCheckpoint = 10,
};

/// `CollectiveCommType` of et_def.proto (same numbers).
enum class ChakraCollectiveType : int32_t {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};

/// The protobuf enum name of `type` ("COMP_NODE"); empty for a value outside the enum.
std::string_view chakraNodeTypeName(ChakraNodeType type);
/// The protobuf enum name of `type` ("ALL_REDUCE"); empty for a value outside the enum.
std::string_view chakraCollectiveTypeName(ChakraCollectiveType type);

/**
 * Scalar type of an attribute value. Each enumerator equals the field number of the scalar
 * member of AttributeProto's `value` oneof (`int64_val = 9`); the list member is that number
 * plus one (`int64_list = 10`).
 */
enum class ChakraValueKind : uint8_t {
  kNone = 0,  ///< no value set
  kDouble = 3,
  kFloat = 5,
  kInt32 = 7,
  kInt64 = 9,
  kUint32 = 11,
  kUint64 = 13,
  kSint32 = 15,
  kSint64 = 17,
  kFixed32 = 19,
  kFixed64 = 21,
  kSfixed32 = 23,
  kSfixed64 = 25,
  kBool = 27,
  kString = 29,
  kBytes = 31,
};

/**
 * One `AttributeProto`: a name and a value of one kind, either a scalar (`int64_val`) or a
 * list (`int64_list`). The values live in the one vector that fits the kind: `ints` for the
 * signed kinds and bool (0 or 1), `uints` for uint32/uint64/fixed32/fixed64, `reals` for
 * double/float, `strings` for string/bytes. A scalar holds exactly one value.
 */
struct ChakraAttribute {
  std::string name;
  std::string doc_string;
  ChakraValueKind kind = ChakraValueKind::kNone;
  /// The `*_list` member of the oneof (any number of values) rather than the scalar one.
  bool is_list = false;
  std::vector<int64_t> ints;
  std::vector<uint64_t> uints;
  std::vector<double> reals;
  std::vector<std::string> strings;

  /// The value of a scalar of an integer kind that fits in int64_t; nullopt otherwise.
  std::optional<int64_t> integer() const;
  /// The value of a scalar of an integer kind that is not negative; nullopt otherwise.
  std::optional<uint64_t> unsignedInteger() const;
  /// The value of a bool scalar; nullopt otherwise.
  std::optional<bool> boolean() const;
  /// The value of a string scalar; nullopt otherwise.
  std::optional<std::string_view> text() const;

  friend bool operator==(const ChakraAttribute&, const ChakraAttribute&) = default;
};

/// `IOInfo`: the converters' textual description of a node's tensors.
struct ChakraIoInfo {
  std::string values;
  std::string shapes;
  std::string types;

  friend bool operator==(const ChakraIoInfo&, const ChakraIoInfo&) = default;
};

/// Attribute names used by the Chakra converters and read by ASTRA-sim.
namespace chakra_attr {
inline constexpr std::string_view kCommType = "comm_type";        ///< CollectiveCommType (int64_val)
inline constexpr std::string_view kCommSize = "comm_size";        ///< bytes (int64_val or uint64_val)
inline constexpr std::string_view kCommSrc = "comm_src";          ///< receive: sending rank (int32_val)
inline constexpr std::string_view kCommDst = "comm_dst";          ///< send: receiving rank (int32_val)
inline constexpr std::string_view kCommTag = "comm_tag";          ///< send/receive matching tag (int32_val)
inline constexpr std::string_view kPgName = "pg_name";            ///< process group (string_val)
inline constexpr std::string_view kIsCpuOp = "is_cpu_op";         ///< host-side op (bool_val)
inline constexpr std::string_view kNumOps = "num_ops";            ///< compute: operations (int64_val)
inline constexpr std::string_view kTensorSize = "tensor_size";    ///< compute: bytes touched (uint64_val)
inline constexpr std::string_view kInvolvedDim = "involved_dim";  ///< collective: network dims (bool_list)
}  // namespace chakra_attr

/// One `Node` of a trace. Node field 11 (`storage`) is not kept (see docs/chakra.md).
struct ChakraNode {
  uint64_t id = 0;
  std::string name;
  ChakraNodeType type = ChakraNodeType::kInvalid;
  /// Nodes (by id) that must finish before this one starts; both kinds order execution.
  std::vector<uint64_t> ctrl_deps;
  std::vector<uint64_t> data_deps;
  uint64_t start_time_micros = 0;
  uint64_t duration_micros = 0;
  ChakraIoInfo inputs;
  ChakraIoInfo outputs;
  std::vector<ChakraAttribute> attrs;

  /// The last attribute called `name`, or nullptr (ASTRA-sim's feeder also lets the last win).
  const ChakraAttribute* attribute(std::string_view name) const;
  /// Replaces every attribute called `attr.name` by `attr`, or appends it.
  void setAttribute(ChakraAttribute attr);

  /// comm_type, when present and a valid CollectiveCommType.
  std::optional<ChakraCollectiveType> commType() const;
  /// comm_size in bytes, when present and a non-negative integer.
  std::optional<uint64_t> commSize() const;
  /// comm_src, when present and an integer in [0, 2^32).
  std::optional<uint32_t> commSrc() const;
  /// comm_dst, when present and an integer in [0, 2^32).
  std::optional<uint32_t> commDst() const;
  /// comm_tag, when present and an integer in [0, 2^32).
  std::optional<uint32_t> commTag() const;
  /// pg_name, when present and a string.
  std::optional<std::string_view> pgName() const;

  /// Sets comm_type as int64_val (what the converters write and ASTRA-sim reads).
  void setCommType(ChakraCollectiveType type);
  /// Sets comm_size as int64_val (uint64_val above 2^63 - 1).
  void setCommSize(uint64_t bytes);
  /// Sets comm_src as int32_val (uint32_val above 2^31 - 1).
  void setCommSrc(uint32_t rank);
  /// Sets comm_dst as int32_val (uint32_val above 2^31 - 1).
  void setCommDst(uint32_t rank);
  /// Sets comm_tag as int32_val (uint32_val above 2^31 - 1).
  void setCommTag(uint32_t tag);
  /// Sets pg_name as string_val.
  void setPgName(std::string name);

  /// Whether the node is a send, receive or collective.
  bool isComm() const;

  friend bool operator==(const ChakraNode&, const ChakraNode&) = default;
};

/// One rank's trace: the `GlobalMetadata` message and the nodes in file order.
struct ChakraTrace {
  /// Where the trace was read from; prefixes every error message (empty for an in-memory trace).
  std::string source;
  /// GlobalMetadata.version.
  std::string version;
  /// GlobalMetadata.attr (the converters put e.g. "schema" here).
  std::vector<ChakraAttribute> metadata;
  std::vector<ChakraNode> nodes;
};

/**
 * Decodes the binary form: a varint length and a `GlobalMetadata` message, then a varint
 * length and a `Node` message per node. Checks the wire format only (no validateChakraTrace).
 * Throws WorkloadError "<source>: byte <offset>: <problem>" for an empty input, a truncated
 * varint or field, a length past the end of its message or of the file, a known field with the
 * wrong wire type, a malformed key or group, or a node type outside NodeType.
 */
ChakraTrace decodeChakraBinary(std::string_view bytes, std::string_view source);
/// Encodes `trace` in the binary form (proto3: default scalars omitted, repeated numbers packed).
std::string encodeChakraBinary(const ChakraTrace& trace);

/**
 * Decodes the JSON form (layout in docs/chakra.md). Checks the layout only (no
 * validateChakraTrace); throws WorkloadError "<source>: <json path>: <problem>".
 */
ChakraTrace decodeChakraJson(std::string_view text, std::string_view source);
/// Encodes `trace` in the JSON form, indented.
std::string encodeChakraJson(const ChakraTrace& trace);

/**
 * Checks what a simulator relies on, throwing WorkloadError "<source>: node <id>: <problem>"
 * for the first problem: no nodes, duplicate ids, a dependency on a missing node, a
 * dependency cycle (names one node on it), a comm node without comm_size, a collective without
 * a valid comm_type, a send without comm_dst, a receive without comm_src, or an attribute
 * whose values do not match its kind.
 */
void validateChakraTrace(const ChakraTrace& trace);

/**
 * Indices into `trace.nodes` such that every node comes after all its ctrl and data
 * dependencies; among ready nodes the earliest in the file comes first, so a file already in
 * dependency order maps to 0, 1, 2, .... Throws WorkloadError on a duplicate id, a missing
 * dependency or a cycle.
 */
std::vector<size_t> topologicalOrder(const ChakraTrace& trace);

/// Reads and validates one trace file: `.et` binary, `.json` JSON (by extension).
ChakraTrace readChakraFile(const std::filesystem::path& path);
/// Writes `trace` to `path` in the form its extension names (`.et` or `.json`).
void writeChakraFile(const std::filesystem::path& path, const ChakraTrace& trace);

/**
 * Reads and validates the traces of ranks 0 .. ranks-1: `<prefix>.<rank>.et`, or
 * `<prefix>.<rank>.json` when there is no `.et` file. Throws WorkloadError naming the first
 * missing rank file.
 */
std::vector<ChakraTrace> readChakraTraces(const std::string& prefix, uint32_t ranks);

/// readChakraFile of rank `rank`'s file among `ranks`: `<prefix>.<rank>.et`, else `.json`.
ChakraTrace readRankTrace(const std::string& prefix, uint32_t rank, uint32_t ranks);

}  // namespace mv
