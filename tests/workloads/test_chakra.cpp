/**
 * @file test_chakra.cpp
 * Chakra execution traces: binary and JSON round trips with every attribute kind, byte
 * sequences assembled by hand from the protobuf wire rules, packed and unpacked repeated
 * fields, skipping of unknown fields, every decoding and validation error (including every
 * truncation of a valid file), cycle reports, topological order and the per-rank file set.
 */
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "tests/support/temp_dir.hpp"
#include "workloads/chakra.hpp"
#include "workloads/chakra_program.hpp"

using namespace mv;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Kind = ChakraValueKind;

namespace {

using test::TempDir;

/// Runs `f` and returns the message of the WorkloadError it throws, or a marker if none.
template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "<no WorkloadError thrown>";
}

/// Raw bytes from their values.
std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out.push_back(static_cast<char>(v));
  return out;
}

/// `body` behind its length as a varint: one byte below 128, else low 7 bits | 0x80, then the rest.
std::string withLength(const std::string& body) {
  const auto n = static_cast<int>(body.size());
  REQUIRE(n < 128 * 128);
  return (n < 128 ? bytes({n}) : bytes({(n & 0x7f) | 0x80, n >> 7})) + body;
}

/// Decodes and validates, like readChakraFile does for a file.
ChakraTrace load(const std::string& binary) {
  ChakraTrace trace = decodeChakraBinary(binary, "mem.et");
  validateChakraTrace(trace);
  return trace;
}

ChakraAttribute attr(std::string name, Kind kind, bool is_list) {
  ChakraAttribute a;
  a.name = std::move(name);
  a.kind = kind;
  a.is_list = is_list;
  return a;
}

ChakraAttribute ints(std::string name, Kind kind, std::vector<int64_t> values, bool is_list = true) {
  ChakraAttribute a = attr(std::move(name), kind, is_list);
  a.ints = std::move(values);
  return a;
}

ChakraAttribute uints(std::string name, Kind kind, std::vector<uint64_t> values, bool is_list = true) {
  ChakraAttribute a = attr(std::move(name), kind, is_list);
  a.uints = std::move(values);
  return a;
}

ChakraAttribute reals(std::string name, Kind kind, std::vector<double> values, bool is_list = true) {
  ChakraAttribute a = attr(std::move(name), kind, is_list);
  a.reals = std::move(values);
  return a;
}

ChakraAttribute strings(std::string name, Kind kind, std::vector<std::string> values, bool is_list = true) {
  ChakraAttribute a = attr(std::move(name), kind, is_list);
  a.strings = std::move(values);
  return a;
}

/// Every scalar and list member of AttributeProto's oneof, with extreme values, plus an
/// attribute without a value and an empty list.
std::vector<ChakraAttribute> everyAttributeKind() {
  constexpr auto i32 = std::numeric_limits<int32_t>::min();
  constexpr auto i32max = std::numeric_limits<int32_t>::max();
  constexpr auto i64 = std::numeric_limits<int64_t>::min();
  constexpr auto i64max = std::numeric_limits<int64_t>::max();
  constexpr auto u32 = std::numeric_limits<uint32_t>::max();
  constexpr auto u64 = std::numeric_limits<uint64_t>::max();
  std::vector<ChakraAttribute> a = {
      reals("double_val", Kind::kDouble, {-2.5e300}, false),
      reals("double_list", Kind::kDouble, {0.0, 1e-300, 3.25}),
      reals("float_val", Kind::kFloat, {static_cast<double>(0.1f)}, false),
      reals("float_list", Kind::kFloat, {1.5, -3.25}),
      ints("int32_val", Kind::kInt32, {i32}, false),
      ints("int32_list", Kind::kInt32, {-1, 0, i32max}),
      ints("int64_val", Kind::kInt64, {i64}, false),
      ints("int64_list", Kind::kInt64, {-1, i64max}),
      uints("uint32_val", Kind::kUint32, {u32}, false),
      uints("uint32_list", Kind::kUint32, {0, 1, 4000000000u}),
      uints("uint64_val", Kind::kUint64, {u64}, false),
      uints("uint64_list", Kind::kUint64, {u64, 300}),
      ints("sint32_val", Kind::kSint32, {-123456}, false),
      ints("sint32_list", Kind::kSint32, {i32, i32max, -1}),
      ints("sint64_val", Kind::kSint64, {i64}, false),
      ints("sint64_list", Kind::kSint64, {i64max, -1, 0}),
      uints("fixed32_val", Kind::kFixed32, {0xdeadbeefu}, false),
      uints("fixed32_list", Kind::kFixed32, {0, u32}),
      uints("fixed64_val", Kind::kFixed64, {0x0123456789abcdefu}, false),
      uints("fixed64_list", Kind::kFixed64, {u64, 0}),
      ints("sfixed32_val", Kind::kSfixed32, {-7}, false),
      ints("sfixed32_list", Kind::kSfixed32, {i32, 5}),
      ints("sfixed64_val", Kind::kSfixed64, {-8}, false),
      ints("sfixed64_list", Kind::kSfixed64, {i64, i64max}),
      ints("bool_val", Kind::kBool, {1}, false),
      ints("bool_list", Kind::kBool, {1, 0, 1}),
      strings("string_val", Kind::kString, {"h\xc3\xa9llo"}, false),
      strings("string_list", Kind::kString, {"a", "", "b"}),
      strings("bytes_val", Kind::kBytes, {std::string("\x00\xff\x80", 3)}, false),
      strings("bytes_list", Kind::kBytes, {"", "\x01", "xyz!"}),
      attr("empty_list", Kind::kInt64, true),
  };
  ChakraAttribute no_value;
  no_value.name = "no_value";
  no_value.doc_string = "an AttributeProto with its oneof unset";
  a.push_back(no_value);
  return a;
}

ChakraNode node(uint64_t id, std::string name, ChakraNodeType type) {
  ChakraNode n;
  n.id = id;
  n.name = std::move(name);
  n.type = type;
  return n;
}

/**
 * Six nodes of every comm kind. The first node in the file depends on the last, so every
 * file prefix that ends between two nodes lacks a dependency and fails validation.
 */
ChakraTrace sampleTrace() {
  ChakraTrace t;
  t.version = "0.0.4";
  t.metadata.push_back(strings("schema", Kind::kString, {"1.0.2-chakra.0.0.4"}, false));

  ChakraNode embed = node(10, "embedding", ChakraNodeType::kComp);
  embed.data_deps = {50};
  embed.start_time_micros = 5;
  embed.duration_micros = 120;
  embed.inputs = {"[[1,2]]", "[[4,2048]]", "['Tensor(long)']"};
  embed.outputs = {"[[3]]", "[[4,2048,4096]]", "['Tensor(bf16)']"};
  embed.setAttribute(ints(std::string(chakra_attr::kIsCpuOp), Kind::kBool, {0}, false));
  embed.setAttribute(ints(std::string(chakra_attr::kNumOps), Kind::kInt64, {1000000000}, false));
  embed.setAttribute(uints(std::string(chakra_attr::kTensorSize), Kind::kUint64, {4096}, false));

  ChakraNode all_reduce = node(20, "all_reduce_grad", ChakraNodeType::kCommColl);
  all_reduce.data_deps = {10};
  all_reduce.setCommType(ChakraCollectiveType::kAllReduce);
  all_reduce.setCommSize(uint64_t{1} << 30);
  all_reduce.setPgName("dp");
  all_reduce.setAttribute(ints(std::string(chakra_attr::kInvolvedDim), Kind::kBool, {1, 0}));

  ChakraNode send = node(30, "send_act", ChakraNodeType::kCommSend);
  send.ctrl_deps = {10};
  send.setCommSize(65536);
  send.setCommDst(1);
  send.setCommTag(7);

  ChakraNode recv = node(40, "recv_grad", ChakraNodeType::kCommRecv);
  recv.ctrl_deps = {30};
  recv.data_deps = {20};
  recv.setCommSize(65536);
  recv.setCommSrc(1);
  recv.setCommTag(8);

  ChakraNode kinds = node(45, "all_kinds", ChakraNodeType::kComp);
  kinds.data_deps = {40};
  kinds.duration_micros = 1;
  kinds.attrs = everyAttributeKind();

  ChakraNode load_weights = node(50, "load_weights", ChakraNodeType::kMemLoad);
  load_weights.duration_micros = 300;

  t.nodes = {embed, all_reduce, send, recv, kinds, load_weights};
  return t;
}

void requireSameTrace(const ChakraTrace& got, const ChakraTrace& want) {
  CHECK(got.version == want.version);
  CHECK(got.metadata == want.metadata);
  REQUIRE(got.nodes.size() == want.nodes.size());
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    INFO("node #" << i);
    CHECK(got.nodes[i] == want.nodes[i]);
  }
}

}  // namespace

TEST_CASE("binary and JSON round trips keep every field and every attribute kind", "[workloads][chakra]") {
  const ChakraTrace trace = sampleTrace();
  REQUIRE_NOTHROW(validateChakraTrace(trace));
  CHECK(trace.nodes[4].attrs.size() == 32);

  const std::string binary = encodeChakraBinary(trace);
  const ChakraTrace from_binary = decodeChakraBinary(binary, "t.et");
  requireSameTrace(from_binary, trace);
  CHECK(from_binary.source == "t.et");

  const ChakraTrace from_json = decodeChakraJson(encodeChakraJson(trace), "t.json");
  requireSameTrace(from_json, trace);
  // Binary -> JSON -> binary reproduces the bytes exactly.
  CHECK(encodeChakraBinary(from_json) == binary);

  const TempDir dir;
  for (const std::string name : {"rank.0.et", "rank.0.json"}) {
    INFO(name);
    writeChakraFile(dir.path(name), trace);
    const ChakraTrace from_file = readChakraFile(dir.path(name));
    requireSameTrace(from_file, trace);
    CHECK(from_file.source == dir.path(name).string());
  }
}

TEST_CASE("typed comm helpers write ASTRA-sim's kinds and read any integer kind", "[workloads][chakra]") {
  const ChakraTrace trace = sampleTrace();
  const ChakraNode& coll = trace.nodes[1];
  CHECK(coll.commType() == ChakraCollectiveType::kAllReduce);
  CHECK(coll.commSize() == uint64_t{1} << 30);
  CHECK(coll.pgName() == "dp");
  CHECK(coll.attribute("comm_type")->kind == Kind::kInt64);  // the converters' int64_val
  CHECK(coll.attribute("comm_size")->kind == Kind::kInt64);
  CHECK(coll.isComm());
  CHECK_FALSE(trace.nodes[0].isComm());
  CHECK(trace.nodes[0].attribute("is_cpu_op")->boolean() == false);

  const ChakraNode& send = trace.nodes[2];
  CHECK(send.commDst() == 1u);
  CHECK(send.commTag() == 7u);
  CHECK_FALSE(send.commSrc());
  CHECK(send.attribute("comm_dst")->kind == Kind::kInt32);  // ASTRA-sim reads int32_val

  ChakraNode n = node(1, "x", ChakraNodeType::kCommRecv);
  n.setAttribute(uints("comm_size", Kind::kUint64, {123}, false));
  n.setAttribute(ints("comm_src", Kind::kSint64, {5}, false));
  n.setAttribute(uints("comm_type", Kind::kFixed32, {7}, false));
  CHECK(n.commSize() == 123u);
  CHECK(n.commSrc() == 5u);
  CHECK(n.commType() == ChakraCollectiveType::kReduceScatter);
  n.setAttribute(ints("comm_src", Kind::kInt64, {-1}, false));
  CHECK_FALSE(n.commSrc());
  n.setCommSrc(4000000000u);
  CHECK(n.commSrc() == 4000000000u);
  CHECK(n.attribute("comm_src")->kind == Kind::kUint32);

  // setAttribute replaces every attribute of that name; attribute() returns the last one.
  n.attrs.push_back(ints("comm_tag", Kind::kInt32, {1}, false));
  n.attrs.push_back(ints("comm_tag", Kind::kInt32, {2}, false));
  CHECK(n.commTag() == 2u);
  n.setCommTag(3);
  CHECK(n.commTag() == 3u);
  CHECK(std::count_if(n.attrs.begin(), n.attrs.end(), [](const auto& a) { return a.name == "comm_tag"; }) == 1);

  CHECK(chakraNodeTypeName(ChakraNodeType::kCommColl) == "COMM_COLL_NODE");
  CHECK(chakraCollectiveTypeName(ChakraCollectiveType::kReduceScatter) == "REDUCE_SCATTER");
  CHECK(chakraCollectiveTypeName(static_cast<ChakraCollectiveType>(42)).empty());
}

TEST_CASE("a byte sequence assembled by hand decodes to the expected nodes", "[workloads][chakra]") {
  // GlobalMetadata { version (1, length-delimited) = "1.0" }: key 1<<3|2 = 0x0a.
  const std::string metadata = withLength(bytes({0x0a, 3}) + "1.0");
  // Node { id (1) = 1, type (3) = COMP_NODE (4), duration_micros (7) = 150 = 0x96 0x01 }.
  const std::string compute = withLength(bytes({0x08, 0x01, 0x18, 0x04, 0x38, 0x96, 0x01}));
  // AttributeProto { name (1) = "comm_type", int64_val (9, varint, key 0x48) = REDUCE_SCATTER (7) }.
  const std::string comm_type = withLength(bytes({0x0a, 9}) + "comm_type" + bytes({0x48, 0x07}));
  // int64_val 2^20: 7-bit groups 0, 0, 0x40 → 0x80 0x80 0x40.
  const std::string comm_size = withLength(bytes({0x0a, 9}) + "comm_size" + bytes({0x48, 0x80, 0x80, 0x40}));
  // sint64_val (17, varint): key 17<<3 = 136 → 0x88 0x01; zigzag(-2) = 3.
  const std::string sint = withLength(bytes({0x0a, 1}) + "s" + bytes({0x88, 0x01, 0x03}));
  // double_val (3, fixed64, key 0x19) = 1.5 = 0x3ff8000000000000, little-endian.
  const std::string real = withLength(bytes({0x0a, 1, 'd', 0x19, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}));
  // int32_val (7, key 0x38) = -1: sign-extended to a ten-byte varint.
  const std::string negative =
      withLength(bytes({0x0a, 1, 'n', 0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  // Node { id = 300 (0xac 0x02), name (2) = "ar", type = COMM_COLL_NODE (7),
  //        data_deps (5, packed: key 0x2a) = [1], attr (10, key 0x52) × 5 }.
  const std::string collective = withLength(bytes({0x08, 0xac, 0x02, 0x12, 2, 'a', 'r', 0x18, 0x07, 0x2a, 0x01, 0x01}) +
                                            bytes({0x52}) + comm_type + bytes({0x52}) + comm_size + bytes({0x52}) +
                                            sint + bytes({0x52}) + real + bytes({0x52}) + negative);
  const std::string file = metadata + compute + collective;

  const ChakraTrace trace = load(file);
  CHECK(trace.version == "1.0");
  REQUIRE(trace.nodes.size() == 2);
  const ChakraNode& a = trace.nodes[0];
  CHECK(a.id == 1);
  CHECK(a.type == ChakraNodeType::kComp);
  CHECK(a.duration_micros == 150);
  const ChakraNode& b = trace.nodes[1];
  CHECK(b.id == 300);
  CHECK(b.name == "ar");
  CHECK(b.type == ChakraNodeType::kCommColl);
  CHECK(b.data_deps == std::vector<uint64_t>{1});
  CHECK(b.ctrl_deps.empty());
  CHECK(b.commType() == ChakraCollectiveType::kReduceScatter);
  CHECK(b.commSize() == uint64_t{1} << 20);
  CHECK(b.attribute("s")->kind == Kind::kSint64);
  CHECK(b.attribute("s")->integer() == -2);
  CHECK(b.attribute("d")->reals == std::vector<double>{1.5});
  CHECK(b.attribute("n")->kind == Kind::kInt32);
  CHECK(b.attribute("n")->integer() == -1);
  // The writer emits fields in number order with packed deps: the same bytes.
  CHECK(encodeChakraBinary(trace) == file);
}

TEST_CASE("packed and unpacked repeated fields decode alike", "[workloads][chakra]") {
  const std::string metadata = withLength("");
  const std::string roots = withLength(bytes({0x08, 0x01, 0x18, 0x04})) + withLength(bytes({0x08, 0x02, 0x18, 0x04}));
  // Node 3 with data_deps [1, 2]: unpacked (field 5 varint, key 0x28) or packed (key 0x2a).
  const std::string unpacked = withLength(bytes({0x08, 0x03, 0x18, 0x04, 0x28, 0x01, 0x28, 0x02}));
  const std::string packed = withLength(bytes({0x08, 0x03, 0x18, 0x04, 0x2a, 0x02, 0x01, 0x02}));
  // Both forms in one node append; ctrl_deps (4) packed (key 0x22) and unpacked (key 0x20).
  const std::string mixed =
      withLength(bytes({0x08, 0x03, 0x18, 0x04, 0x2a, 0x01, 0x01, 0x28, 0x02, 0x22, 0x01, 0x01, 0x20, 0x02}));
  const auto deps = [&](const std::string& third) { return load(metadata + roots + third).nodes[2]; };
  CHECK(deps(unpacked).data_deps == std::vector<uint64_t>{1, 2});
  CHECK(deps(packed).data_deps == std::vector<uint64_t>{1, 2});
  CHECK(deps(mixed).data_deps == std::vector<uint64_t>{1, 2});
  CHECK(deps(mixed).ctrl_deps == std::vector<uint64_t>{1, 2});

  // Int64List { values (1) }: unpacked (key 0x08) or packed (key 0x0a); int64_list is field 10.
  const auto listNode = [&](const std::string& list_body) {
    const std::string attr_body = bytes({0x0a, 1, 'l', 0x52}) + withLength(list_body);
    return load(metadata + withLength(bytes({0x08, 0x01, 0x18, 0x04, 0x52}) + withLength(attr_body))).nodes[0];
  };
  const std::vector<int64_t> five_six = {5, 6};
  CHECK(listNode(bytes({0x08, 0x05, 0x08, 0x06})).attribute("l")->ints == five_six);
  CHECK(listNode(bytes({0x0a, 0x02, 0x05, 0x06})).attribute("l")->ints == five_six);
  CHECK(listNode(bytes({0x0a, 0x01, 0x05, 0x08, 0x06})).attribute("l")->ints == five_six);

  // Fixed32List (field 20): unpacked elements are fixed32 (key 0x0d), packed a run of 4-byte words.
  const auto fixedNode = [&](const std::string& list_body) {
    const std::string attr_body = bytes({0x0a, 1, 'f', 0xa2, 0x01}) + withLength(list_body);
    return load(metadata + withLength(bytes({0x08, 0x01, 0x18, 0x04, 0x52}) + withLength(attr_body))).nodes[0];
  };
  const std::vector<uint64_t> words = {1, 0x01020304};
  CHECK(fixedNode(bytes({0x0d, 1, 0, 0, 0, 0x0d, 4, 3, 2, 1})).attribute("f")->uints == words);
  CHECK(fixedNode(bytes({0x0a, 8, 1, 0, 0, 0, 4, 3, 2, 1})).attribute("f")->uints == words);
}

TEST_CASE("unknown fields of every wire type are skipped", "[workloads][chakra]") {
  // Field numbers no message of the schema uses (AttributeProto's oneof spans 3..32):
  // 40 varint (key 40<<3 = 320: 0xc0 0x02), 41 fixed64 (0xc9 0x02), 42 length-delimited
  // (0xd2 0x02), 43 fixed32 (0xdd 0x02), 44 group (start 0xe3 0x02 ... end 0xe4 0x02) holding a
  // varint and a nested group 45 (0xeb 0x02 ... 0xec 0x02).
  const std::string unknown = bytes({0xc0, 0x02, 0x2a, 0xc9, 0x02, 1,    2,    3,    4,    5,    6,   7, 8,
                                     0xd2, 0x02, 3,    'x',  'y',  'z',  0xdd, 0x02, 1,    2,    3,   4, 0xe3,
                                     0x02, 0x08, 0x05, 0xeb, 0x02, 0x10, 0x01, 0xec, 0x02, 0xe4, 0x02});
  // Node.storage (11, key 0x5a): a message this reader does not keep.
  const std::string storage = bytes({0x5a, 0x02, 0x08, 0x01});
  // Known content: metadata version "v"; node 7 COMP_NODE with inputs.values "i" (inputs is
  // field 8, key 0x42) and an attribute "a" with int64_val 9.
  const std::string clean_attr = bytes({0x0a, 1, 'a', 0x48, 0x09});
  const std::string clean_io = bytes({0x0a, 1, 'i'});
  const auto file = [&](const std::string& extra, const std::string& node_extra) {
    return withLength(bytes({0x0a, 1, 'v'}) + extra) +
           withLength(bytes({0x08, 0x07}) + extra + node_extra + bytes({0x18, 0x04, 0x42}) +
                      withLength(clean_io + extra) + bytes({0x52}) + withLength(clean_attr + extra));
  };
  const ChakraTrace clean = load(file("", ""));
  const ChakraTrace noisy = load(file(unknown, storage));
  requireSameTrace(noisy, clean);
  CHECK(noisy.nodes[0].inputs.values == "i");
  CHECK(noisy.nodes[0].attribute("a")->integer() == 9);

  // Inside a list message too: Int64List { values = 4, unknown field 2 varint }.
  const std::string list_attr = bytes({0x0a, 1, 'l', 0x52, 4, 0x08, 0x04, 0x10, 0x63});
  const ChakraTrace listed =
      load(withLength("") + withLength(bytes({0x08, 0x01, 0x18, 0x04, 0x52}) + withLength(list_attr)));
  CHECK(listed.nodes[0].attribute("l")->ints == std::vector<int64_t>{4});
}

TEST_CASE("wire-format errors name the file and the message's byte offset", "[workloads][chakra]") {
  const auto decodeError = [](const std::string& file) { return errorOf([&] { decodeChakraBinary(file, "r.3.et"); }); };
  const std::string md = withLength("");
  CHECK_THAT(decodeError(""), Contains("r.3.et: empty file"));
  CHECK_THAT(decodeError(bytes({0x80})),
             Contains("r.3.et: byte 0: truncated or overlong length varint (GlobalMetadata message)"));
  CHECK_THAT(decodeError(bytes({0x05, 0x0a})), Contains("byte 0: GlobalMetadata message: length 5 runs past the end "
                                                        "of the file (1 bytes left)"));
  CHECK_THAT(decodeError(md + bytes({0x02, 0x08})),
             Contains("byte 1: Node message: length 2 runs past the end of the file (1 bytes left)"));
  // Inside a message, the generated codec finds the fault; the error names the message.
  // version claims 5 bytes inside a 3-byte GlobalMetadata:
  CHECK_THAT(decodeError(bytes({0x03, 0x0a, 0x05, 'a'})),
             Contains("r.3.et: byte 0: GlobalMetadata message: not a valid GlobalMetadata message"));
  // Field 15 with wire type 6 (key 0x7e), field number 0, a truncated varint (duration_micros),
  // a truncated fixed64 (double_val, 3 of 8 bytes), groups unbalanced:
  for (const std::string& body : {bytes({0x7e}), bytes({0x00}), bytes({0x38, 0x96}),
                                  bytes({0x52, 5, 0x0a, 0, 0x19, 1, 2}), bytes({0x7c}), bytes({0x7b, 0x08, 0x01})}) {
    CHECK_THAT(decodeError(md + withLength(body)), Contains("r.3.et: byte 1: Node message: not a valid Node message"));
  }
  // Hostile nesting is refused too, not followed.
  std::string nested;
  for (int i = 0; i < 200; ++i) nested += bytes({0x7b});
  CHECK_THAT(decodeError(md + withLength(nested)), Contains("not a valid Node message"));
  // A string that is not UTF-8 (Node.name): proto3 strings must be; protobuf's reason is kept.
  CHECK_THAT(decodeError(md + withLength(bytes({0x12, 0x01, 0xff}))),
             Contains("not a valid Node message (") && Contains("UTF-8"));
  CHECK_THAT(decodeError(md + withLength(bytes({0x18, 0x2a}))),
             Contains("r.3.et: byte 1: unknown node type 42 (NodeType has 0..10)"));
  // A known field in another wire type is an unknown field to protobuf, and skipped
  // (Node.id as length-delimited here).
  CHECK(load(md + withLength(bytes({0x0a, 0x01, 'x', 0x18, 0x04}))).nodes[0].id == 0);
  // A file written before GlobalMetadata existed starts with a Node (its id a varint).
  CHECK_THAT(decodeError(withLength(bytes({0x08, 0x01})) + withLength(bytes({0x08, 0x02}))),
             Contains("byte 0: GlobalMetadata message: field 1 is not a version string"));
  // Writing refuses a string protobuf would not read back.
  ChakraTrace bad = sampleTrace();
  bad.source = "w.et";
  bad.nodes[0].name = "\xff";
  CHECK_THAT(errorOf([&] { encodeChakraBinary(bad); }), Contains("w.et: node ") && Contains("a string is not UTF-8"));
}

TEST_CASE("every truncation of a valid file throws WorkloadError", "[workloads][chakra]") {
  const std::string full = encodeChakraBinary(sampleTrace());
  REQUIRE(full.size() > 300);
  const TempDir dir;
  REQUIRE_NOTHROW(readChakraFile(dir.write("full.et", full)));
  size_t failures = 0;
  std::string first_failure;
  for (size_t length = 0; length < full.size(); ++length) {
    const auto path = dir.write("cut.et", full.substr(0, length));
    const std::string error = errorOf([&] { readChakraFile(path); });
    if (error.rfind(path.string() + ": ", 0) != 0 && failures++ == 0) {
      first_failure = "prefix of " + std::to_string(length) + " bytes: " + error;
    }
  }
  INFO(first_failure);
  CHECK(failures == 0);

  // JSON too: every proper prefix of the document (without its final newline) is invalid JSON.
  std::string json = encodeChakraJson(sampleTrace());
  REQUIRE(json.back() == '\n');
  json.pop_back();
  size_t json_failures = 0;
  for (size_t length = 0; length < json.size(); ++length) {
    const std::string error = errorOf([&] { decodeChakraJson(json.substr(0, length), "t.json"); });
    if (error.rfind("t.json: invalid JSON", 0) != 0) ++json_failures;
  }
  CHECK(json_failures == 0);
}

TEST_CASE("corrupting any byte of a valid file never crashes", "[workloads][chakra]") {
  // Each corrupted file either decodes to some trace or is rejected with WorkloadError.
  const std::string full = encodeChakraBinary(sampleTrace());
  size_t rejected = 0;
  for (size_t at = 0; at < full.size(); ++at) {
    for (const int flip : {0x01, 0x80, 0xff}) {
      std::string corrupt = full;
      corrupt[at] = static_cast<char>(static_cast<uint8_t>(corrupt[at]) ^ flip);
      try {
        load(corrupt);
      } catch (const WorkloadError&) {
        ++rejected;
      }
    }
  }
  CHECK(rejected > full.size());
}

TEST_CASE("validation rejects traces a simulator cannot run", "[workloads][chakra]") {
  const auto validateError = [](ChakraTrace t) {
    t.source = "v.et";
    return errorOf([&] { validateChakraTrace(t); });
  };
  ChakraTrace t = sampleTrace();
  CHECK(validateError(t) == "<no WorkloadError thrown>");

  ChakraTrace empty = t;
  empty.nodes.clear();
  CHECK_THAT(validateError(empty), Contains("v.et: no nodes"));

  ChakraTrace duplicate = t;
  duplicate.nodes[3].id = 20;
  CHECK_THAT(validateError(duplicate), Contains("v.et: node 20 ('recv_grad'): duplicate node id (nodes #1 and #3"));

  ChakraTrace missing = t;
  missing.nodes[2].ctrl_deps = {99};
  CHECK_THAT(validateError(missing), Contains("node 30 ('send_act'): depends on node 99, which is not in the trace"));

  ChakraTrace no_size = t;
  no_size.nodes[2].attrs.clear();
  CHECK_THAT(validateError(no_size), Contains("node 30 ('send_act'): COMM_SEND_NODE without comm_size"));

  ChakraTrace bad_size = t;
  bad_size.nodes[2].setAttribute(strings("comm_size", Kind::kString, {"64KiB"}, false));
  CHECK_THAT(validateError(bad_size), Contains("comm_size must be a non-negative integer"));

  ChakraTrace no_type = t;
  no_type.nodes[1].attrs.erase(no_type.nodes[1].attrs.begin());
  CHECK_THAT(validateError(no_type), Contains("node 20 ('all_reduce_grad'): COMM_COLL_NODE without comm_type"));

  ChakraTrace bad_type = t;
  bad_type.nodes[1].setAttribute(ints("comm_type", Kind::kInt64, {42}, false));
  CHECK_THAT(validateError(bad_type), Contains("comm_type 42 is not a CollectiveCommType (0..9)"));

  ChakraTrace no_dst = t;
  no_dst.nodes[2].attrs.erase(no_dst.nodes[2].attrs.begin() + 1);
  // A peer may be left to the process group (per-rank programs); the stage layout needs it.
  CHECK(validateError(no_dst) == "<no WorkloadError thrown>");
  ChakraTrace lone;
  lone.source = "v.et";
  lone.nodes = {no_dst.nodes[2]};
  lone.nodes[0].data_deps.clear();
  lone.nodes[0].ctrl_deps.clear();
  CHECK_THROWS_WITH(programFromChakra({lone}, Parallelism{}), "v.et: node 30: COMM_SEND_NODE without comm_dst");

  ChakraTrace no_src = t;
  no_src.nodes[3].attrs.erase(no_src.nodes[3].attrs.begin() + 1);
  CHECK(validateError(no_src) == "<no WorkloadError thrown>");

  ChakraTrace negative_src = t;
  negative_src.nodes[3].setAttribute(ints("comm_src", Kind::kInt32, {-1}, false));
  CHECK_THAT(validateError(negative_src), Contains("comm_src must be an integer rank"));

  ChakraTrace bad_attr = t;
  bad_attr.nodes[0].attrs.push_back(ints("two", Kind::kInt64, {1, 2}, false));
  CHECK_THAT(validateError(bad_attr),
             Contains("node 10 ('embedding'): attribute 'two': a scalar must hold exactly one"));
  CHECK_THAT(errorOf([&] { encodeChakraBinary(bad_attr); }), Contains("attribute 'two'"));
  CHECK_THAT(errorOf([&] { encodeChakraJson(bad_attr); }), Contains("attribute 'two'"));

  ChakraTrace out_of_range = t;
  out_of_range.nodes[0].attrs.push_back(ints("big", Kind::kInt32, {int64_t{1} << 40}, false));
  CHECK_THAT(validateError(out_of_range), Contains("int32 value 1099511627776 out of range"));

  ChakraTrace wrong_vector = t;
  wrong_vector.nodes[0].attrs.push_back(uints("w", Kind::kInt64, {1}, false));
  CHECK_THAT(validateError(wrong_vector), Contains("values stored in a vector that does not belong to kind int64"));

  // Beyond the engine's limits (docs/sweep.md "Input limits"): 1e13 us became a negative
  // compute time that ran with status ok.
  ChakraTrace long_node = t;
  long_node.nodes[0].duration_micros = 10'000'000'000'000;
  CHECK_THAT(validateError(long_node),
             Contains("node 10 ('embedding'): duration_micros 10000000000000 is more than 1000000000 (1,000 s"));
  ChakraTrace huge_size = t;
  huge_size.nodes[2].setAttribute(uints("comm_size", Kind::kUint64, {uint64_t{1} << 50}, false));
  CHECK_THAT(validateError(huge_size), Contains("node 30 ('send_act'): comm_size 1125899906842624 is more than 2^44"));

  ChakraTrace bad_node_type = t;
  bad_node_type.nodes[0].type = static_cast<ChakraNodeType>(77);
  CHECK_THAT(validateError(bad_node_type), Contains("node 10 ('embedding'): unknown node type 77"));
  CHECK_THAT(errorOf([&] { encodeChakraBinary(bad_node_type); }), Contains("unknown node type 77"));
}

TEST_CASE("a dependency cycle is reported through a node on it", "[workloads][chakra]") {
  // 1 depends on 2; 2 and 3 depend on each other. Node 1 is blocked but not on the cycle.
  ChakraTrace t;
  t.source = "c.et";
  t.nodes = {node(1, "", ChakraNodeType::kComp), node(2, "", ChakraNodeType::kComp), node(3, "", ChakraNodeType::kComp),
             node(4, "", ChakraNodeType::kComp)};
  t.nodes[0].data_deps = {2};
  t.nodes[1].ctrl_deps = {3};
  t.nodes[2].data_deps = {4, 2};
  CHECK_THAT(errorOf([&] { topologicalOrder(t); }),
             Contains("c.et: node 2: dependency cycle (a -> b: a depends on b): 2 -> 3 -> 2"));
  CHECK_THAT(errorOf([&] { validateChakraTrace(t); }), Contains("dependency cycle"));

  t.nodes[2].data_deps = {4};
  t.nodes[3].ctrl_deps = {4};
  CHECK_THAT(errorOf([&] { topologicalOrder(t); }),
             Contains("node 4: dependency cycle (a -> b: a depends on b): 4 -> 4"));

  // A long cycle is shown in part.
  ChakraTrace ring;
  for (uint64_t i = 0; i < 20; ++i) {
    ring.nodes.push_back(node(i, "", ChakraNodeType::kComp));
    ring.nodes.back().data_deps = {(i + 1) % 20};
  }
  CHECK_THAT(
      errorOf([&] { topologicalOrder(ring); }),
      Contains("Chakra trace: node 0: dependency cycle (a -> b: a depends on b): 0 -> 1 -> 2 -> 3 -> 4 -> 5 -> 6 "
               "-> 7 -> 8 -> ..."));
}

TEST_CASE("topological order follows dependencies and breaks ties by file order", "[workloads][chakra]") {
  // sampleTrace: embedding (#0) waits for load_weights (#5); then the collective (#1) and
  // the send (#2) are ready together; recv (#3) needs both; all_kinds (#4) needs recv.
  CHECK(topologicalOrder(sampleTrace()) == std::vector<size_t>{5, 0, 1, 2, 3, 4});

  ChakraTrace chain;
  for (uint64_t i = 0; i < 5; ++i) {
    chain.nodes.push_back(node(100 - i, "", ChakraNodeType::kComp));
    if (i > 0) chain.nodes.back().ctrl_deps = {100 - i + 1};
  }
  CHECK(topologicalOrder(chain) == std::vector<size_t>{0, 1, 2, 3, 4});

  // Reversed file order: every node depends on the next one in the file.
  ChakraTrace reversed;
  for (uint64_t i = 0; i < 5; ++i) {
    reversed.nodes.push_back(node(i, "", ChakraNodeType::kComp));
    if (i < 4) reversed.nodes.back().data_deps = {i + 1};
  }
  CHECK(topologicalOrder(reversed) == std::vector<size_t>{4, 3, 2, 1, 0});

  // Independent nodes keep file order; a repeated dependency counts once per mention.
  ChakraTrace flat;
  for (uint64_t i = 0; i < 4; ++i) flat.nodes.push_back(node(i * 7, "", ChakraNodeType::kComp));
  flat.nodes[1].data_deps = {21, 21};
  flat.nodes[1].ctrl_deps = {21};
  CHECK(topologicalOrder(flat) == std::vector<size_t>{0, 2, 3, 1});
}

TEST_CASE("JSON form: layout, enum names, base64 bytes, non-finite reals, errors", "[workloads][chakra]") {
  const std::string text = R"({
    "metadata": {"version": "0.0.4"},
    "nodes": [
      {"id": "18446744073709551615", "type": 4, "duration_micros": 10,
       "attr": [{"name": "b", "bytes_val": "AP+A"}, {"name": "u", "bytes_list": {"values": ["AQ", "_-8="]}},
                {"name": "r", "double_list": {"values": [1, "NaN", "Infinity", "-Infinity"]}}]},
      {"id": 2, "type": "COMM_COLL_NODE", "data_deps": [18446744073709551615],
       "attr": [{"name": "comm_type", "int64_val": 7}, {"name": "comm_size", "uint64_val": "1024"}]}
    ]})";
  const ChakraTrace t = decodeChakraJson(text, "j.json");
  REQUIRE_NOTHROW(validateChakraTrace(t));
  // A key written twice in one object: readers differ on which wins, so it is refused.
  std::string twice = text;
  twice.replace(twice.find(R"("duration_micros": 10,)"), 22, R"("duration_micros": 10, "duration_micros": 20,)");
  CHECK_THAT(errorOf([&] { decodeChakraJson(twice, "d.json"); }),
             Contains("d.json: key 'duration_micros' written twice in one JSON object"));
  // A number beyond double is nlohmann's out_of_range, not a parse_error (found by fuzzing:
  // it escaped as an uncaught exception).
  CHECK_THAT(errorOf([&] { decodeChakraJson(R"({"nodes": [{"id": 1, "duration_micros": 5E5555}]})", "n.json"); }),
             Contains("n.json: invalid JSON: [json.exception.out_of_range.406]"));
  REQUIRE(t.nodes.size() == 2);
  CHECK(t.nodes[0].id == std::numeric_limits<uint64_t>::max());
  CHECK(t.nodes[0].type == ChakraNodeType::kComp);
  CHECK(t.nodes[0].attribute("b")->strings == std::vector<std::string>{std::string("\x00\xff\x80", 3)});
  CHECK(t.nodes[0].attribute("u")->strings == std::vector<std::string>{"\x01", "\xff\xef"});
  const auto& r = t.nodes[0].attribute("r")->reals;
  REQUIRE(r.size() == 4);
  CHECK(std::isnan(r[1]));
  CHECK(r[2] == std::numeric_limits<double>::infinity());
  CHECK(r[3] == -std::numeric_limits<double>::infinity());
  CHECK(t.nodes[1].commType() == ChakraCollectiveType::kReduceScatter);
  CHECK(t.nodes[1].commSize() == 1024u);

  const std::string written = encodeChakraJson(t);
  CHECK_THAT(written, Contains(R"("type": "COMM_COLL_NODE")"));
  CHECK_THAT(written, Contains(R"("bytes_val": "AP+A")"));
  CHECK_THAT(written, Contains(R"("NaN")"));
  CHECK_THAT(written, Contains(R"("int64_val": 7)"));

  const auto jsonError = [](const std::string& json) { return errorOf([&] { decodeChakraJson(json, "j.json"); }); };
  CHECK_THAT(jsonError("{"), StartsWith("j.json: invalid JSON"));
  CHECK_THAT(jsonError("[]"), Contains("j.json: (root): expected an object"));
  CHECK_THAT(jsonError(R"({"node": []})"), Contains("j.json: node: unknown key"));
  CHECK_THAT(jsonError(R"({"nodes": [{"id": -1}]})"), Contains("j.json: nodes[0].id: integer -1 out of range"));
  CHECK_THAT(jsonError(R"({"nodes": [{"id": 1.5}]})"), Contains("nodes[0].id: expected a non-negative integer"));
  CHECK_THAT(jsonError(R"({"nodes": [{"id": "12x"}]})"), Contains("nodes[0].id: '12x' is not a decimal integer"));
  CHECK_THAT(jsonError(R"({"nodes": [{"type": "GPU_NODE"}]})"), Contains("nodes[0].type: unknown name 'GPU_NODE'"));
  CHECK_THAT(jsonError(R"({"nodes": [{"type": 11}]})"), Contains("nodes[0].type: enum value 11 out of range"));
  CHECK_THAT(jsonError(R"({"nodes": [{"data_dep": [1]}]})"), Contains("nodes[0].data_dep: unknown key"));
  CHECK_THAT(jsonError(R"({"nodes": [{"attr": [{"int64_val": 1, "int32_val": 2}]}]})"),
             Contains("nodes[0].attr[0].int32_val: a second value"));
  CHECK_THAT(jsonError(R"({"nodes": [{"attr": [{"int32_val": 4294967296}]}]})"),
             Contains("nodes[0].attr[0].int32_val: integer 4294967296 out of range"));
  CHECK_THAT(jsonError(R"({"nodes": [{"attr": [{"bool_list": {"values": [1]}}]}]})"),
             Contains("nodes[0].attr[0].bool_list.values[0]: expected true or false"));
  CHECK_THAT(jsonError(R"({"nodes": [{"attr": [{"bytes_val": "a!"}]}]})"), Contains("bytes must be base64"));
  CHECK_THAT(jsonError(R"({"metadata": {"version": 4}})"), Contains("metadata.version: expected a string"));

  ChakraTrace not_utf8 = sampleTrace();
  not_utf8.nodes[0].name = "\xff";
  CHECK_THAT(errorOf([&] { encodeChakraJson(not_utf8); }), Contains("not UTF-8"));
}

TEST_CASE("per-rank trace sets and file errors", "[workloads][chakra]") {
  const TempDir dir;
  const std::string prefix = dir.path("job").string();
  ChakraTrace rank0 = sampleTrace();
  ChakraTrace rank1 = sampleTrace();
  rank1.nodes[2].setCommDst(0);
  rank1.nodes[3].setCommSrc(0);
  writeChakraFile(prefix + ".0.et", rank0);
  writeChakraFile(prefix + ".1.json", rank1);  // a rank without .et falls back to .json

  const auto traces = readChakraTraces(prefix, 2);
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].source == prefix + ".0.et");
  CHECK(traces[1].source == prefix + ".1.json");
  CHECK(traces[1].nodes[2].commDst() == 0u);

  CHECK_THAT(errorOf([&] { readChakraTraces(prefix, 3); }),
             Contains(prefix + ".2.et: missing rank file (rank 2 of 3; no job.2.json either)"));
  CHECK_THAT(errorOf([&] { readChakraTraces(prefix, 0); }), Contains("at least one rank"));
  CHECK_THAT(errorOf([&] { readChakraFile(dir.path("nothing.et")); }), Contains("nothing.et: cannot open"));
  std::filesystem::create_directories(dir.path("folder.et"));
  CHECK_THAT(errorOf([&] { readChakraFile(dir.path("folder.et")); }),
             Contains("folder.et: cannot open Chakra trace: it is a directory, not a file"));
  CHECK_THAT(errorOf([&] { readChakraFile(dir.write("trace.txt", "x")); }),
             Contains("trace.txt: unknown Chakra trace extension '.txt'"));
  CHECK_THAT(errorOf([&] { writeChakraFile(dir.path("trace.pb"), rank0); }),
             Contains("unknown Chakra trace extension"));
  CHECK_THAT(errorOf([&] { readChakraFile(dir.write("empty.et", "")); }), Contains("empty.et: empty file"));
  CHECK_THAT(errorOf([&] { writeChakraFile(dir.path("no/such/dir.et"), rank0); }), Contains("cannot write"));
}

namespace mv {
namespace {

TEST_CASE("Chakra's jsonizer form: protobuf JSON messages one after another", "[workloads][chakra]") {
  // As chakra_jsonizer writes a trace: GlobalMetadata, then each Node, in protobuf's JSON
  // mapping (camelCase names, 64-bit integers as strings, enums by name).
  const std::string text = R"({"version": "0.0.4", "attr": [{"name": "schema", "stringVal": "1.0.2-chakra.0.0.4"}]}
{"id": "1", "name": "gemm", "type": "COMP_NODE", "durationMicros": "50",
 "attr": [{"name": "is_cpu_op", "boolVal": false}, {"name": "num_ops", "int64Val": "1000"}]}
{"id": "2", "name": "all_reduce", "type": "COMM_COLL_NODE", "dataDeps": ["1"],
 "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "4096"},
          {"name": "pg_name", "stringVal": "0"}, {"name": "involved_dim", "boolList": {"values": [true]}}],
 "storage": {"anything": 1}})";
  const ChakraTrace t = decodeChakraJson(text, "j.json");
  CHECK(t.version == "0.0.4");
  REQUIRE(t.metadata.size() == 1);
  CHECK(t.metadata[0].text() == "1.0.2-chakra.0.0.4");
  REQUIRE(t.nodes.size() == 2);
  CHECK(t.nodes[0].id == 1);
  CHECK(t.nodes[0].duration_micros == 50);
  CHECK(t.nodes[0].attribute("num_ops")->integer() == 1000);
  CHECK(t.nodes[1].type == ChakraNodeType::kCommColl);
  CHECK(t.nodes[1].data_deps == std::vector<uint64_t>{1});
  CHECK(t.nodes[1].commSize() == 4096u);
  CHECK(t.nodes[1].pgName() == "0");
  CHECK(t.nodes[1].attribute("involved_dim")->ints == std::vector<int64_t>{1});
  REQUIRE_NOTHROW(validateChakraTrace(t));
  // The same trace through the binary form decodes alike.
  requireSameTrace(decodeChakraBinary(encodeChakraBinary(t), "j.et"), t);
  // Errors name the message.
  CHECK_THAT(errorOf([] { decodeChakraJson(R"({"version": "1"} {"id": "x"})", "j.json"); }),
             StartsWith("j.json: JSON message #1 (Node): "));
  CHECK(errorOf([] { decodeChakraJson(R"({"version": "1"} {"id": 1, "type": 42})", "j.json"); }) ==
        "j.json: JSON message #1: unknown node type 42 (NodeType has 0..10)");
  // A node type protobuf's parser does not know would read as INVALID_NODE: refused.
  CHECK(errorOf([] { decodeChakraJson(R"({"version": "1"} {"id": 1, "type": "COMM_SENDD_NODE"})", "j.json"); }) ==
        "j.json: JSON message #1: unknown node type \"COMM_SENDD_NODE\"");
  CHECK(errorOf([] { decodeChakraJson(R"({"id": 1, "type": "COMP_NODE"} {"id": 2})", "j.json"); }) ==
        "j.json: JSON message #0 is a Node; a trace starts with its GlobalMetadata");
  // Hostile nesting is refused before anything recurses over it, in both JSON forms.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THAT(errorOf([&] { decodeChakraJson(R"({"version": "1"} {"id": 1, "attr": )" + deep + "}", "j.json"); }),
             StartsWith("j.json: invalid JSON"));
  CHECK(errorOf([&] { decodeChakraJson(R"({"nodes": )" + deep + "}", "j.json"); }) ==
        "j.json: JSON nested deeper than 64 levels");
  // Keys written twice in the jsonizer form, as one name or as a field's two names (protobuf
  // reads both and keeps the last), at the top or inside an attribute.
  CHECK(errorOf([] {
          decodeChakraJson(R"({"version": "1"} {"id": 1, "type": "COMP_NODE", "id": 2})", "j.json");
        }) == "j.json: JSON message #1: key 'id' written twice in one JSON object (readers differ on which one wins; "
              "remove one)");
  CHECK(errorOf([] {
          decodeChakraJson(R"({"version": "1"} {"id": 1, "durationMicros": 5, "duration_micros": 7000})", "j.json");
        }) == "j.json: JSON message #1: 'duration_micros' and 'durationMicros' are one field written twice (readers "
              "differ on which wins)");
  CHECK_THAT(errorOf([] {
               decodeChakraJson(R"({"version": "1"} {"id": 1, "attr": [{"name": "a", "int64Val": 1, "int64_val": 2}]})",
                                "j.json");
             }),
             Contains("'int64_val' and 'int64Val' are one field written twice"));
  // Not a sequence of objects: the JSON syntax error as before.
  CHECK_THAT(errorOf([] { decodeChakraJson(R"({"nodes": [}] )", "j.json"); }), StartsWith("j.json: invalid JSON"));
}

}  // namespace
}  // namespace mv
