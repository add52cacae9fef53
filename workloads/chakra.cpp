/**
 * @file chakra.cpp
 * Chakra execution traces: attribute and node helpers, the binary form (protobuf messages of
 * the codec protoc generates from workloads/proto/et_def.proto), the JSON form, validation,
 * topological order and file I/O.
 */
#include "workloads/chakra.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "ecs/input_file.hpp"
#include "ecs/json_input.hpp"
#include "ecs/units.hpp"
#include "et_def.pb.h"

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
// Binary form: the messages of the generated codec (workloads/proto/et_def.proto)
// ---------------------------------------------------------------------------------------

namespace pb = ChakraProtoMsg;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

/// What protobuf logged on this thread (an invalid UTF-8 string, on parsing or writing): kept
/// for the error message rather than printed.
thread_local std::string protobuf_log;

void keepProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string& message) {
  protobuf_log += message;
}

/// Routes protobuf's log to protobuf_log, once for the process, and clears this thread's.
void captureProtobufLog() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(&keepProtobufLog); });
  protobuf_log.clear();
}

std::string loggedReason() {
  return protobuf_log.empty() ? std::string() : " (" + protobuf_log + ")";
}

/// Appends value `i` of `field` (repeated when `repeated`) of `m` to `attr`'s vector.
void appendValue(const Message& m, const FieldDescriptor* field, bool repeated, int i, ChakraAttribute& attr) {
  const Reflection& r = *m.GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      attr.reals.push_back(repeated ? r.GetRepeatedDouble(m, field, i) : r.GetDouble(m, field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      attr.reals.push_back(repeated ? r.GetRepeatedFloat(m, field, i) : r.GetFloat(m, field));
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      attr.ints.push_back(repeated ? r.GetRepeatedInt32(m, field, i) : r.GetInt32(m, field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      attr.ints.push_back(repeated ? r.GetRepeatedInt64(m, field, i) : r.GetInt64(m, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      attr.uints.push_back(repeated ? r.GetRepeatedUInt32(m, field, i) : r.GetUInt32(m, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      attr.uints.push_back(repeated ? r.GetRepeatedUInt64(m, field, i) : r.GetUInt64(m, field));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      attr.ints.push_back((repeated ? r.GetRepeatedBool(m, field, i) : r.GetBool(m, field)) ? 1 : 0);
      break;
    default:  // string, bytes
      attr.strings.push_back(repeated ? r.GetRepeatedString(m, field, i) : r.GetString(m, field));
      break;
  }
}

/// Sets `field` of `m` to value `i` of `attr` (adds it when `repeated`).
void storeValue(Message& m, const FieldDescriptor* field, bool repeated, const ChakraAttribute& attr, size_t i) {
  const Reflection& r = *m.GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      repeated ? r.AddDouble(&m, field, attr.reals[i]) : r.SetDouble(&m, field, attr.reals[i]);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const auto v = static_cast<float>(attr.reals[i]);
      repeated ? r.AddFloat(&m, field, v) : r.SetFloat(&m, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      const auto v = static_cast<int32_t>(attr.ints[i]);
      repeated ? r.AddInt32(&m, field, v) : r.SetInt32(&m, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64:
      repeated ? r.AddInt64(&m, field, attr.ints[i]) : r.SetInt64(&m, field, attr.ints[i]);
      break;
    case FieldDescriptor::CPPTYPE_UINT32: {
      const auto v = static_cast<uint32_t>(attr.uints[i]);
      repeated ? r.AddUInt32(&m, field, v) : r.SetUInt32(&m, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64:
      repeated ? r.AddUInt64(&m, field, attr.uints[i]) : r.SetUInt64(&m, field, attr.uints[i]);
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      repeated ? r.AddBool(&m, field, attr.ints[i] != 0) : r.SetBool(&m, field, attr.ints[i] != 0);
      break;
    default:
      repeated ? r.AddString(&m, field, attr.strings[i]) : r.SetString(&m, field, attr.strings[i]);
      break;
  }
}

/// The `value` oneof's member is found by its field number: a scalar kind's number, or the
/// next one for its list (a message whose field 1 holds the values).
ChakraAttribute fromProto(const pb::AttributeProto& a) {
  ChakraAttribute attr;
  attr.name = a.name();
  attr.doc_string = a.doc_string();
  const int number = a.value_case();
  if (number == pb::AttributeProto::VALUE_NOT_SET) return attr;
  attr.is_list = number % 2 == 0;
  attr.kind = static_cast<ChakraValueKind>(attr.is_list ? number - 1 : number);
  const FieldDescriptor* field = a.GetDescriptor()->FindFieldByNumber(number);
  if (!attr.is_list) {
    appendValue(a, field, false, 0, attr);
    return attr;
  }
  const Message& list = a.GetReflection()->GetMessage(a, field);
  const FieldDescriptor* values = list.GetDescriptor()->FindFieldByNumber(1);
  for (int i = 0; i < list.GetReflection()->FieldSize(list, values); ++i) appendValue(list, values, true, i, attr);
  return attr;
}

void toProto(const ChakraAttribute& attr, const std::string& where, pb::AttributeProto& a) {
  if (const auto problem = attributeProblem(attr)) {
    throw WorkloadError(where + ": attribute '" + attr.name + "': " + *problem);
  }
  a.set_name(attr.name);
  a.set_doc_string(attr.doc_string);
  if (attr.kind == ChakraValueKind::kNone) return;
  const int number = static_cast<int>(attr.kind) + (attr.is_list ? 1 : 0);
  const FieldDescriptor* field = a.GetDescriptor()->FindFieldByNumber(number);
  if (!attr.is_list) {
    storeValue(a, field, false, attr, 0);
    return;
  }
  Message& list = *a.GetReflection()->MutableMessage(&a, field);
  const FieldDescriptor* values = list.GetDescriptor()->FindFieldByNumber(1);
  for (size_t i = 0; i < valueCount(attr); ++i) storeValue(list, values, true, attr, i);
}

ChakraIoInfo fromProto(const pb::IOInfo& io) {
  return ChakraIoInfo{io.values(), io.shapes(), io.types()};
}

void toProto(const ChakraIoInfo& io, pb::IOInfo& out) {
  out.set_values(io.values);
  out.set_shapes(io.shapes);
  out.set_types(io.types);
}

std::string unknownTypeText(int type) {
  return "unknown node type " + std::to_string(type) + " (NodeType has 0.." +
         std::to_string(kNodeTypeNames.size() - 1) + ")";
}

/// A node message whose type is a NodeType.
ChakraNode fromProto(const pb::Node& message) {
  ChakraNode node;
  node.id = message.id();
  node.name = message.name();
  node.type = static_cast<ChakraNodeType>(message.type());
  node.ctrl_deps.assign(message.ctrl_deps().begin(), message.ctrl_deps().end());
  node.data_deps.assign(message.data_deps().begin(), message.data_deps().end());
  node.start_time_micros = message.start_time_micros();
  node.duration_micros = message.duration_micros();
  node.inputs = fromProto(message.inputs());
  node.outputs = fromProto(message.outputs());
  for (const pb::AttributeProto& a : message.attr()) node.attrs.push_back(fromProto(a));
  return node;
}

void setMetadata(const pb::GlobalMetadata& metadata, ChakraTrace& trace) {
  trace.version = metadata.version();
  for (const pb::AttributeProto& a : metadata.attr()) trace.metadata.push_back(fromProto(a));
}

/// The name under which `j` (a message of type `d` in protobuf's JSON mapping) writes a field
/// twice, as its proto name and its JSON name (duration_micros and durationMicros: protobuf's
/// parser keeps the last), in it or a message inside it; "" when none.
std::string fieldWrittenTwice(const Json& j, const google::protobuf::Descriptor* d) {
  if (!j.is_object()) return "";
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const bool proto = j.contains(f->name());
    const bool camel = f->json_name() != f->name() && j.contains(f->json_name());
    if (proto && camel) return f->name() + "' and '" + f->json_name();
    if (f->message_type() == nullptr || (!proto && !camel)) continue;
    const Json& v = j.at(proto ? f->name() : f->json_name());
    for (const Json& item : v.is_array() ? v : Json::array({v})) {
      if (std::string twice = fieldWrittenTwice(item, f->message_type()); !twice.empty()) return twice;
    }
  }
  return "";
}

/**
 * Chakra's jsonizer form: the GlobalMetadata message, then one Node message per node, each
 * in protobuf's JSON mapping (camelCase or proto names, 64-bit integers as strings or
 * numbers, enums by name or number), one after another. Parsed by libprotobuf's JSON parser;
 * errors name the message.
 */
ChakraTrace decodeMessageStream(const std::vector<std::string>& messages, std::string_view source) {
  const std::string name = source.empty() ? "Chakra trace" : std::string(source);
  auto parse = [&](const std::string& json, Message& message, size_t k) {
    // Keys written twice, as the one-document form refuses them (readers differ on which wins).
    const std::string at = name + ": JSON message #" + std::to_string(k);
    try {
      const std::string twice = fieldWrittenTwice(parseOrderedJsonInput(json), message.GetDescriptor());
      if (!twice.empty()) {
        throw WorkloadError(at + ": '" + twice + "' are one field written twice (readers differ on which wins)");
      }
    } catch (const JsonInputError& e) {
      if (!e.syntax()) throw WorkloadError(at + ": " + e.what());  // syntax errors: protobuf's message below
    }
    captureProtobufLog();
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;  // as the binary form skips them
    const auto status = google::protobuf::util::JsonStringToMessage(json, &message, options);
    if (!status.ok()) {
      throw WorkloadError(name + ": JSON message #" + std::to_string(k) + " (" + message.GetDescriptor()->name() +
                          "): " + std::string(status.message()));
    }
  };
  // Unknown fields are skipped, and so, by protobuf's parser, are unknown enum names: a node
  // type it does not know would read as INVALID_NODE. The key itself tells them apart.
  auto typeKey = [&](const std::string& json) -> std::optional<Json> {
    const Json j = Json::parse(json, nullptr, false);
    if (!j.is_object() || !j.contains("type")) return std::nullopt;
    return j.at("type");
  };
  ChakraTrace trace;
  trace.source = source;
  const Json first = Json::parse(messages[0], nullptr, false);
  if (first.is_object() && (first.contains("id") || first.contains("type"))) {
    throw WorkloadError(name + ": JSON message #0 is a Node; a trace starts with its GlobalMetadata");
  }
  pb::GlobalMetadata metadata;
  parse(messages[0], metadata, 0);
  setMetadata(metadata, trace);
  pb::Node node;
  for (size_t k = 1; k < messages.size(); ++k) {
    node.Clear();
    parse(messages[k], node, k);
    if (!pb::NodeType_IsValid(node.type())) {
      throw WorkloadError(name + ": JSON message #" + std::to_string(k) + ": " + unknownTypeText(node.type()));
    }
    if (node.type() == pb::INVALID_NODE) {
      const std::optional<Json> type = typeKey(messages[k]);
      if (type && *type != "INVALID_NODE" && *type != 0) {
        throw WorkloadError(name + ": JSON message #" + std::to_string(k) + ": unknown node type " + type->dump());
      }
    }
    trace.nodes.push_back(fromProto(node));
  }
  return trace;
}

/// Encoders refuse a node type outside NodeType: neither form could read it back.
void requireKnownType(const ChakraNode& node, const std::string& where) {
  if (chakraNodeTypeName(node.type).empty()) {
    throw WorkloadError(where + ": unknown node type " + std::to_string(static_cast<int32_t>(node.type)));
  }
}

/**
 * Reads the file's messages, each behind its length as a varint. The lengths are read here,
 * so errors name the byte where a message starts; the messages themselves are parsed by the
 * generated codec.
 */
class MessageReader {
 public:
  MessageReader(std::string_view bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

  bool atEnd() const { return pos_ >= bytes_.size(); }

  void next(Message& message, const std::string& what) {
    const size_t start = pos_;
    const auto* data = reinterpret_cast<const uint8_t*>(bytes_.data());
    google::protobuf::io::CodedInputStream length_in(data + pos_,
                                                     static_cast<int>(std::min<size_t>(bytes_.size() - pos_, 10)));
    uint64_t length = 0;
    if (!length_in.ReadVarint64(&length)) fail(start, "truncated or overlong length varint (" + what + ")");
    pos_ += static_cast<size_t>(length_in.CurrentPosition());
    const size_t left = bytes_.size() - pos_;
    if (length > left) {
      fail(start, what + ": length " + std::to_string(length) + " runs past the end of the file (" +
                      std::to_string(left) + " bytes left)");
    }
    if (length > static_cast<uint64_t>(std::numeric_limits<int>::max())) fail(start, what + ": longer than 2 GiB");
    captureProtobufLog();
    if (!message.ParseFromArray(data + pos_, static_cast<int>(length))) {
      fail(start, what + ": not a valid " + message.GetDescriptor()->name() + " message" + loggedReason());
    }
    pos_ += static_cast<size_t>(length);
  }

  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw WorkloadError(name_ + ": byte " + std::to_string(offset) + ": " + what);
  }

  size_t position() const { return pos_; }

 private:
  std::string_view bytes_;
  std::string name_;
  size_t pos_ = 0;
};

/// Appends `message` behind its length to `out`; throws when protobuf refused a value.
void appendMessage(const Message& message, const std::string& where, std::string& out) {
  captureProtobufLog();
  std::string body;
  message.SerializeToString(&body);
  if (!protobuf_log.empty()) {
    throw WorkloadError(where + ": cannot write (a string is not UTF-8; use a bytes attribute)" + loggedReason());
  }
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteVarint64(body.size());
  }
  out += body;
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
  // A send's or receive's peer may be left to its process group (programFromRankTraces);
  // when given, it must be a rank.
  const bool send = node.type == ChakraNodeType::kCommSend;
  if (node.type == ChakraNodeType::kCommSend || node.type == ChakraNodeType::kCommRecv) {
    const std::string_view peer = send ? chakra_attr::kCommDst : chakra_attr::kCommSrc;
    if (node.attribute(peer) != nullptr && !(send ? node.commDst() : node.commSrc())) {
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

std::string readWholeFile(const std::filesystem::path& path, TraceFormat format) {
  InputFile input = readInputFile(path, format == TraceFormat::kBinary ? InputKind::kBinary : InputKind::kText);
  if (!input.ok()) throw WorkloadError(path.string() + ": cannot open Chakra trace: " + input.problem);
  return std::move(input.text);
}

}  // namespace

ChakraTrace decodeChakraBinary(std::string_view bytes, std::string_view source) {
  const std::string name = source.empty() ? "Chakra trace" : std::string(source);
  if (bytes.empty()) throw WorkloadError(name + ": empty file (expected GlobalMetadata, then nodes)");
  ChakraTrace trace;
  trace.source = source;
  MessageReader file(bytes, name);
  pb::GlobalMetadata metadata;
  file.next(metadata, "GlobalMetadata message");
  // Field 1 in another wire type than version's is a Node's id: a file from before
  // GlobalMetadata existed (Chakra 0.0.4) would otherwise lose its first node.
  const google::protobuf::UnknownFieldSet& unknown = metadata.GetReflection()->GetUnknownFields(metadata);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == 1) {
      file.fail(0,
                "GlobalMetadata message: field 1 is not a version string (files from before Chakra 0.0.4 "
                "start with a Node instead)");
    }
  }
  setMetadata(metadata, trace);
  pb::Node message;
  while (!file.atEnd()) {
    const size_t start = file.position();
    message.Clear();
    file.next(message, "Node message");
    if (!pb::NodeType_IsValid(message.type())) file.fail(start, unknownTypeText(message.type()));
    trace.nodes.push_back(fromProto(message));
  }
  return trace;
}

std::string encodeChakraBinary(const ChakraTrace& trace) {
  const std::string source = sourceName(trace);
  std::string out;
  pb::GlobalMetadata metadata;
  metadata.set_version(trace.version);
  for (const auto& attr : trace.metadata) toProto(attr, source + ": metadata", *metadata.add_attr());
  appendMessage(metadata, source + ": metadata", out);
  pb::Node message;
  for (const ChakraNode& node : trace.nodes) {
    const std::string where = source + ": node " + std::to_string(node.id);
    requireKnownType(node, where);
    message.Clear();
    message.set_id(node.id);
    message.set_name(node.name);
    message.set_type(static_cast<pb::NodeType>(node.type));
    message.mutable_ctrl_deps()->Add(node.ctrl_deps.begin(), node.ctrl_deps.end());
    message.mutable_data_deps()->Add(node.data_deps.begin(), node.data_deps.end());
    message.set_start_time_micros(node.start_time_micros);
    message.set_duration_micros(node.duration_micros);
    if (node.inputs != ChakraIoInfo{}) toProto(node.inputs, *message.mutable_inputs());
    if (node.outputs != ChakraIoInfo{}) toProto(node.outputs, *message.mutable_outputs());
    for (const auto& attr : node.attrs) toProto(attr, where, *message.add_attr());
    appendMessage(message, where, out);
  }
  return out;
}

namespace {

/// The JSON objects of `text` one after another, each its own slice of `text` (their syntax is
/// left to the parser of each), or none when `text` is not such a sequence: something else
/// between them, an unbalanced object, or nesting deeper than kMaxJsonInputDepth.
std::vector<std::string> jsonObjects(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (true) {
    while (i < text.size() && space(text[i])) ++i;
    if (i == text.size()) return out;
    if (text[i] != '{') return {};
    const size_t start = i;
    int depth = 0;
    bool in_string = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        if (++depth > kMaxJsonInputDepth) return {};
      } else if ((c == '}' || c == ']') && --depth == 0) {
        break;
      }
    }
    if (i >= text.size()) return {};
    out.emplace_back(text.substr(start, i + 1 - start));
    ++i;
  }
}

}  // namespace

ChakraTrace decodeChakraJson(std::string_view text, std::string_view source) {
  Json root;
  try {
    root = parseOrderedJsonInput(text);
  } catch (const JsonInputError& e) {
    // Several JSON values one after another: Chakra's jsonizer form.
    if (const std::vector<std::string> messages = jsonObjects(text); e.syntax() && messages.size() > 1) {
      return decodeMessageStream(messages, source);
    }
    throw WorkloadError(std::string(source) + ": " + e.what());
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
  const std::string bytes = readWholeFile(path, format);
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
  for (uint32_t rank = 0; rank < ranks; ++rank) traces.push_back(readRankTrace(prefix, rank, ranks));
  return traces;
}

ChakraTrace readRankTrace(const std::string& prefix, uint32_t rank, uint32_t ranks) {
  const std::string stem = prefix + "." + std::to_string(rank);
  const std::filesystem::path binary = stem + ".et";
  const std::filesystem::path json = stem + ".json";
  if (std::filesystem::exists(binary)) return readChakraFile(binary);
  if (std::filesystem::exists(json)) return readChakraFile(json);
  throw WorkloadError(binary.string() + ": missing rank file (rank " + std::to_string(rank) + " of " +
                      std::to_string(ranks) + "; no " + json.filename().string() + " either)");
}

}  // namespace mv
