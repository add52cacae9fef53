/**
 * @file chakra.cpp
 * Chakra execution traces: attribute and node helpers, the protobuf wire format (decoded and
 * encoded by hand), the JSON form, validation, topological order and file I/O.
 */
#include "workloads/chakra.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "ecs/input_file.hpp"
#include "ecs/units.hpp"

namespace mv {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 11> kNodeTypeNames = {
    "INVALID_NODE",   "METADATA_NODE",  "MEM_LOAD_NODE", "MEM_STORE_NODE", "COMP_NODE",      "COMM_SEND_NODE",
    "COMM_RECV_NODE", "COMM_COLL_NODE", "STORAGE_NODE",  "BATCH_NODE",     "CHECKPOINT_NODE"};

constexpr std::array<std::string_view, 10> kCollectiveTypeNames = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

/// Kind names in oneof order: kind k is entry (k - 3) / 2; the fields are "<name>_val" and "<name>_list".
constexpr std::array<std::string_view, 15> kValueKindNames = {"double",   "float",    "int32",  "int64",   "uint32",
                                                              "uint64",   "sint32",   "sint64", "fixed32", "fixed64",
                                                              "sfixed32", "sfixed64", "bool",   "string",  "bytes"};

constexpr uint32_t kFirstValueField = 3;
constexpr uint32_t kLastValueField = 32;

// ---------------------------------------------------------------------------------------
// Value kinds
// ---------------------------------------------------------------------------------------

/// Which vector of ChakraAttribute holds a kind's values.
enum class Storage : uint8_t { kNone, kInts, kUints, kReals, kStrings };

bool isValueKind(ChakraValueKind kind) {
  const auto k = static_cast<uint32_t>(kind);
  return k % 2 == 1 && k >= kFirstValueField && k < kLastValueField;
}

std::string_view valueKindName(ChakraValueKind kind) {
  return kValueKindNames[(static_cast<uint32_t>(kind) - kFirstValueField) / 2];
}

Storage storageOf(ChakraValueKind kind) {
  switch (kind) {
    case ChakraValueKind::kNone:
      return Storage::kNone;
    case ChakraValueKind::kDouble:
    case ChakraValueKind::kFloat:
      return Storage::kReals;
    case ChakraValueKind::kUint32:
    case ChakraValueKind::kUint64:
    case ChakraValueKind::kFixed32:
    case ChakraValueKind::kFixed64:
      return Storage::kUints;
    case ChakraValueKind::kString:
    case ChakraValueKind::kBytes:
      return Storage::kStrings;
    default:
      return Storage::kInts;
  }
}

/// Kinds whose values must fit in 32 bits.
bool is32Bit(ChakraValueKind kind) {
  return kind == ChakraValueKind::kInt32 || kind == ChakraValueKind::kSint32 || kind == ChakraValueKind::kSfixed32 ||
         kind == ChakraValueKind::kUint32 || kind == ChakraValueKind::kFixed32;
}

size_t valueCount(const ChakraAttribute& attr) {
  return attr.ints.size() + attr.uints.size() + attr.reals.size() + attr.strings.size();
}

size_t storedCount(const ChakraAttribute& attr, Storage storage) {
  switch (storage) {
    case Storage::kInts:
      return attr.ints.size();
    case Storage::kUints:
      return attr.uints.size();
    case Storage::kReals:
      return attr.reals.size();
    case Storage::kStrings:
      return attr.strings.size();
    case Storage::kNone:
      break;
  }
  return 0;
}

void clearValue(ChakraAttribute& attr) {
  attr.ints.clear();
  attr.uints.clear();
  attr.reals.clear();
  attr.strings.clear();
}

/// Why `attr`'s value does not match its kind, or nullopt when it does.
std::optional<std::string> attributeProblem(const ChakraAttribute& attr) {
  if (attr.kind == ChakraValueKind::kNone) {
    if (attr.is_list || valueCount(attr) != 0) return "values without a kind";
    return std::nullopt;
  }
  if (!isValueKind(attr.kind)) return "unknown value kind " + std::to_string(static_cast<int>(attr.kind));
  const Storage storage = storageOf(attr.kind);
  if (storedCount(attr, storage) != valueCount(attr)) {
    return "values stored in a vector that does not belong to kind " + std::string(valueKindName(attr.kind));
  }
  if (!attr.is_list && valueCount(attr) != 1) return "a scalar must hold exactly one value";
  for (const int64_t v : attr.ints) {
    if (attr.kind == ChakraValueKind::kBool && v != 0 && v != 1) return "bool value " + std::to_string(v);
    if (is32Bit(attr.kind) && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
      return std::string(valueKindName(attr.kind)) + " value " + std::to_string(v) + " out of range";
    }
  }
  for (const uint64_t v : attr.uints) {
    if (is32Bit(attr.kind) && v > std::numeric_limits<uint32_t>::max()) {
      return std::string(valueKindName(attr.kind)) + " value " + std::to_string(v) + " out of range";
    }
  }
  return std::nullopt;
}

ChakraAttribute signedAttribute(std::string_view name, ChakraValueKind kind, int64_t value) {
  ChakraAttribute attr;
  attr.name = name;
  attr.kind = kind;
  attr.ints = {value};
  return attr;
}

ChakraAttribute unsignedAttribute(std::string_view name, ChakraValueKind kind, uint64_t value) {
  ChakraAttribute attr;
  attr.name = name;
  attr.kind = kind;
  attr.uints = {value};
  return attr;
}

/// A rank or tag: int32_val as ASTRA-sim reads it, uint32_val when it does not fit.
ChakraAttribute rankAttribute(std::string_view name, uint32_t value) {
  if (value <= static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
    return signedAttribute(name, ChakraValueKind::kInt32, value);
  }
  return unsignedAttribute(name, ChakraValueKind::kUint32, value);
}

std::optional<uint32_t> uint32Attribute(const ChakraNode& node, std::string_view name) {
  const ChakraAttribute* attr = node.attribute(name);
  if (attr == nullptr) return std::nullopt;
  const auto v = attr->unsignedInteger();
  if (!v || *v > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

}  // namespace

std::string_view chakraNodeTypeName(ChakraNodeType type) {
  const auto t = static_cast<size_t>(type);
  return t < kNodeTypeNames.size() ? kNodeTypeNames[t] : std::string_view();
}

std::string_view chakraCollectiveTypeName(ChakraCollectiveType type) {
  const auto t = static_cast<size_t>(type);
  return t < kCollectiveTypeNames.size() ? kCollectiveTypeNames[t] : std::string_view();
}

// ---------------------------------------------------------------------------------------
// Attributes and nodes
// ---------------------------------------------------------------------------------------

std::optional<int64_t> ChakraAttribute::integer() const {
  if (is_list || kind == ChakraValueKind::kBool) return std::nullopt;
  const Storage storage = storageOf(kind);
  if (storage == Storage::kInts && ints.size() == 1) return ints[0];
  if (storage == Storage::kUints && uints.size() == 1 &&
      uints[0] <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(uints[0]);
  }
  return std::nullopt;
}

std::optional<uint64_t> ChakraAttribute::unsignedInteger() const {
  if (is_list || kind == ChakraValueKind::kBool) return std::nullopt;
  const Storage storage = storageOf(kind);
  if (storage == Storage::kUints && uints.size() == 1) return uints[0];
  if (storage == Storage::kInts && ints.size() == 1 && ints[0] >= 0) return static_cast<uint64_t>(ints[0]);
  return std::nullopt;
}

std::optional<bool> ChakraAttribute::boolean() const {
  if (is_list || kind != ChakraValueKind::kBool || ints.size() != 1) return std::nullopt;
  return ints[0] != 0;
}

std::optional<std::string_view> ChakraAttribute::text() const {
  if (is_list || kind != ChakraValueKind::kString || strings.size() != 1) return std::nullopt;
  return strings[0];
}

const ChakraAttribute* ChakraNode::attribute(std::string_view attr_name) const {
  for (auto it = attrs.rbegin(); it != attrs.rend(); ++it) {
    if (it->name == attr_name) return &*it;
  }
  return nullptr;
}

void ChakraNode::setAttribute(ChakraAttribute attr) {
  const std::string attr_name = attr.name;  // attr is moved from below
  const auto same_name = [&](const ChakraAttribute& a) { return a.name == attr_name; };
  const auto first = std::find_if(attrs.begin(), attrs.end(), same_name);
  if (first == attrs.end()) {
    attrs.push_back(std::move(attr));
    return;
  }
  *first = std::move(attr);
  attrs.erase(std::remove_if(std::next(first), attrs.end(), same_name), attrs.end());
}

std::optional<ChakraCollectiveType> ChakraNode::commType() const {
  const ChakraAttribute* attr = attribute(chakra_attr::kCommType);
  if (attr == nullptr) return std::nullopt;
  const auto v = attr->integer();
  if (!v || *v < 0 || *v >= static_cast<int64_t>(kCollectiveTypeNames.size())) return std::nullopt;
  return static_cast<ChakraCollectiveType>(*v);
}

std::optional<uint64_t> ChakraNode::commSize() const {
  const ChakraAttribute* attr = attribute(chakra_attr::kCommSize);
  return attr == nullptr ? std::nullopt : attr->unsignedInteger();
}

std::optional<uint32_t> ChakraNode::commSrc() const {
  return uint32Attribute(*this, chakra_attr::kCommSrc);
}
std::optional<uint32_t> ChakraNode::commDst() const {
  return uint32Attribute(*this, chakra_attr::kCommDst);
}
std::optional<uint32_t> ChakraNode::commTag() const {
  return uint32Attribute(*this, chakra_attr::kCommTag);
}

std::optional<std::string_view> ChakraNode::pgName() const {
  const ChakraAttribute* attr = attribute(chakra_attr::kPgName);
  return attr == nullptr ? std::nullopt : attr->text();
}

void ChakraNode::setCommType(ChakraCollectiveType comm_type) {
  setAttribute(signedAttribute(chakra_attr::kCommType, ChakraValueKind::kInt64, static_cast<int64_t>(comm_type)));
}

void ChakraNode::setCommSize(uint64_t bytes) {
  if (bytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    setAttribute(signedAttribute(chakra_attr::kCommSize, ChakraValueKind::kInt64, static_cast<int64_t>(bytes)));
  } else {
    setAttribute(unsignedAttribute(chakra_attr::kCommSize, ChakraValueKind::kUint64, bytes));
  }
}

void ChakraNode::setCommSrc(uint32_t rank) {
  setAttribute(rankAttribute(chakra_attr::kCommSrc, rank));
}
void ChakraNode::setCommDst(uint32_t rank) {
  setAttribute(rankAttribute(chakra_attr::kCommDst, rank));
}
void ChakraNode::setCommTag(uint32_t tag) {
  setAttribute(rankAttribute(chakra_attr::kCommTag, tag));
}

void ChakraNode::setPgName(std::string pg_name) {
  ChakraAttribute attr;
  attr.name = chakra_attr::kPgName;
  attr.kind = ChakraValueKind::kString;
  attr.strings = {std::move(pg_name)};
  setAttribute(std::move(attr));
}

bool ChakraNode::isComm() const {
  return type == ChakraNodeType::kCommSend || type == ChakraNodeType::kCommRecv || type == ChakraNodeType::kCommColl;
}

namespace {

// ---------------------------------------------------------------------------------------
// Protobuf wire format: decoding
// ---------------------------------------------------------------------------------------

enum WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;
/// Nesting limit for skipped groups, so hostile input cannot exhaust the stack.
constexpr int kMaxGroupDepth = 64;

std::string wireTypeName(uint32_t wire) {
  static constexpr std::array<std::string_view, 6> kNames = {"varint",      "fixed64",   "length-delimited",
                                                             "start-group", "end-group", "fixed32"};
  return std::to_string(wire) + (wire < kNames.size() ? " (" + std::string(kNames[wire]) + ")" : std::string());
}

uint8_t wireTypeOf(ChakraValueKind kind) {
  switch (kind) {
    case ChakraValueKind::kDouble:
    case ChakraValueKind::kFixed64:
    case ChakraValueKind::kSfixed64:
      return kFixed64;
    case ChakraValueKind::kFloat:
    case ChakraValueKind::kFixed32:
    case ChakraValueKind::kSfixed32:
      return kFixed32;
    case ChakraValueKind::kString:
    case ChakraValueKind::kBytes:
      return kLengthDelimited;
    default:
      return kVarint;
  }
}

int32_t zigzagDecode32(uint32_t v) {
  return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}
int64_t zigzagDecode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}
uint32_t zigzagEncode32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
uint64_t zigzagEncode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

/// A field key: number, wire type and the byte offset it starts at.
struct WireTag {
  uint32_t field = 0;
  uint32_t wire = 0;
  size_t offset = 0;
};

/**
 * Reads protobuf fields from bytes [pos, end) of a whole file. Offsets are absolute, so every
 * error names the byte of the file where the problem starts.
 */
class WireReader {
 public:
  WireReader(std::string_view file, std::string_view source) : file_(file), source_(source), end_(file.size()) {}

  bool atEnd() const { return pos_ >= end_; }

  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw WorkloadError(std::string(source_) + ": byte " + std::to_string(offset) + ": " + what);
  }

  uint64_t varint(std::string_view what) {
    const size_t start = pos_;
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) fail(start, "truncated varint (" + std::string(what) + ")");
      const auto byte = static_cast<uint8_t>(file_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        if (shift == 63 && byte > 1) fail(start, "varint overflows 64 bits (" + std::string(what) + ")");
        return value;
      }
    }
    fail(start, "varint longer than 10 bytes (" + std::string(what) + ")");
  }

  uint32_t fixed32(std::string_view what) { return static_cast<uint32_t>(littleEndian(4, what)); }
  uint64_t fixed64(std::string_view what) { return littleEndian(8, what); }

  /// A length prefix and that many bytes; returns a reader over them and moves past them.
  WireReader lengthDelimited(std::string_view what) {
    const size_t start = pos_;
    const uint64_t length = varint(what);
    if (length > end_ - pos_) {
      fail(start, std::string(what) + ": length " + std::to_string(length) + " runs past the end of the " +
                      (top_level_ ? "file" : "enclosing message") + " (" + std::to_string(end_ - pos_) +
                      " bytes left)");
    }
    WireReader body = *this;
    body.end_ = pos_ + static_cast<size_t>(length);
    body.top_level_ = false;
    pos_ = body.end_;
    return body;
  }

  std::string string(std::string_view what) {
    const WireReader body = lengthDelimited(what);
    return std::string(file_.substr(body.pos_, body.end_ - body.pos_));
  }

  WireTag tag() {
    WireTag key_tag;
    key_tag.offset = pos_;
    const uint64_t key = varint("field key");
    key_tag.wire = static_cast<uint32_t>(key & 7);
    const uint64_t field = key >> 3;
    if (field == 0) fail(key_tag.offset, "field number 0");
    if (field > kMaxFieldNumber) fail(key_tag.offset, "field number " + std::to_string(field) + " above 2^29 - 1");
    key_tag.field = static_cast<uint32_t>(field);
    return key_tag;
  }

  void expectWire(const WireTag& tag, uint32_t wire, std::string_view field) const {
    if (tag.wire != wire) {
      fail(tag.offset, "field " + std::string(field) + " (" + std::to_string(tag.field) + ") has wire type " +
                           wireTypeName(tag.wire) + ", expected " + wireTypeName(wire));
    }
  }

  /// Skips the value of a field this reader does not know.
  void skip(const WireTag& tag, int depth = 0) {
    switch (tag.wire) {
      case kVarint:
        varint("unknown field");
        return;
      case kFixed64:
        fixed64("unknown field");
        return;
      case kLengthDelimited:
        lengthDelimited("unknown field");
        return;
      case kFixed32:
        fixed32("unknown field");
        return;
      case kStartGroup:
        skipGroup(tag, depth);
        return;
      case kEndGroup:
        fail(tag.offset, "end-group without a matching start-group (field " + std::to_string(tag.field) + ")");
      default:
        fail(tag.offset, "invalid wire type " + std::to_string(tag.wire));
    }
  }

 private:
  uint64_t littleEndian(size_t bytes, std::string_view what) {
    if (end_ - pos_ < bytes) fail(pos_, "truncated fixed" + std::to_string(8 * bytes) + " (" + std::string(what) + ")");
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(file_[pos_ + i])) << (8 * i);
    pos_ += bytes;
    return value;
  }

  void skipGroup(const WireTag& start, int depth) {
    if (depth >= kMaxGroupDepth) fail(start.offset, "groups nested deeper than " + std::to_string(kMaxGroupDepth));
    while (true) {
      if (atEnd()) fail(start.offset, "unterminated group (field " + std::to_string(start.field) + ")");
      const WireTag inner = tag();
      if (inner.wire == kEndGroup) {
        if (inner.field != start.field) {
          fail(inner.offset,
               "end-group field " + std::to_string(inner.field) + " closes group field " + std::to_string(start.field));
        }
        return;
      }
      skip(inner, depth + 1);
    }
  }

  std::string_view file_;
  std::string_view source_;
  size_t pos_ = 0;
  size_t end_ = 0;
  /// Reads the file's sequence of messages rather than the inside of one.
  bool top_level_ = true;
};

/**
 * A repeated scalar field: one element in its own wire type (unpacked) or a length-delimited
 * run of elements (packed). Both are accepted, as protobuf parsers must.
 */
void readRepeated(WireReader& r, const WireTag& tag, uint8_t element_wire, std::string_view field,
                  const std::function<void(WireReader&)>& read_one) {
  if (tag.wire == kLengthDelimited && element_wire != kLengthDelimited) {
    WireReader packed = r.lengthDelimited(field);
    while (!packed.atEnd()) read_one(packed);
    return;
  }
  r.expectWire(tag, element_wire, field);
  read_one(r);
}

/// Reads one value of `kind` (in its element wire type) and appends it to `attr`.
void readValue(WireReader& r, ChakraValueKind kind, ChakraAttribute& attr) {
  const std::string_view what = valueKindName(kind);
  switch (kind) {
    case ChakraValueKind::kDouble:
      attr.reals.push_back(std::bit_cast<double>(r.fixed64(what)));
      break;
    case ChakraValueKind::kFloat:
      attr.reals.push_back(std::bit_cast<float>(r.fixed32(what)));
      break;
    case ChakraValueKind::kInt32:
      attr.ints.push_back(static_cast<int32_t>(static_cast<uint32_t>(r.varint(what))));
      break;
    case ChakraValueKind::kInt64:
      attr.ints.push_back(static_cast<int64_t>(r.varint(what)));
      break;
    case ChakraValueKind::kUint32:
      attr.uints.push_back(static_cast<uint32_t>(r.varint(what)));
      break;
    case ChakraValueKind::kUint64:
      attr.uints.push_back(r.varint(what));
      break;
    case ChakraValueKind::kSint32:
      attr.ints.push_back(zigzagDecode32(static_cast<uint32_t>(r.varint(what))));
      break;
    case ChakraValueKind::kSint64:
      attr.ints.push_back(zigzagDecode64(r.varint(what)));
      break;
    case ChakraValueKind::kFixed32:
      attr.uints.push_back(r.fixed32(what));
      break;
    case ChakraValueKind::kFixed64:
      attr.uints.push_back(r.fixed64(what));
      break;
    case ChakraValueKind::kSfixed32:
      attr.ints.push_back(static_cast<int32_t>(r.fixed32(what)));
      break;
    case ChakraValueKind::kSfixed64:
      attr.ints.push_back(static_cast<int64_t>(r.fixed64(what)));
      break;
    case ChakraValueKind::kBool:
      attr.ints.push_back(r.varint(what) != 0 ? 1 : 0);
      break;
    default:  // string, bytes
      attr.strings.push_back(r.string(what));
      break;
  }
}

std::string valueFieldName(ChakraValueKind kind, bool is_list) {
  return "AttributeProto." + std::string(valueKindName(kind)) + (is_list ? "_list" : "_val");
}

/// One member of the `value` oneof (fields 3..32). A later member replaces an earlier one;
/// a repeated list member merges (appends), as protobuf merges repeated embedded messages.
void readAttributeValue(WireReader& r, const WireTag& tag, ChakraAttribute& attr) {
  const bool is_list = tag.field % 2 == 0;
  const auto kind = static_cast<ChakraValueKind>(is_list ? tag.field - 1 : tag.field);
  const std::string field = valueFieldName(kind, is_list);
  if (!is_list) {
    r.expectWire(tag, wireTypeOf(kind), field);
    clearValue(attr);
    attr.kind = kind;
    attr.is_list = false;
    readValue(r, kind, attr);
    return;
  }
  r.expectWire(tag, kLengthDelimited, field);
  WireReader list = r.lengthDelimited(field);
  if (attr.kind != kind || !attr.is_list) {
    clearValue(attr);
    attr.kind = kind;
    attr.is_list = true;
  }
  const std::string values_field = field + ".values";
  while (!list.atEnd()) {
    const WireTag inner = list.tag();
    if (inner.field != 1) {
      list.skip(inner);
      continue;
    }
    readRepeated(list, inner, wireTypeOf(kind), values_field, [&](WireReader& from) { readValue(from, kind, attr); });
  }
}

ChakraAttribute decodeAttribute(WireReader r) {
  ChakraAttribute attr;
  while (!r.atEnd()) {
    const WireTag tag = r.tag();
    if (tag.field == 1) {
      r.expectWire(tag, kLengthDelimited, "AttributeProto.name");
      attr.name = r.string("AttributeProto.name");
    } else if (tag.field == 2) {
      r.expectWire(tag, kLengthDelimited, "AttributeProto.doc_string");
      attr.doc_string = r.string("AttributeProto.doc_string");
    } else if (tag.field >= kFirstValueField && tag.field <= kLastValueField) {
      readAttributeValue(r, tag, attr);
    } else {
      r.skip(tag);
    }
  }
  return attr;
}

/// An embedded IOInfo; repeated occurrences merge field by field, as in protobuf.
void decodeIoInfo(WireReader r, ChakraIoInfo& io) {
  static constexpr std::array<std::string_view, 3> kFields = {"IOInfo.values", "IOInfo.shapes", "IOInfo.types"};
  while (!r.atEnd()) {
    const WireTag tag = r.tag();
    if (tag.field < 1 || tag.field > 3) {
      r.skip(tag);
      continue;
    }
    std::string* const targets[] = {&io.values, &io.shapes, &io.types};
    const std::string_view field = kFields[tag.field - 1];
    r.expectWire(tag, kLengthDelimited, field);
    *targets[tag.field - 1] = r.string(field);
  }
}

void readDeps(WireReader& r, const WireTag& tag, std::string_view field, std::vector<uint64_t>& deps) {
  readRepeated(r, tag, kVarint, field, [&](WireReader& from) { deps.push_back(from.varint(field)); });
}

ChakraNodeType readNodeType(WireReader& r, const WireTag& tag) {
  r.expectWire(tag, kVarint, "Node.type");
  const size_t at = tag.offset;
  const auto value = static_cast<int32_t>(static_cast<uint32_t>(r.varint("Node.type")));
  if (value < 0 || value >= static_cast<int32_t>(kNodeTypeNames.size())) {
    r.fail(at, "unknown node type " + std::to_string(value) + " (NodeType has 0.." +
                   std::to_string(kNodeTypeNames.size() - 1) + ")");
  }
  return static_cast<ChakraNodeType>(value);
}

uint64_t readUint64(WireReader& r, const WireTag& tag, std::string_view field) {
  r.expectWire(tag, kVarint, field);
  return r.varint(field);
}

ChakraNode decodeNode(WireReader r) {
  ChakraNode node;
  while (!r.atEnd()) {
    const WireTag tag = r.tag();
    switch (tag.field) {
      case 1:
        node.id = readUint64(r, tag, "Node.id");
        break;
      case 2:
        r.expectWire(tag, kLengthDelimited, "Node.name");
        node.name = r.string("Node.name");
        break;
      case 3:
        node.type = readNodeType(r, tag);
        break;
      case 4:
        readDeps(r, tag, "Node.ctrl_deps", node.ctrl_deps);
        break;
      case 5:
        readDeps(r, tag, "Node.data_deps", node.data_deps);
        break;
      case 6:
        node.start_time_micros = readUint64(r, tag, "Node.start_time_micros");
        break;
      case 7:
        node.duration_micros = readUint64(r, tag, "Node.duration_micros");
        break;
      case 8:
        r.expectWire(tag, kLengthDelimited, "Node.inputs");
        decodeIoInfo(r.lengthDelimited("Node.inputs"), node.inputs);
        break;
      case 9:
        r.expectWire(tag, kLengthDelimited, "Node.outputs");
        decodeIoInfo(r.lengthDelimited("Node.outputs"), node.outputs);
        break;
      case 10:
        r.expectWire(tag, kLengthDelimited, "Node.attr");
        node.attrs.push_back(decodeAttribute(r.lengthDelimited("Node.attr")));
        break;
      default:
        r.skip(tag);
        break;
    }
  }
  return node;
}

void decodeMetadata(WireReader r, ChakraTrace& trace) {
  while (!r.atEnd()) {
    const WireTag tag = r.tag();
    if (tag.field == 1) {
      r.expectWire(tag, kLengthDelimited, "GlobalMetadata.version");
      trace.version = r.string("GlobalMetadata.version");
    } else if (tag.field == 2) {
      r.expectWire(tag, kLengthDelimited, "GlobalMetadata.attr");
      trace.metadata.push_back(decodeAttribute(r.lengthDelimited("GlobalMetadata.attr")));
    } else {
      r.skip(tag);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Protobuf wire format: encoding
// ---------------------------------------------------------------------------------------

/// Appends protobuf fields to a byte string.
class WireWriter {
 public:
  void varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>(static_cast<uint8_t>(value) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }
  void tag(uint32_t field, uint8_t wire) { varint((static_cast<uint64_t>(field) << 3) | wire); }
  void fixed32(uint32_t value) { littleEndian(value, 4); }
  void fixed64(uint64_t value) { littleEndian(value, 8); }
  void lengthDelimited(uint32_t field, std::string_view body) {
    tag(field, kLengthDelimited);
    varint(body.size());
    bytes_.append(body);
  }
  void varintField(uint32_t field, uint64_t value) {
    tag(field, kVarint);
    varint(value);
  }
  /// A proto3 singular string or number: omitted when it holds the default.
  void optionalString(uint32_t field, std::string_view value) {
    if (!value.empty()) lengthDelimited(field, value);
  }
  void optionalVarint(uint32_t field, uint64_t value) {
    if (value != 0) varintField(field, value);
  }

  const std::string& bytes() const { return bytes_; }

 private:
  void littleEndian(uint64_t value, int count) {
    for (int i = 0; i < count; ++i) bytes_.push_back(static_cast<char>(static_cast<uint8_t>(value >> (8 * i))));
  }

  std::string bytes_;
};

/// Writes value `i` of a numeric `attr` in its element wire type (no key).
void writeValue(WireWriter& w, const ChakraAttribute& attr, size_t i) {
  switch (attr.kind) {
    case ChakraValueKind::kDouble:
      w.fixed64(std::bit_cast<uint64_t>(attr.reals[i]));
      break;
    case ChakraValueKind::kFloat:
      w.fixed32(std::bit_cast<uint32_t>(static_cast<float>(attr.reals[i])));
      break;
    case ChakraValueKind::kInt32:  // negative int32 is sign-extended to ten bytes, as protobuf does
    case ChakraValueKind::kInt64:
    case ChakraValueKind::kBool:
      w.varint(static_cast<uint64_t>(attr.ints[i]));
      break;
    case ChakraValueKind::kUint32:
    case ChakraValueKind::kUint64:
      w.varint(attr.uints[i]);
      break;
    case ChakraValueKind::kSint32:
      w.varint(zigzagEncode32(static_cast<int32_t>(attr.ints[i])));
      break;
    case ChakraValueKind::kSint64:
      w.varint(zigzagEncode64(attr.ints[i]));
      break;
    case ChakraValueKind::kFixed32:
      w.fixed32(static_cast<uint32_t>(attr.uints[i]));
      break;
    case ChakraValueKind::kFixed64:
      w.fixed64(attr.uints[i]);
      break;
    case ChakraValueKind::kSfixed32:
      w.fixed32(static_cast<uint32_t>(static_cast<int32_t>(attr.ints[i])));
      break;
    case ChakraValueKind::kSfixed64:
      w.fixed64(static_cast<uint64_t>(attr.ints[i]));
      break;
    default:
      break;
  }
}

/// The `value` oneof of `attr`: scalar member, or list member with packed numbers.
void writeAttributeValue(WireWriter& w, const ChakraAttribute& attr) {
  const auto field = static_cast<uint32_t>(attr.kind);
  const bool text = storageOf(attr.kind) == Storage::kStrings;
  if (!attr.is_list) {
    if (text) {
      w.lengthDelimited(field, attr.strings[0]);
    } else {
      w.tag(field, wireTypeOf(attr.kind));
      writeValue(w, attr, 0);
    }
    return;
  }
  WireWriter list;
  if (text) {
    for (const auto& s : attr.strings) list.lengthDelimited(1, s);
  } else if (valueCount(attr) > 0) {
    WireWriter packed;
    for (size_t i = 0; i < valueCount(attr); ++i) writeValue(packed, attr, i);
    list.lengthDelimited(1, packed.bytes());
  }
  w.lengthDelimited(field + 1, list.bytes());
}

std::string encodeAttribute(const ChakraAttribute& attr, const std::string& where) {
  if (const auto problem = attributeProblem(attr)) {
    throw WorkloadError(where + ": attribute '" + attr.name + "': " + *problem);
  }
  WireWriter w;
  w.optionalString(1, attr.name);
  w.optionalString(2, attr.doc_string);
  if (attr.kind != ChakraValueKind::kNone) writeAttributeValue(w, attr);
  return w.bytes();
}

void writeIoInfo(WireWriter& w, uint32_t field, const ChakraIoInfo& io) {
  if (io == ChakraIoInfo{}) return;
  WireWriter body;
  body.optionalString(1, io.values);
  body.optionalString(2, io.shapes);
  body.optionalString(3, io.types);
  w.lengthDelimited(field, body.bytes());
}

void writePackedDeps(WireWriter& w, uint32_t field, const std::vector<uint64_t>& deps) {
  if (deps.empty()) return;
  WireWriter packed;
  for (const uint64_t d : deps) packed.varint(d);
  w.lengthDelimited(field, packed.bytes());
}

/// Encoders refuse a node type outside NodeType: neither form could read it back.
void requireKnownType(const ChakraNode& node, const std::string& where) {
  if (chakraNodeTypeName(node.type).empty()) {
    throw WorkloadError(where + ": unknown node type " + std::to_string(static_cast<int32_t>(node.type)));
  }
}

std::string encodeNode(const ChakraNode& node, const std::string& source) {
  const std::string where = source + ": node " + std::to_string(node.id);
  requireKnownType(node, where);
  WireWriter w;
  w.optionalVarint(1, node.id);
  w.optionalString(2, node.name);
  w.optionalVarint(3, static_cast<uint64_t>(static_cast<int64_t>(node.type)));
  writePackedDeps(w, 4, node.ctrl_deps);
  writePackedDeps(w, 5, node.data_deps);
  w.optionalVarint(6, node.start_time_micros);
  w.optionalVarint(7, node.duration_micros);
  writeIoInfo(w, 8, node.inputs);
  writeIoInfo(w, 9, node.outputs);
  for (const auto& attr : node.attrs) w.lengthDelimited(10, encodeAttribute(attr, where));
  return w.bytes();
}

std::string encodeMetadata(const ChakraTrace& trace, const std::string& source) {
  WireWriter w;
  w.optionalString(1, trace.version);
  for (const auto& attr : trace.metadata) w.lengthDelimited(2, encodeAttribute(attr, source + ": metadata"));
  return w.bytes();
}

/// "Chakra trace" for an in-memory trace, else its source.
std::string sourceName(const ChakraTrace& trace) {
  return trace.source.empty() ? "Chakra trace" : trace.source;
}

// ---------------------------------------------------------------------------------------
// JSON form
// ---------------------------------------------------------------------------------------

constexpr std::string_view kBase64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<uint8_t>(in[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kBase64Alphabet[(chunk >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

/// Standard or URL-safe base64, padding optional (as protobuf's JSON parser accepts).
std::optional<std::string> base64Decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    size_t v = kBase64Alphabet.find(c);
    if (c == '-') v = 62;
    if (c == '_') v = 63;
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

Json realToJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

Json valueToJson(const ChakraAttribute& attr, size_t i) {
  switch (storageOf(attr.kind)) {
    case Storage::kInts:
      return attr.kind == ChakraValueKind::kBool ? Json(attr.ints[i] != 0) : Json(attr.ints[i]);
    case Storage::kUints:
      return attr.uints[i];
    case Storage::kReals:
      return realToJson(attr.reals[i]);
    default:
      return attr.kind == ChakraValueKind::kBytes ? base64Encode(attr.strings[i]) : attr.strings[i];
  }
}

Json attributeToJson(const ChakraAttribute& attr, const std::string& where) {
  if (const auto problem = attributeProblem(attr)) {
    throw WorkloadError(where + ": attribute '" + attr.name + "': " + *problem);
  }
  Json j = Json::object();
  j["name"] = attr.name;
  if (!attr.doc_string.empty()) j["doc_string"] = attr.doc_string;
  if (attr.kind == ChakraValueKind::kNone) return j;
  const std::string kind(valueKindName(attr.kind));
  if (!attr.is_list) {
    j[kind + "_val"] = valueToJson(attr, 0);
    return j;
  }
  Json values = Json::array();
  for (size_t i = 0; i < valueCount(attr); ++i) values.push_back(valueToJson(attr, i));
  j[kind + "_list"] = Json{{"values", std::move(values)}};
  return j;
}

Json ioInfoToJson(const ChakraIoInfo& io) {
  return Json{{"values", io.values}, {"shapes", io.shapes}, {"types", io.types}};
}

Json nodeToJson(const ChakraNode& node, const std::string& source) {
  const std::string where = source + ": node " + std::to_string(node.id);
  requireKnownType(node, where);
  Json j = Json::object();
  j["id"] = node.id;
  j["name"] = node.name;
  j["type"] = chakraNodeTypeName(node.type);
  j["ctrl_deps"] = node.ctrl_deps;
  j["data_deps"] = node.data_deps;
  j["start_time_micros"] = node.start_time_micros;
  j["duration_micros"] = node.duration_micros;
  if (node.inputs != ChakraIoInfo{}) j["inputs"] = ioInfoToJson(node.inputs);
  if (node.outputs != ChakraIoInfo{}) j["outputs"] = ioInfoToJson(node.outputs);
  Json attrs = Json::array();
  for (const auto& attr : node.attrs) attrs.push_back(attributeToJson(attr, where));
  j["attr"] = std::move(attrs);
  return j;
}

/// Reads the JSON form; every error names the JSON path of the offending value.
class JsonDecoder {
 public:
  explicit JsonDecoder(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw WorkloadError(std::string(source_) + ": " + path + ": " + what);
  }

  ChakraTrace trace(const Json& root) const {
    ChakraTrace result;
    result.source = source_;
    requireObject(root, "(root)");
    for (const auto& item : root.items()) {
      const std::string& key = item.key();
      if (key == "metadata") {
        metadata(item.value(), "metadata", result);
      } else if (key == "nodes") {
        requireArray(item.value(), key);
        for (size_t i = 0; i < item.value().size(); ++i) {
          result.nodes.push_back(node(item.value()[i], "nodes[" + std::to_string(i) + "]"));
        }
      } else {
        fail(key, "unknown key (expected metadata, nodes)");
      }
    }
    return result;
  }

 private:
  void requireObject(const Json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "expected an object");
  }
  void requireArray(const Json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, "expected an array");
  }

  std::string string(const Json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "expected a string");
    return j.get<std::string>();
  }

  /// A 64-bit integer as a JSON number or (protobuf's JSON mapping) a decimal string.
  template <class Int>
  Int integer(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) {
      const auto v = j.get<uint64_t>();
      if (v <= static_cast<uint64_t>(std::numeric_limits<Int>::max())) return static_cast<Int>(v);
      fail(path, "integer " + std::to_string(v) + " out of range");
    }
    if (j.is_number_integer()) {
      const auto v = j.get<int64_t>();
      const bool fits = v < 0 ? v >= static_cast<int64_t>(std::numeric_limits<Int>::min())
                              : static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
      if (fits) return static_cast<Int>(v);
      fail(path, "integer " + std::to_string(v) + " out of range");
    }
    if (j.is_string()) {
      const auto text = j.get<std::string>();
      Int v{};
      const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (err == std::errc() && end == text.data() + text.size() && !text.empty()) return v;
      fail(path, "'" + text + "' is not a decimal integer in range");
    }
    fail(path, std::is_signed_v<Int> ? "expected an integer" : "expected a non-negative integer");
  }

  double real(const Json& j, const std::string& path) const {
    if (j.is_number()) return j.get<double>();
    if (j == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (j == "Infinity") return std::numeric_limits<double>::infinity();
    if (j == "-Infinity") return -std::numeric_limits<double>::infinity();
    fail(path, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"");
  }

  /// An enum as its protobuf name or its number.
  template <class Enum, size_t N>
  Enum enumValue(const Json& j, const std::string& path, const std::array<std::string_view, N>& names) const {
    if (j.is_string()) {
      const auto text = j.get<std::string>();
      const auto it = std::find(names.begin(), names.end(), text);
      if (it == names.end()) fail(path, "unknown name '" + text + "'");
      return static_cast<Enum>(it - names.begin());
    }
    const auto v = integer<int64_t>(j, path);
    if (v < 0 || v >= static_cast<int64_t>(N)) fail(path, "enum value " + std::to_string(v) + " out of range");
    return static_cast<Enum>(v);
  }

  void metadata(const Json& j, const std::string& path, ChakraTrace& out) const {
    requireObject(j, path);
    for (const auto& item : j.items()) {
      const std::string at = path + "." + item.key();
      if (item.key() == "version") {
        out.version = string(item.value(), at);
      } else if (item.key() == "attr") {
        out.metadata = attributes(item.value(), at);
      } else {
        fail(at, "unknown key (expected version, attr)");
      }
    }
  }

  std::vector<uint64_t> deps(const Json& j, const std::string& path) const {
    requireArray(j, path);
    std::vector<uint64_t> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(integer<uint64_t>(j[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  ChakraIoInfo ioInfo(const Json& j, const std::string& path) const {
    requireObject(j, path);
    ChakraIoInfo io;
    for (const auto& item : j.items()) {
      const std::string at = path + "." + item.key();
      if (item.key() == "values") {
        io.values = string(item.value(), at);
      } else if (item.key() == "shapes") {
        io.shapes = string(item.value(), at);
      } else if (item.key() == "types") {
        io.types = string(item.value(), at);
      } else {
        fail(at, "unknown key (expected values, shapes, types)");
      }
    }
    return io;
  }

  ChakraNode node(const Json& j, const std::string& path) const {
    requireObject(j, path);
    ChakraNode result;
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      const Json& value = item.value();
      const std::string at = path + "." + key;
      if (key == "id") {
        result.id = integer<uint64_t>(value, at);
      } else if (key == "name") {
        result.name = string(value, at);
      } else if (key == "type") {
        result.type = enumValue<ChakraNodeType>(value, at, kNodeTypeNames);
      } else if (key == "ctrl_deps") {
        result.ctrl_deps = deps(value, at);
      } else if (key == "data_deps") {
        result.data_deps = deps(value, at);
      } else if (key == "start_time_micros") {
        result.start_time_micros = integer<uint64_t>(value, at);
      } else if (key == "duration_micros") {
        result.duration_micros = integer<uint64_t>(value, at);
      } else if (key == "inputs") {
        result.inputs = ioInfo(value, at);
      } else if (key == "outputs") {
        result.outputs = ioInfo(value, at);
      } else if (key == "attr") {
        result.attrs = attributes(value, at);
      } else {
        fail(at, "unknown key");
      }
    }
    return result;
  }

  std::vector<ChakraAttribute> attributes(const Json& j, const std::string& path) const {
    requireArray(j, path);
    std::vector<ChakraAttribute> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(attribute(j[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  /// "<kind>_val" or "<kind>_list" → (kind, is_list).
  static std::optional<std::pair<ChakraValueKind, bool>> valueKey(std::string_view key) {
    for (size_t k = 0; k < kValueKindNames.size(); ++k) {
      const std::string_view name = kValueKindNames[k];
      if (!key.starts_with(name)) continue;
      const std::string_view suffix = key.substr(name.size());
      const auto kind = static_cast<ChakraValueKind>(kFirstValueField + 2 * k);
      if (suffix == "_val") return std::pair{kind, false};
      if (suffix == "_list") return std::pair{kind, true};
    }
    return std::nullopt;
  }

  ChakraAttribute attribute(const Json& j, const std::string& path) const {
    requireObject(j, path);
    ChakraAttribute attr;
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      const std::string at = path + "." + key;
      if (key == "name") {
        attr.name = string(item.value(), at);
      } else if (key == "doc_string") {
        attr.doc_string = string(item.value(), at);
      } else if (const auto value_key = valueKey(key)) {
        if (attr.kind != ChakraValueKind::kNone) fail(at, "a second value (the value is a oneof)");
        attr.kind = value_key->first;
        attr.is_list = value_key->second;
        if (attr.is_list) {
          listValues(item.value(), at, attr);
        } else {
          appendValue(item.value(), at, attr);
        }
      } else {
        fail(at, "unknown key (expected name, doc_string or one <kind>_val / <kind>_list)");
      }
    }
    return attr;
  }

  void listValues(const Json& j, const std::string& path, ChakraAttribute& attr) const {
    requireObject(j, path);
    for (const auto& item : j.items()) {
      const std::string at = path + "." + item.key();
      if (item.key() != "values") fail(at, "unknown key (expected values)");
      requireArray(item.value(), at);
      for (size_t i = 0; i < item.value().size(); ++i) {
        appendValue(item.value()[i], at + "[" + std::to_string(i) + "]", attr);
      }
    }
  }

  void appendValue(const Json& j, const std::string& path, ChakraAttribute& attr) const {
    const ChakraValueKind kind = attr.kind;
    switch (storageOf(kind)) {
      case Storage::kInts:
        if (kind == ChakraValueKind::kBool) {
          if (!j.is_boolean()) fail(path, "expected true or false");
          attr.ints.push_back(j.get<bool>() ? 1 : 0);
        } else if (is32Bit(kind)) {
          attr.ints.push_back(integer<int32_t>(j, path));
        } else {
          attr.ints.push_back(integer<int64_t>(j, path));
        }
        break;
      case Storage::kUints:
        attr.uints.push_back(is32Bit(kind) ? integer<uint32_t>(j, path) : integer<uint64_t>(j, path));
        break;
      case Storage::kReals:
        attr.reals.push_back(real(j, path));
        break;
      default:
        if (kind == ChakraValueKind::kString) {
          attr.strings.push_back(string(j, path));
        } else if (auto bytes = base64Decode(string(j, path))) {
          attr.strings.push_back(std::move(*bytes));
        } else {
          fail(path, "bytes must be base64");
        }
        break;
    }
  }

  std::string source_;
};

// ---------------------------------------------------------------------------------------
// Validation and order
// ---------------------------------------------------------------------------------------

[[noreturn]] void failNode(const ChakraTrace& trace, const ChakraNode& node, const std::string& what) {
  std::string where = sourceName(trace) + ": node " + std::to_string(node.id);
  if (!node.name.empty()) where += " ('" + node.name + "')";
  throw WorkloadError(where + ": " + what);
}

/// Index into trace.nodes of every node id; throws on a duplicate.
std::unordered_map<uint64_t, size_t> indexById(const ChakraTrace& trace) {
  std::unordered_map<uint64_t, size_t> index;
  index.reserve(trace.nodes.size());
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const auto [it, inserted] = index.emplace(trace.nodes[i].id, i);
    if (!inserted) {
      failNode(
          trace, trace.nodes[i],
          "duplicate node id (nodes #" + std::to_string(it->second) + " and #" + std::to_string(i) + " in file order)");
    }
  }
  return index;
}

/// Calls f(dep_index) for every ctrl and data dependency of node i; throws on a missing one.
template <class F>
void forEachDep(const ChakraTrace& trace, const std::unordered_map<uint64_t, size_t>& index, size_t i, F&& f) {
  const ChakraNode& node = trace.nodes[i];
  for (const auto* deps : {&node.ctrl_deps, &node.data_deps}) {
    for (const uint64_t dep : *deps) {
      const auto it = index.find(dep);
      if (it == index.end())
        failNode(trace, node, "depends on node " + std::to_string(dep) + ", which is not in the trace");
      f(it->second);
    }
  }
}

/**
 * Called when Kahn's algorithm stops with nodes left: each left node has a left dependency,
 * so walking dependencies from one of them must revisit a node, which lies on a cycle.
 */
[[noreturn]] void failCycle(const ChakraTrace& trace, const std::unordered_map<uint64_t, size_t>& index,
                            const std::vector<size_t>& pending) {
  constexpr size_t kShown = 8;
  const size_t none = trace.nodes.size();
  std::vector<size_t> step_of(trace.nodes.size(), none);
  size_t at = static_cast<size_t>(std::find_if(pending.begin(), pending.end(), [](size_t p) { return p > 0; }) -
                                  pending.begin());
  std::vector<size_t> walk;
  while (step_of[at] == none) {
    step_of[at] = walk.size();
    walk.push_back(at);
    size_t next = none;
    forEachDep(trace, index, at, [&](size_t dep) {
      if (next == none && pending[dep] > 0) next = dep;
    });
    at = next;
  }
  std::string cycle = std::to_string(trace.nodes[at].id);
  const size_t length = walk.size() - step_of[at];
  for (size_t k = 1; k <= std::min(length, kShown); ++k) {
    const size_t member = k == length ? at : walk[step_of[at] + k];
    cycle += " -> " + std::to_string(trace.nodes[member].id);
  }
  if (length > kShown) cycle += " -> ...";
  failNode(trace, trace.nodes[at], "dependency cycle (a -> b: a depends on b): " + cycle);
}

/// What a send, receive or collective needs: comm_size; comm_type (collective); the peer (P2P).
void validateCommNode(const ChakraTrace& trace, const ChakraNode& node) {
  const auto require = [&](std::string_view name) {
    const ChakraAttribute* attr = node.attribute(name);
    if (attr == nullptr) {
      failNode(trace, node, std::string(chakraNodeTypeName(node.type)) + " without " + std::string(name));
    }
    return attr;
  };
  require(chakra_attr::kCommSize);
  if (!node.commSize()) failNode(trace, node, "comm_size must be a non-negative integer scalar");
  if (*node.commSize() > static_cast<uint64_t>(kMaxInputBytes)) {
    failNode(trace, node, "comm_size " + std::to_string(*node.commSize()) + " is more than 2^44 bytes (16 TiB)");
  }
  if (node.type == ChakraNodeType::kCommColl) {
    const ChakraAttribute* comm_type = require(chakra_attr::kCommType);
    if (!node.commType()) {
      const auto v = comm_type->integer();
      failNode(trace, node,
               "comm_type " + (v ? std::to_string(*v) : std::string("(not an integer)")) +
                   " is not a CollectiveCommType (0.." + std::to_string(kCollectiveTypeNames.size() - 1) + ")");
    }
  }
  const bool send = node.type == ChakraNodeType::kCommSend;
  if (node.type == ChakraNodeType::kCommSend || node.type == ChakraNodeType::kCommRecv) {
    const std::string_view peer = send ? chakra_attr::kCommDst : chakra_attr::kCommSrc;
    require(peer);
    if (!(send ? node.commDst() : node.commSrc())) {
      failNode(trace, node, std::string(peer) + " must be an integer rank in [0, 2^32)");
    }
  }
}

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

enum class TraceFormat : uint8_t { kBinary, kJson };

TraceFormat formatOf(const std::filesystem::path& path) {
  const auto ext = path.extension();
  if (ext == ".et") return TraceFormat::kBinary;
  if (ext == ".json") return TraceFormat::kJson;
  throw WorkloadError(path.string() + ": unknown Chakra trace extension '" + ext.string() +
                      "' (expected .et for the protobuf form or .json)");
}

std::string readWholeFile(const std::filesystem::path& path) {
  InputFile input = readInputFile(path);
  if (!input.ok()) throw WorkloadError(path.string() + ": cannot open Chakra trace: " + input.problem);
  return std::move(input.text);
}

}  // namespace

ChakraTrace decodeChakraBinary(std::string_view bytes, std::string_view source) {
  const std::string name = source.empty() ? "Chakra trace" : std::string(source);
  if (bytes.empty()) throw WorkloadError(name + ": empty file (expected GlobalMetadata, then nodes)");
  ChakraTrace trace;
  trace.source = source;
  WireReader file(bytes, name);
  decodeMetadata(file.lengthDelimited("GlobalMetadata message"), trace);
  while (!file.atEnd()) trace.nodes.push_back(decodeNode(file.lengthDelimited("Node message")));
  return trace;
}

std::string encodeChakraBinary(const ChakraTrace& trace) {
  const std::string source = sourceName(trace);
  WireWriter file;
  const std::string metadata = encodeMetadata(trace, source);
  file.varint(metadata.size());
  std::string out = file.bytes() + metadata;
  for (const auto& node : trace.nodes) {
    const std::string body = encodeNode(node, source);
    WireWriter length;
    length.varint(body.size());
    out += length.bytes();
    out += body;
  }
  return out;
}

ChakraTrace decodeChakraJson(std::string_view text, std::string_view source) {
  // JSON readers differ on which of two equal keys in one object wins: refuse them.
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  const auto watch = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second && repeated.empty()) {
      repeated = parsed.get<std::string>();
    }
    return true;
  };
  Json root;
  try {
    root = Json::parse(text, watch);
  } catch (const Json::exception& e) {  // a syntax error, or a number beyond double (out_of_range)
    throw WorkloadError(std::string(source) + ": invalid JSON: " + e.what());
  }
  if (!repeated.empty()) {
    throw WorkloadError(std::string(source) + ": key '" + repeated +
                        "' written twice in one JSON object (readers differ on which one wins; remove one)");
  }
  return JsonDecoder(source).trace(root);
}

std::string encodeChakraJson(const ChakraTrace& trace) {
  const std::string source = sourceName(trace);
  Json metadata = Json::object();
  metadata["version"] = trace.version;
  Json attrs = Json::array();
  for (const auto& attr : trace.metadata) attrs.push_back(attributeToJson(attr, source + ": metadata"));
  metadata["attr"] = std::move(attrs);
  Json nodes = Json::array();
  for (const auto& node : trace.nodes) nodes.push_back(nodeToJson(node, source));
  const Json root = {{"metadata", std::move(metadata)}, {"nodes", std::move(nodes)}};
  try {
    return root.dump(2) + "\n";
  } catch (const Json::type_error& e) {
    throw WorkloadError(source + ": cannot write JSON (a string is not UTF-8; use a bytes attribute): " + e.what());
  }
}

void validateChakraTrace(const ChakraTrace& trace) {
  if (trace.nodes.empty()) throw WorkloadError(sourceName(trace) + ": no nodes after the GlobalMetadata");
  for (const auto& node : trace.nodes) {
    if (chakraNodeTypeName(node.type).empty()) {
      failNode(trace, node, "unknown node type " + std::to_string(static_cast<int32_t>(node.type)));
    }
    for (const auto& attr : node.attrs) {
      if (const auto problem = attributeProblem(attr))
        failNode(trace, node, "attribute '" + attr.name + "': " + *problem);
    }
    if (node.isComm()) validateCommNode(trace, node);
    if (node.duration_micros > static_cast<uint64_t>(kMaxTaskPs / 1'000'000)) {
      failNode(trace, node,
               "duration_micros " + std::to_string(node.duration_micros) + " is more than " +
                   std::to_string(kMaxTaskPs / 1'000'000) + " (1,000 s, the longest task)");
    }
  }
  topologicalOrder(trace);
}

std::vector<size_t> topologicalOrder(const ChakraTrace& trace) {
  const size_t n = trace.nodes.size();
  const auto index = indexById(trace);
  // Successor lists in compressed form: successors of i are succs[first[i] .. first[i + 1]).
  std::vector<size_t> pending(n, 0);
  std::vector<size_t> first(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    forEachDep(trace, index, i, [&](size_t dep) {
      ++pending[i];
      ++first[dep + 1];
    });
  }
  for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<size_t> succs(first[n]);
  std::vector<size_t> fill(first.begin(), first.end() - 1);
  for (size_t i = 0; i < n; ++i) forEachDep(trace, index, i, [&](size_t dep) { succs[fill[dep]++] = i; });

  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t s = first[i]; s < first[i + 1]; ++s) {
      if (--pending[succs[s]] == 0) ready.push(succs[s]);
    }
  }
  if (order.size() < n) failCycle(trace, index, pending);
  return order;
}

ChakraTrace readChakraFile(const std::filesystem::path& path) {
  const TraceFormat format = formatOf(path);
  const std::string bytes = readWholeFile(path);
  ChakraTrace trace = format == TraceFormat::kBinary ? decodeChakraBinary(bytes, path.string())
                                                     : decodeChakraJson(bytes, path.string());
  validateChakraTrace(trace);
  return trace;
}

void writeChakraFile(const std::filesystem::path& path, const ChakraTrace& trace) {
  const std::string bytes =
      formatOf(path) == TraceFormat::kBinary ? encodeChakraBinary(trace) : encodeChakraJson(trace);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw WorkloadError(path.string() + ": cannot write Chakra trace");
}

std::vector<ChakraTrace> readChakraTraces(const std::string& prefix, uint32_t ranks) {
  if (ranks == 0) throw WorkloadError(prefix + ": Chakra traces need at least one rank");
  std::vector<ChakraTrace> traces;
  traces.reserve(ranks);
  for (uint32_t rank = 0; rank < ranks; ++rank) {
    const std::string stem = prefix + "." + std::to_string(rank);
    const std::filesystem::path binary = stem + ".et";
    const std::filesystem::path json = stem + ".json";
    if (std::filesystem::exists(binary)) {
      traces.push_back(readChakraFile(binary));
    } else if (std::filesystem::exists(json)) {
      traces.push_back(readChakraFile(json));
    } else {
      throw WorkloadError(binary.string() + ": missing rank file (rank " + std::to_string(rank) + " of " +
                          std::to_string(ranks) + "; no " + json.filename().string() + " either)");
    }
  }
  return traces;
}

}  // namespace mv
