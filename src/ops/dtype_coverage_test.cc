// Every dtype an op registers reaches its kernel: a kernel is compiled for
// its op's dtype set alone (DispatchAmong, op_util.h), so a set narrower
// than what the op registers would refuse a valid input at Run time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "test_support/session_util.h"

namespace weft::internal {
namespace {

constexpr char kGuardMessage[] = "is not one this kernel takes";

TEST(DispatchAmongTest, CallsTheFunctionWithTheDtypesType) {
  std::string seen;
  const Status status =
      DispatchAmong<FloatDtypesWithHalf>(DataType::kFloat64, [&](auto zero) {
        seen = DataTypeName(DataTypeOf<decltype(zero)>());
        return Status::OK();
      });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(seen, "float64");
}

TEST(DispatchAmongTest, PassesOnTheFunctionsError) {
  const Status status = DispatchAmong<NumericDtypes>(
      DataType::kInt32,
      [](auto /*zero*/) { return InvalidArgumentError("from the kernel"); });
  EXPECT_EQ(status.message(), "from the kernel");
}

TEST(DispatchAmongTest, RefusesADtypeOutsideTheSetNamingIt) {
  bool called = false;
  const Status status =
      DispatchAmong<FloatDtypes>(DataType::kInt16, [&](auto /*zero*/) {
        called = true;
        return Status::OK();
      });
  EXPECT_FALSE(called);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("dtype int16"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr(kGuardMessage));
}

TEST(DispatchAmongTest, TheRegisteredListIsTheSetInOrder) {
  EXPECT_EQ(NumericDtypesWithHalf::Vector(),
            (std::vector<DataType>{DataType::kFloat32, DataType::kFloat64,
                                   DataType::kInt32, DataType::kInt64,
                                   DataType::kFloat16}));
  EXPECT_EQ(kAllNumericTypes.size(), 11u);
}

// A tensor of ones, so that no op meets a zero divisor or a log of 0.
Tensor Ones(DataType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  DispatchDtype(dtype, [&](auto zero) {  // bool{} for kBool: true.
    using T = decltype(zero);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = T(1);
  });
  return t;
}

bool IsPlainDtype(DataType t) {
  return !IsListedOnlyType(t) && !IsContainerType(t);
}

// Attributes a window op needs (its default kernel shape is empty) and
// BitShift's required direction; an op with another required attribute is
// left out.
const std::map<std::string, AttrValue>& AttrValuesGiven() {
  static const auto* values = new std::map<std::string, AttrValue>{
      {"kernel_shape", std::vector<int64_t>{1, 1}},
      {"direction", "LEFT"},
  };
  return *values;
}

// The node `op` with every type attribute `bound` gives, fed by constants
// of ones: the first input of shape [1, 1, 2, 2], the later ones of
// `later_shape`, none for optional lists. False when the op's signature
// is not one this test can feed.
bool BuildNode(const OpDef& op, const std::map<std::string, DataType>& bound,
               const Shape& later_shape, Graph& graph) {
  NodeDef node{.name = "node", .op = op.name};
  for (const AttrDef& attr : op.attrs) {
    auto it = AttrValuesGiven().find(attr.name);
    if (it != AttrValuesGiven().end()) {
      node.attrs[attr.name] = it->second;
      continue;
    }
    bool counts_inputs = false;  // Set below from the inputs given.
    for (const ArgDef& arg : op.inputs)
      counts_inputs |= arg.number_attr == attr.name;
    if (!attr.default_value.has_value() && attr.type != AttrType::kType &&
        !counts_inputs) {
      return false;
    }
  }
  int index = 0;
  // The first input an image, the others `later_shape` (an image too, a
  // per-channel vector, or a scalar).
  auto feed = [&](DataType dtype) {
    const std::string name = "in" + std::to_string(index);
    graph.Const(name,
                Ones(dtype, index == 0 ? Shape{1, 1, 2, 2} : later_shape));
    node.inputs.push_back(name);
    ++index;
  };
  for (const ArgDef& arg : op.inputs) {
    const bool typed = arg.kind == ArgDef::Kind::kTypeAttr ||
                       arg.kind == ArgDef::Kind::kRepeated;
    if (typed && !bound.contains(arg.type_attr)) return false;  // Any dtype.
    switch (arg.kind) {
      case ArgDef::Kind::kFixed:
        if (!IsPlainDtype(arg.fixed_type)) return false;
        feed(arg.fixed_type);
        break;
      case ArgDef::Kind::kTypeAttr:
        feed(bound.at(arg.type_attr));
        break;
      case ArgDef::Kind::kRepeated:
        feed(bound.at(arg.type_attr));
        feed(bound.at(arg.type_attr));
        node.attrs[arg.number_attr] = int64_t{2};
        break;
      case ArgDef::Kind::kAnyList:
        break;
      default:
        return false;
    }
  }
  // Type attributes no input binds (an output's dtype) are set.
  for (const auto& [name, dtype] : bound) {
    bool from_input = false;
    for (const ArgDef& arg : op.inputs) from_input |= arg.type_attr == name;
    if (!from_input) node.attrs[name] = dtype;
  }
  return graph.AddNode(std::move(node)).ok();
}

TEST(DtypeCoverageTest, EveryDtypeAnOpRegistersReachesItsKernel) {
  int runs = 0;
  // Per op: the dtypes tried, and those that ran.
  std::map<std::string, std::pair<int, int>> tried_and_ran;
  for (const OpDef* op : OpRegistry::Global().AllOps()) {
    if (op->stateful || op->blocking) continue;
    if (OpRegistry::Global().FindKernel(op->name) == nullptr) continue;
    std::vector<const AttrDef*> type_attrs;
    for (const AttrDef& attr : op->attrs) {
      if (attr.type == AttrType::kType && !attr.allowed_types.empty()) {
        type_attrs.push_back(&attr);
      }
    }
    // Each type attribute through its whole list, the others at the same
    // dtype where they allow it, else at their first.
    for (const AttrDef* varied : type_attrs) {
      for (DataType dtype : varied->allowed_types) {
        if (!IsPlainDtype(dtype)) continue;
        std::map<std::string, DataType> bound;
        for (const AttrDef* attr : type_attrs) {
          const auto& allowed = attr->allowed_types;
          const bool same =
              std::find(allowed.begin(), allowed.end(), dtype) != allowed.end();
          bound[attr->name] = same ? dtype : allowed.front();
        }
        // The first feed that runs, or the last one's error.
        Status status = InvalidArgumentError("no feed fits");
        bool tried = false;
        for (const Shape& later : {Shape{1, 1, 2, 2}, Shape{1}, Shape{}}) {
          Graph graph;
          if (!BuildNode(*op, bound, later, graph)) break;
          auto session =
              Session::Create(std::move(graph), test::PerSessionOptions(1, 1));
          if (!session.ok()) continue;  // A shape this feed breaks.
          tried = true;
          std::vector<Tensor> outputs;
          status = (*session)->Run({}, {"node"}, {}, &outputs);
          EXPECT_THAT(std::string(status.message()),
                      ::testing::Not(::testing::HasSubstr(kGuardMessage)))
              << op->name << " with " << varied->name << " = "
              << DataTypeName(dtype);
          if (status.ok()) break;
        }
        if (!tried) continue;
        ++tried_and_ran[op->name].first;
        if (status.ok()) {
          ++runs;
          ++tried_and_ran[op->name].second;
        }
      }
    }
  }
  // Not vacuous: the families whose kernels take a dtype set ran, each for
  // every dtype it lists.
  const char* const kDtypeSetOps[] = {"ReduceSum",
                                      "ReduceMax",
                                      "ReduceLogSumExp",
                                      "ReduceL2",
                                      "Sin",
                                      "Sign",
                                      "Shrink",
                                      "Neg",
                                      "Abs",
                                      "Exp",
                                      "Sum",
                                      "Max",
                                      "Mean",
                                      "Pow",
                                      "IsNaN",
                                      "IsInf",
                                      "PRelu",
                                      "BitShift",
                                      "BitwiseAnd",
                                      "BitwiseNot",
                                      "MaxPool",
                                      "AveragePool",
                                      "LpPool",
                                      "GlobalMaxPool",
                                      "GlobalAveragePool",
                                      "GlobalLpPool",
                                      "BatchNormalization",
                                      "InstanceNormalization",
                                      "LpNormalization",
                                      "CumSum",
                                      "Hardmax",
                                      "TopK",
                                      "Det",
                                      "MeanVarianceNormalization",
                                      "ConvTranspose",
                                      "GridSample"};
  for (const char* op : kDtypeSetOps) {
    const auto [tried, ran] = tried_and_ran[op];
    EXPECT_GT(tried, 0) << op;
    EXPECT_EQ(ran, tried) << op << " ran for " << ran << " of its " << tried
                          << " dtypes";
  }
  EXPECT_GT(runs, 500);
}

// Every op given fewer inputs than it reads (none, then one image) is
// refused with an error naming the node, or runs: never read past its
// inputs (SameAsInput0 once did for ops whose inputs are optional lists).
TEST(DtypeCoverageTest, EveryOpGivenTooFewInputsIsRefusedOrRuns) {
  int refused = 0;
  for (const OpDef* op : OpRegistry::Global().AllOps()) {
    if (op->stateful || op->blocking) continue;
    for (int inputs = 0; inputs < 2; ++inputs) {
      Graph graph;
      NodeDef node{.name = "node", .op = op->name};
      for (const AttrDef& attr : op->attrs) {
        auto it = AttrValuesGiven().find(attr.name);
        if (it != AttrValuesGiven().end()) node.attrs[attr.name] = it->second;
      }
      if (inputs == 1) {
        graph.Const("in0", Ones(DataType::kFloat32, Shape{1, 1, 2, 2}));
        node.inputs.push_back("in0");
      }
      Status status = graph.AddNode(std::move(node));
      if (status.ok()) {
        auto session =
            Session::Create(std::move(graph), test::PerSessionOptions(1, 1));
        status = session.status();
        if (session.ok()) {
          std::vector<Tensor> outputs;
          status = (*session)->Run({}, {"node"}, {}, &outputs);
        }
      }
      if (!status.ok()) {
        ++refused;
        EXPECT_THAT(std::string(status.message()),
                    ::testing::HasSubstr("'node'"))
            << op->name << " with " << inputs << " inputs: " << status;
      }
    }
  }
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace weft::internal
