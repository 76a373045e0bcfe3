#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "test_support/session_util.h"
#include "weft/onnx.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

onnx::ValueInfoProto Value(const std::string& name, int32_t type,
                           const std::vector<std::string>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tensor = v.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  auto* shape = tensor->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
      dim->set_dim_value(std::stoll(d));
    } else if (!d.empty()) {
      dim->set_dim_param(d);
    }
  }
  return v;
}

// y = x + w, with x [batch, 3] fed and w a float initializer [3].
onnx::ModelProto AddModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("weft-test");
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  *g->add_input() = Value("x", onnx::TensorProto::FLOAT, {"batch", "3"});
  *g->add_output() = Value("y", onnx::TensorProto::FLOAT, {"batch", "3"});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float v : {10.f, 20.f, 30.f}) w->add_float_data(v);
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("w");
  add->add_output("y");
  return m;
}

StatusOr<OnnxModel> Parse(const onnx::ModelProto& m,
                          const std::string& dir = ".") {
  return ParseOnnxModel(m.SerializeAsString(), dir);
}

TEST(OnnxImportTest, AnAddModelRunsWithSymbolicDimensionsFromTheFeed) {
  auto model = Parse(AddModel());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->producer_name, "weft-test");
  ASSERT_EQ(model->inputs.size(), 1u);  // The initializer is no input.
  EXPECT_EQ(model->inputs[0].ShapeString(), "[batch, 3]");
  EXPECT_EQ(model->inputs[0].type_name, "tensor(float)");
  ASSERT_EQ(model->outputs.size(), 1u);
  auto session =
      test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
  for (int64_t batch : {1, 4}) {
    std::vector<float> x(batch * 3, 1.0f);
    auto out = test::MustRun(
        *session, {model->outputs[0].tensor},
        {{model->inputs[0].tensor, Tensor::FromVector<float>({batch, 3}, x)}});
    EXPECT_EQ(out[0].shape(), (Shape{batch, 3}));
    EXPECT_EQ(out[0].data<float>()[2], 31.0f);
  }
}

// A graph input that also has an initializer (older exporters list every
// weight so) is an overridable initializer, as ONNX Runtime has it: a
// Const holding the default, which a Run may feed instead; not an input.
TEST(OnnxImportTest, AnInputWithAnInitializerIsADefaultARunMayFeed) {
  onnx::ModelProto m = AddModel();
  *m.mutable_graph()->add_input() = Value("w", onnx::TensorProto::FLOAT, {"3"});
  auto model = Parse(m);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "x");
  ASSERT_EQ(model->overridable_initializers.size(), 1u);
  const OnnxValueInfo& w = model->overridable_initializers[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.dtype, DataType::kFloat32);
  EXPECT_EQ(w.ShapeString(), "[3]");
  auto session =
      test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
  ASSERT_NE(session, nullptr);
  const Tensor x = Tensor::FromVector<float>({1, 3}, {1, 2, 3});
  const std::string& x_tensor = model->inputs[0].tensor;
  const std::string& y = model->outputs[0].tensor;
  EXPECT_EQ(test::MustRun(*session, {y}, {{x_tensor, x}})[0].data<float>()[2],
            33.0f);
  const auto fed = test::MustRun(
      *session, {y},
      {{x_tensor, x}, {w.tensor, Tensor::FromVector<float>({3}, {0, 0, 5})}});
  EXPECT_EQ(fed[0].data<float>()[2], 8.0f);
  EXPECT_EQ(test::MustRun(*session, {y}, {{x_tensor, x}})[0].data<float>()[2],
            33.0f);
  // Without the initializer among the inputs, it is a constant only.
  auto plain = Parse(AddModel());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->overridable_initializers.empty());
}

TEST(OnnxImportTest, ReduceSumAxesComeFromAnInputFromOpset13) {
  for (int64_t opset : {11, 13}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    onnx::ModelProto m = AddModel(opset);
    auto* g = m.mutable_graph();
    g->mutable_output(0)->set_name("s");
    auto* reduce = g->add_node();
    reduce->set_op_type("ReduceSum");
    reduce->add_input("y");
    reduce->add_output("s");
    auto* keep = reduce->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
    if (opset >= 13) {
      auto* axes = g->add_initializer();
      axes->set_name("axes");
      axes->set_data_type(onnx::TensorProto::INT64);
      axes->add_dims(1);
      axes->add_int64_data(1);
      reduce->add_input("axes");
    } else {
      auto* axes = reduce->add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto::INTS);
      axes->add_ints(1);
    }
    auto model = Parse(m);
    ASSERT_TRUE(model.ok()) << model.status();
    auto session =
        test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
    auto out = test::MustRun(
        *session, {model->outputs[0].tensor},
        {{"x", Tensor::FromVector<float>({2, 3}, {1, 1, 1, 2, 2, 2})}});
    EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{63, 66}));
  }
}

TEST(OnnxImportTest, ExternalDataIsReadFromTheModelsFolderOnly) {
  const fs::path dir = fs::path(::testing::TempDir()) / "weft_onnx_external";
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    const float values[] = {0, 0, 1, 2, 3};  // 8 bytes of offset first.
    out.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  auto with_location = [&](const std::string& location,
                           const std::string& length) {
    onnx::ModelProto m = AddModel();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      auto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    add("offset", "8");
    if (!length.empty()) add("length", length);
    return Parse(m, dir.string());
  };
  auto ok = with_location("weights.bin", "12");
  ASSERT_TRUE(ok.ok()) << ok.status();
  const NodeDef* w = ok->file.graph.FindNode("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(test::Values<float>(*w->attrs.at("value").get_if<Tensor>()),
            (std::vector<float>{1, 2, 3}));

  struct Bad {
    std::string location, length, message;
  };
  for (const Bad& bad :
       {Bad{"missing.bin", "", "external data file 'missing.bin'"},
        Bad{"/etc/passwd", "", "is absolute"},
        Bad{"../weights.bin", "", "leaves the model's folder"},
        Bad{"weights.bin", "16", "length 16 does not match the 12 bytes"}}) {
    auto model = with_location(bad.location, bad.length);
    ASSERT_FALSE(model.ok()) << bad.location;
    EXPECT_THAT(model.status().message(),
                AllOf(HasSubstr("initializer 'w'"), HasSubstr(bad.message)));
  }
  fs::create_symlink("/etc/hostname", dir / "escape.bin");
  auto escape = with_location("escape.bin", "");
  EXPECT_THAT(escape.status().message(),
              HasSubstr("resolves outside the model's folder"));
  fs::remove_all(dir);
}

// y = x + w over [n] floats, w's values 0.5 * i as raw data.
onnx::ModelProto WideAddModel(int64_t n) {
  onnx::ModelProto m = AddModel();
  auto* g = m.mutable_graph();
  const std::string width = std::to_string(n);
  *g->mutable_input(0) = Value("x", onnx::TensorProto::FLOAT, {width});
  *g->mutable_output(0) = Value("y", onnx::TensorProto::FLOAT, {width});
  auto* w = g->mutable_initializer(0);
  w->clear_float_data();
  w->set_dims(0, n);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = 0.5f * static_cast<float>(i);
  w->set_raw_data(values.data(), values.size() * sizeof(float));
  return m;
}

// Checks that `model`, WideAddModel(n) loaded, gives y = x + w at x = 1
// everywhere.
void ExpectWideAddRuns(const StatusOr<OnnxModel>& model, int64_t n) {
  ASSERT_TRUE(model.ok()) << model.status();
  auto session =
      test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(
      *session, {model->outputs[0].tensor},
      {{model->inputs[0].tensor,
        Tensor::FromVector<float>({n}, std::vector<float>(n, 1.0f))}});
  const std::vector<float> y = test::Values<float>(out[0]);
  ASSERT_EQ(y.size(), static_cast<size_t>(n));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    wrong += y[i] != 1.0f + 0.5f * static_cast<float>(i);
  }
  EXPECT_EQ(wrong, 0);
}

void ExpectWideAddLoads(const std::string& path, int64_t n) {
  ExpectWideAddRuns(LoadOnnxModel(path), n);
}

TEST(OnnxImportTest, ModelBytesWithLargeWeightsLoadEveryWeightExactly) {
  // Weights from 4 KiB are copied from the bytes themselves, not through
  // protobuf's strings (lifted_raw_data.h): the sizes on either side.
  for (int64_t floats : {int64_t{1000}, int64_t{1024}, int64_t{5000}}) {
    ExpectWideAddRuns(
        ParseOnnxModel(WideAddModel(floats).SerializeAsString(), "."), floats);
  }
}

TEST(OnnxImportTest, ALiftedStringInitializerIsRefusedAsAnyOther) {
  onnx::ModelProto m = AddModel();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_type(onnx::TensorProto::STRING);
  for (size_t bytes : {size_t{16}, size_t{8192}}) {
    w->set_raw_data(std::string(bytes, 'a'));
    EXPECT_THAT(ParseOnnxModel(m.SerializeAsString(), ".").status().message(),
                HasSubstr("a STRING tensor keeps its values in string_data"))
        << bytes;
  }
}

TEST(OnnxImportTest, ALargeModelFileLoadsEveryWeightExactly) {
  // 3 MiB of weights: the file's bytes and the weight itself take the
  // buffers of framework/large_buffer.h (mappings from 2 MiB).
  constexpr int64_t kFloats = 3 << 18;
  const fs::path path = fs::path(::testing::TempDir()) / "weft_wide_add.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    out << WideAddModel(kFloats).SerializeAsString();
  }
  ExpectWideAddLoads(path.string(), kFloats);
  fs::remove(path);
}

TEST(OnnxImportTest, AModelReadFromAPipeLoads) {
  // Not a regular file: its size is not known before it is read.
  constexpr int64_t kFloats = 1 << 16;
  const fs::path path = fs::path(::testing::TempDir()) / "weft_model_fifo";
  fs::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ofstream out(path, std::ios::binary);
    out << WideAddModel(kFloats).SerializeAsString();
  });
  ExpectWideAddLoads(path.string(), kFloats);
  writer.join();
  fs::remove(path);
}

TEST(OnnxImportTest, MalformedModelsAreErrorsNamingWhatIsWrong) {
  EXPECT_THAT(ParseOnnxModel("", ".").status().message(),
              HasSubstr("the model file is empty"));
  EXPECT_THAT(ParseOnnxModel("\xff\xff\xff garbage", ".").status().message(),
              HasSubstr("not an ONNX model"));
  const std::string bytes = AddModel().SerializeAsString();
  EXPECT_FALSE(ParseOnnxModel(bytes.substr(0, bytes.size() / 2), ".").ok());

  struct Case {
    std::function<void(onnx::ModelProto&)> edit;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto& m) { m.mutable_opset_import(0)->set_version(99); },
       StatusCode::kUnimplemented, "opset 99 of the default domain"},
      {[](auto& m) { m.mutable_graph()->mutable_node(0)->set_op_type("Foo"); },
       StatusCode::kUnimplemented, "node 'y' (ONNX Foo): op 'Foo'"},
      {[](auto& m) {
         m.mutable_graph()->mutable_node(0)->set_domain("com.example");
       },
       StatusCode::kUnimplemented, "domain 'com.example'"},
      // Found by the fuzzer: a node without inputs.
      {[](auto& m) { m.mutable_graph()->mutable_node(0)->clear_input(); },
       StatusCode::kInvalidArgument, "node 'y' (ONNX Add): input 0 is missing"},
      {[](auto& m) { m.mutable_graph()->mutable_node(0)->set_input(1, "v"); },
       StatusCode::kInvalidArgument, "input 'v' is not produced"},
      {[](auto& m) { m.mutable_graph()->mutable_output(0)->set_name("z"); },
       StatusCode::kInvalidArgument, "output 'z' is not produced"},
      {[](auto& m) { *m.mutable_graph()->add_output() = m.graph().output(0); },
       StatusCode::kInvalidArgument, "output 'y' is listed twice"},
      {[](auto& m) { m.mutable_graph()->mutable_node(0)->set_output(0, "w"); },
       StatusCode::kInvalidArgument, "tensor 'w' is produced twice"},
      {[](auto& m) {
         m.mutable_graph()->mutable_initializer(0)->add_float_data(4);
       },
       StatusCode::kInvalidArgument,
       "initializer 'w': dims [3] need 3 values, the tensor has 4"},
      {[](auto& m) {
         m.mutable_graph()->mutable_initializer(0)->set_dims(0, -3);
       },
       StatusCode::kInvalidArgument, "initializer 'w': invalid dims [-3]"},
      {[](auto& m) {
         auto* w = m.mutable_graph()->mutable_initializer(0);
         w->set_dims(0, int64_t{1} << 40);
         w->add_dims(int64_t{1} << 40);
       },
       StatusCode::kInvalidArgument, "invalid dims"},
      {[](auto& m) {
         auto* w = m.mutable_graph()->mutable_initializer(0);
         w->clear_float_data();
         w->set_raw_data(std::string(11, '\0'));
       },
       StatusCode::kInvalidArgument, "need 12 bytes of raw data"},
      {[](auto& m) {
         m.mutable_graph()->mutable_initializer(0)->set_data_type(
             onnx::TensorProto::COMPLEX64);
       },
       StatusCode::kUnimplemented, "dtype COMPLEX64 is not supported"},
      {[](auto& m) {
         m.mutable_graph()
             ->mutable_input(0)
             ->mutable_type()
             ->mutable_tensor_type()
             ->set_elem_type(onnx::TensorProto::COMPLEX64);
       },
       StatusCode::kUnimplemented, "input 'x': dtype COMPLEX64"},
      {[](auto& m) {
         auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
         a->set_name("alpha");
         a->set_type(onnx::AttributeProto::FLOAT);
       },
       StatusCode::kUnimplemented, "attribute 'alpha' is not supported"},
  };
  for (const Case& c : cases) {
    onnx::ModelProto m = AddModel();
    c.edit(m);
    auto model = Parse(m);
    ASSERT_FALSE(model.ok()) << c.message;
    EXPECT_EQ(model.status().code(), c.code) << model.status();
    EXPECT_THAT(model.status().message(), HasSubstr(c.message));
  }
}

// A model-local function scaled_add(a, b) = LeakyRelu(a + b) with its
// alpha taken from the call's attribute "slope", called twice: y =
// scaled_add(scaled_add(x, w), x) with slope 0.5.
onnx::ModelProto FunctionModel() {
  onnx::ModelProto m = AddModel();
  m.mutable_graph()->clear_node();
  auto* domain = m.add_opset_import();
  domain->set_domain("local");
  domain->set_version(1);
  onnx::FunctionProto* f = m.add_functions();
  f->set_name("scaled_add");
  f->set_domain("local");
  f->add_input("a");
  f->add_input("b");
  f->add_output("out");
  f->add_attribute("slope");
  auto* sum = f->add_node();
  sum->set_op_type("Add");
  sum->add_input("a");
  sum->add_input("b");
  sum->add_output("s");
  auto* act = f->add_node();
  act->set_op_type("LeakyRelu");
  act->add_input("s");
  act->add_output("out");
  auto* alpha = act->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_ref_attr_name("slope");
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"w", "t"}, {"x", "y"}}) {
    auto* call = m.mutable_graph()->add_node();
    call->set_op_type("scaled_add");
    call->set_domain("local");
    call->add_input(out == "t" ? "x" : "t");
    call->add_input(in);
    call->add_output(out);
    auto* slope = call->add_attribute();
    slope->set_name("slope");
    slope->set_type(onnx::AttributeProto::FLOAT);
    slope->set_f(0.5f);
  }
  return m;
}

TEST(OnnxImportTest, ModelLocalFunctionsAreExpandedAtLoad) {
  auto model = Parse(FunctionModel());
  ASSERT_TRUE(model.ok()) << model.status();
  auto session =
      Session::Create(model->file.graph, test::PerSessionOptions(1, 1));
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)
                  ->Run({{model->inputs[0].tensor,
                          Tensor::FromVector<float>({1, 3}, {-40, 1, 2})}},
                        {model->outputs[0].tensor}, {}, &out)
                  .ok());
  // t = leaky(x + w) = leaky(-30, 21, 32) = (-15, 21, 32);
  // y = leaky(t + x) = leaky(-55, 22, 34) = (-27.5, 22, 34).
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{-27.5f, 22, 34}));
}

TEST(OnnxImportTest, AFunctionThatCallsItselfIsRefused) {
  // The body's second node calls the function itself.
  onnx::ModelProto m = FunctionModel();
  m.mutable_functions(0)->mutable_node(1)->set_op_type("scaled_add");
  m.mutable_functions(0)->mutable_node(1)->set_domain("local");
  auto recursive = Parse(m);
  ASSERT_FALSE(recursive.ok());
  EXPECT_THAT(recursive.status().message(), HasSubstr("nest deeper than 16"));
  // Sixteen functions, each calling the next four times: 4^15 calls of
  // the last are refused by count, not expanded.
  onnx::ModelProto wide = AddModel();
  for (int level = 0; level < 16; ++level) {
    onnx::FunctionProto* f = wide.add_functions();
    f->set_name("f" + std::to_string(level));
    f->set_domain("local");
    f->add_input("a");
    f->add_output("a_out");
    std::string prev = "a";
    for (int call = 0; call < 4; ++call) {
      auto* n = f->add_node();
      const bool last = level == 15;
      n->set_op_type(last ? "Relu" : "f" + std::to_string(level + 1));
      if (!last) n->set_domain("local");
      n->add_input(prev);
      prev = call == 3 ? "a_out" : "t" + std::to_string(call);
      n->add_output(prev);
    }
  }
  wide.mutable_graph()->mutable_node(0)->set_op_type("f0");
  wide.mutable_graph()->mutable_node(0)->set_domain("local");
  wide.mutable_graph()->mutable_node(0)->mutable_input()->RemoveLast();
  auto huge = Parse(wide);
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("more than 1048576 nodes"));
}

// A one-input function of domain "local" whose body is one call of
// `callee` (of domain "local" unless it is "Relu").
void AddForwardingFunction(onnx::ModelProto& m, const std::string& name,
                           const std::string& callee) {
  onnx::FunctionProto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("local");
  f->add_input("a");
  f->add_output("a_out");
  auto* n = f->add_node();
  n->set_op_type(callee);
  if (callee != "Relu") n->set_domain("local");
  n->add_input("a");
  n->add_output("a_out");
}

// The nesting limit holds for a function whose size is already known when
// a deeper call reaches it: a chain c0 -> ... -> c14 -> Relu nests 15 deep
// from the graph, and 17 deep when called from inside two more functions.
TEST(OnnxImportTest, TheNestingLimitHoldsForAFunctionCalledAgainDeeper) {
  auto model_calling = [](const std::string& inner) {
    onnx::ModelProto m = FunctionModel();
    for (int i = 0; i < 15; ++i) {
      AddForwardingFunction(m, "c" + std::to_string(i),
                            i == 14 ? "Relu" : "c" + std::to_string(i + 1));
    }
    AddForwardingFunction(m, "w1", "w2");
    AddForwardingFunction(m, "w2", inner);
    auto* g = m.mutable_graph();
    g->clear_node();  // FunctionModel's own calls.
    auto* direct = g->add_node();
    direct->set_op_type("c0");
    direct->set_domain("local");
    direct->add_input("x");
    direct->add_output("t");
    auto* wrapped = g->add_node();
    wrapped->set_op_type("w1");
    wrapped->set_domain("local");
    wrapped->add_input("t");
    wrapped->add_output("y");
    return m;
  };
  // w1 -> w2 -> c1 ... c14 -> Relu: the Relu's call of c14 is the 16th.
  auto at_limit = Parse(model_calling("c1"));
  EXPECT_TRUE(at_limit.ok()) << at_limit.status();
  auto too_deep = Parse(model_calling("c0"));
  ASSERT_FALSE(too_deep.ok());
  EXPECT_THAT(too_deep.status().message(), HasSubstr("nest deeper than 16"));
}

TEST(OnnxImportTest, ATensorProtoFileParsesToATensor) {
  onnx::TensorProto t;
  t.set_name("input_0");
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(2);
  t.add_int64_data(-5);
  t.add_int64_data(7);
  std::string name;
  auto tensor = ParseOnnxTensor(t.SerializeAsString(), &name);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(name, "input_0");
  EXPECT_EQ(test::Values<int64_t>(*tensor), (std::vector<int64_t>{-5, 7}));
  EXPECT_THAT(ParseOnnxTensor("\x0a\xff").status().message(),
              HasSubstr("not an ONNX TensorProto"));
}

// com.microsoft GroupQueryAttention at a decoding step (2 query heads and
// 1 key/value head of 4, a past cache of 2 tokens): seqlens_k says how many
// tokens each batch row has, and one the cache does not hold is an error
// that names it, not an index out of range somewhere inside.
TEST(OnnxImportTest, GroupQueryAttentionNamesASeqlensItsCacheDoesNotHold) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  const int32_t f = onnx::TensorProto::FLOAT;
  const int32_t i32 = onnx::TensorProto::INT32;
  *g->add_input() = Value("q", f, {"1", "1", "8"});
  *g->add_input() = Value("k", f, {"1", "1", "4"});
  *g->add_input() = Value("v", f, {"1", "1", "4"});
  *g->add_input() = Value("past_k", f, {"1", "1", "2", "4"});
  *g->add_input() = Value("past_v", f, {"1", "1", "2", "4"});
  *g->add_input() = Value("seqlens_k", i32, {"1"});
  *g->add_input() = Value("total", i32, {});
  *g->add_output() = Value("y", f, {"1", "1", "8"});
  auto* gqa = g->add_node();
  gqa->set_op_type("GroupQueryAttention");
  gqa->set_domain("com.microsoft");
  gqa->set_name("attn");
  for (const char* in :
       {"q", "k", "v", "past_k", "past_v", "seqlens_k", "total"}) {
    gqa->add_input(in);
  }
  for (const char* out : {"y", "present_k", "present_v"}) {
    gqa->add_output(out);
  }
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{"num_heads", 2}, {"kv_num_heads", 1}}) {
    auto* a = gqa->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  auto model = Parse(m);
  ASSERT_TRUE(model.ok()) << model.status();
  auto session =
      test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
  auto feeds = [](int32_t seqlens) {
    const std::vector<float> cache(8, 0.5f);
    return NamedTensors{
        {"q", Tensor::FromVector<float>({1, 1, 8}, std::vector<float>(8, 1))},
        {"k", Tensor::FromVector<float>({1, 1, 4}, std::vector<float>(4, 1))},
        {"v", Tensor::FromVector<float>({1, 1, 4}, std::vector<float>(4, 2))},
        {"past_k", Tensor::FromVector<float>({1, 1, 2, 4}, cache)},
        {"past_v", Tensor::FromVector<float>({1, 1, 2, 4}, cache)},
        {"seqlens_k", Tensor::FromVector<int32_t>({1}, {seqlens})},
        {"total", Tensor::Scalar<int32_t>(seqlens + 1)}};
  };
  std::vector<Tensor> outputs;
  const Status held = session->Run(feeds(2), {"y"}, {}, &outputs);
  EXPECT_TRUE(held.ok()) << held;
  const Status beyond = session->Run(feeds(5), {"y"}, {}, &outputs);
  EXPECT_EQ(beyond.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(beyond.message(),
              AllOf(HasSubstr("com.microsoft GroupQueryAttention 'attn'"),
                    HasSubstr("seqlens_k"),
                    HasSubstr("element 0 is 5, outside [0, 2]")));
}

}  // namespace
}  // namespace weft
