#include "io/onnx/lifted_raw_data.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>

namespace weft::internal {
namespace {

constexpr size_t kLiftedFrom = 64;

// A model whose main graph has initializers of every kind the lifter meets:
// raw_data above and below kLiftedFrom, typed float_data, and a subgraph
// (If's branch) with an initializer of its own, left in place.
onnx::ModelProto MixedModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("weft-test");
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("mixed");
  auto add_raw = [&](const std::string& name, size_t floats) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<int64_t>(floats));
    std::string raw(floats * sizeof(float), '\0');
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(i * 7);
    t->set_raw_data(raw);
    t->set_doc_string("after the raw data");
  };
  add_raw("big", 1000);
  add_raw("small", 4);
  auto* typed = g->add_initializer();
  typed->set_name("typed");
  typed->set_data_type(onnx::TensorProto::FLOAT);
  typed->add_dims(2);
  typed->add_float_data(1.5f);
  typed->add_float_data(2.5f);
  add_raw("big2", 300);
  auto* node = g->add_node();
  node->set_op_type("If");
  auto* branch = node->add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  auto* sub_init = branch->mutable_g()->add_initializer();
  sub_init->set_name("inner");
  sub_init->set_raw_data(std::string(4096, 'x'));
  m.set_doc_string("after the graph");
  return m;
}

TEST(LiftInitializerRawDataTest, LiftsTheLargeRawDataAndKeepsTheRest) {
  const onnx::ModelProto original = MixedModel();
  const std::string bytes = original.SerializeAsString();
  const auto lifted = LiftInitializerRawData(bytes, kLiftedFrom);
  ASSERT_TRUE(lifted.has_value());
  ASSERT_EQ(lifted->raw_data.size(), 4u);
  EXPECT_TRUE(lifted->raw_data[0].has_value());   // big
  EXPECT_FALSE(lifted->raw_data[1].has_value());  // small: under the size
  EXPECT_FALSE(lifted->raw_data[2].has_value());  // typed: no raw_data
  EXPECT_TRUE(lifted->raw_data[3].has_value());   // big2
  EXPECT_LT(lifted->stripped.size(), bytes.size() - 5000);

  onnx::ModelProto stripped;
  ASSERT_TRUE(stripped.ParseFromString(lifted->stripped));
  const auto& inits = stripped.graph().initializer();
  for (int i : {0, 3}) {
    EXPECT_FALSE(inits[i].has_raw_data()) << i;
    // Views into the bytes given, equal to what protobuf would have copied.
    const std::string_view raw = *lifted->raw_data[i];
    EXPECT_GE(raw.data(), bytes.data());
    EXPECT_LE(raw.data() + raw.size(), bytes.data() + bytes.size());
    EXPECT_EQ(raw, original.graph().initializer(i).raw_data()) << i;
  }
  // With the raw data put back, the very message the bytes hold: every
  // other field, the subgraph's initializer included, came through.
  for (int i : {0, 3}) {
    stripped.mutable_graph()->mutable_initializer(i)->set_raw_data(
        std::string(*lifted->raw_data[i]));
  }
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(stripped, original));
}

TEST(LiftInitializerRawDataTest, LeavesToProtobufWhatItWouldMergeOrOverride) {
  const std::string bytes = MixedModel().SerializeAsString();
  // Nothing large enough.
  EXPECT_FALSE(LiftInitializerRawData(bytes, 1 << 20).has_value());
  // No graph.
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  EXPECT_FALSE(
      LiftInitializerRawData(no_graph.SerializeAsString(), 0).has_value());
  // The graph field twice: protobuf merges the two graphs.
  onnx::ModelProto second;
  second.mutable_graph()->add_initializer()->set_raw_data(
      std::string(100, 'y'));
  EXPECT_FALSE(
      LiftInitializerRawData(bytes + second.SerializeAsString(), kLiftedFrom)
          .has_value());
  // raw_data twice in one initializer: the last one wins in protobuf.
  onnx::TensorProto twice;
  twice.set_raw_data(std::string(100, 'a'));
  std::string tensor = twice.SerializeAsString() + twice.SerializeAsString();
  std::string graph;
  graph += '\x2a';  // GraphProto.initializer, length-delimited.
  graph += static_cast<char>(tensor.size() & 0x7f | 0x80);
  graph += static_cast<char>(tensor.size() >> 7);
  graph += tensor;
  std::string model;
  model += '\x3a';  // ModelProto.graph, length-delimited.
  model += static_cast<char>(graph.size() & 0x7f | 0x80);
  model += static_cast<char>(graph.size() >> 7);
  model += graph;
  ASSERT_TRUE(onnx::ModelProto().ParseFromString(model));
  EXPECT_FALSE(LiftInitializerRawData(model, kLiftedFrom).has_value());
}

TEST(LiftInitializerRawDataTest, BytesThatDoNotWalkAreLeftToTheParser) {
  const std::string bytes = MixedModel().SerializeAsString();
  // Cut anywhere: either nothing is lifted, or what is parses and agrees
  // with the whole (a cut that falls after the graph).
  for (size_t size = 0; size < bytes.size(); size += 97) {
    const std::string cut = bytes.substr(0, size);
    const auto lifted = LiftInitializerRawData(cut, kLiftedFrom);
    if (!lifted) continue;
    EXPECT_TRUE(onnx::ModelProto().ParseFromString(lifted->stripped)) << size;
  }
  // Groups and undefined wire types; an overlong varint; a length past
  // the end.
  for (const std::string& bad :
       {std::string("\x3b\x3c", 2), std::string("\x3e", 1),
        std::string("\x3a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
        std::string("\x3a\x7f\x00", 3)}) {
    EXPECT_FALSE(LiftInitializerRawData(bad, 0).has_value());
  }
}

}  // namespace
}  // namespace weft::internal
