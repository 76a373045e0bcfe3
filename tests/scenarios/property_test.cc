// Property: for random DAGs of the kernel ops, with random widths, depths,
// shapes and several outputs, every thread configuration gives outputs
// bitwise identical to inter = -1 / intra = 1. A failure prints the seed;
// WEFT_PROPERTY_SEED=<seed> replays that one graph.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "test_support/sanitizers.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

// The sanitizers run ~10x slower.
constexpr int kGraphs = test::kUnderSanitizer ? 120 : 1000;

// A random DAG: a few RandomUniform sources, then nodes that each take
// earlier tensors of compatible shapes. Tensors are 2-D, [rows, cols].
class RandomGraph {
 public:
  explicit RandomGraph(uint64_t seed) : rng_(seed) {
    const int sources = Uniform(1, 3);
    for (int i = 0; i < sources; ++i) {
      AddSource(Uniform(1, 24), Uniform(1, 40));
    }
    const int nodes = Uniform(3, 40);
    for (int i = 0; i < nodes; ++i) AddRandomNode();
    const int outputs = Uniform(1, 4);
    for (int i = 0; i < outputs; ++i) {
      fetches_.push_back(Pick().name);
    }
  }

  const Graph& graph() const { return graph_; }
  const std::vector<std::string>& fetches() const { return fetches_; }

 private:
  struct Info {
    std::string name;
    int64_t rows, cols;
  };

  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::string NewName(const char* op) {
    return std::string(op) + "_" + std::to_string(next_id_++);
  }
  const Info& Pick() {
    return tensors_[Uniform(0, static_cast<int>(tensors_.size()) - 1)];
  }
  // Another tensor of the same shape, or a new source of that shape.
  Info SameShapeAs(const Info& a) {
    std::vector<const Info*> same;
    for (const Info& t : tensors_) {
      if (t.rows == a.rows && t.cols == a.cols) same.push_back(&t);
    }
    if (same.size() > 1 && Uniform(0, 3) != 0) {
      return *same[Uniform(0, static_cast<int>(same.size()) - 1)];
    }
    return AddSource(a.rows, a.cols);
  }
  Info AddSource(int64_t rows, int64_t cols) {
    const std::string name = NewName("source");
    test::MustAdd(graph_, {name,
                           "RandomUniform",
                           {},
                           {{"shape", Shape{rows, cols}},
                            {"low", -2.0},
                            {"high", 2.0},
                            {"seed", static_cast<int64_t>(rng_() % 100000)}},
                           ""});
    tensors_.push_back({name, rows, cols});
    return tensors_.back();
  }
  void Add(const char* op, std::vector<std::string> inputs, AttrMap attrs,
           int64_t rows, int64_t cols) {
    const std::string name = NewName(op);
    test::MustAdd(graph_, {name, op, std::move(inputs), std::move(attrs), ""});
    tensors_.push_back({name, rows, cols});
  }

  void AddRandomNode() {
    const Info a = Pick();
    switch (Uniform(0, 11)) {
      case 0:
      case 1: {
        static const char* kUnary[] = {"Relu",    "Neg", "Tanh",
                                       "Sigmoid", "Abs", "Exp"};
        const char* op = kUnary[Uniform(0, 5)];
        if (std::string(op) == "Exp") {  // Bounded input: no overflow.
          Add("Tanh", {a.name}, {}, a.rows, a.cols);
          Add("Exp", {tensors_.back().name}, {}, a.rows, a.cols);
        } else {
          Add(op, {a.name}, {}, a.rows, a.cols);
        }
        break;
      }
      case 2:
      case 3: {
        static const char* kBinary[] = {"Add", "Sub", "Mul", "Max", "Min"};
        const Info b = SameShapeAs(a);
        Add(kBinary[Uniform(0, 4)], {a.name, b.name}, {}, a.rows, a.cols);
        break;
      }
      case 4: {  // Broadcast a row: [rows, cols] + [1, cols].
        const Info row = AddSource(1, a.cols);
        Add("Add", {a.name, row.name}, {}, a.rows, a.cols);
        break;
      }
      case 5:
      case 6: {  // MatMul with a fresh weight, sometimes transposed.
        const int64_t n = Uniform(1, 48);
        const bool tb = Uniform(0, 1) == 1;
        const Info w = tb ? AddSource(n, a.cols) : AddSource(a.cols, n);
        Add("MatMul", {a.name, w.name}, {{"transpose_b", tb}}, a.rows, n);
        break;
      }
      case 7: {
        const int64_t axis = Uniform(0, 1);
        Add("ReduceSum", {a.name},
            {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}},
            axis == 0 ? 1 : a.rows, axis == 0 ? a.cols : 1);
        break;
      }
      case 8:
        Add(Uniform(0, 1) ? "Softmax" : "LogSoftmax", {a.name},
            {{"axis", int64_t{Uniform(0, 1) ? -1 : 0}}}, a.rows, a.cols);
        break;
      case 9:
        Add("Transpose", {a.name}, {{"perm", std::vector<int64_t>{1, 0}}},
            a.cols, a.rows);
        break;
      case 10: {
        const Info b = SameShapeAs(a);
        Add("Concat", {a.name, b.name}, {{"axis", int64_t{0}}}, 2 * a.rows,
            a.cols);
        break;
      }
      default: {
        const Info scale = AddSource(1, a.cols);
        Add("LayerNormalization", {a.name, scale.name}, {}, a.rows, a.cols);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  Graph graph_;
  std::vector<Info> tensors_;
  std::vector<std::string> fetches_;
  int next_id_ = 0;
};

SessionOptions RandomOptions(std::mt19937_64& rng) {
  static const int kInter[] = {-1, 1, 2, 3, 8};
  static const int kIntra[] = {1, 2, 3, 8};
  SessionOptions options;
  options.use_per_session_threads = rng() % 4 != 0;
  if (options.use_per_session_threads) {
    options.inter_op_parallelism_threads = kInter[rng() % 5];
    options.intra_op_parallelism_threads = kIntra[rng() % 4];
  }
  // Otherwise the process-wide pools at their (auto) sizes: asking them for
  // other sizes would only print a warning each time.
  return options;
}

void CheckOneGraph(uint64_t seed) {
  RandomGraph random(seed);
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  auto reference_session =
      test::MustCreate(random.graph(), test::PerSessionOptions(-1, 1));
  ASSERT_NE(reference_session, nullptr) << "seed " << seed;
  std::vector<Tensor> reference;
  Status s = reference_session->Run({}, random.fetches(), {}, &reference);
  ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s;
  for (int config = 0; config < 2; ++config) {
    const SessionOptions options = RandomOptions(rng);
    auto session = test::MustCreate(random.graph(), options);
    ASSERT_NE(session, nullptr) << "seed " << seed;
    std::vector<Tensor> out;
    s = session->Run({}, random.fetches(), {}, &out);
    ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s;
    ASSERT_EQ(out.size(), reference.size());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].BitwiseEqual(reference[i]))
          << "seed " << seed << ": fetch '" << random.fetches()[i]
          << "' differs with inter=" << options.inter_op_parallelism_threads
          << " intra=" << options.intra_op_parallelism_threads
          << " per_session=" << options.use_per_session_threads
          << " (replay: WEFT_PROPERTY_SEED=" << seed << ")";
    }
  }
}

TEST(PropertyTest, RandomGraphsAreBitwiseIdenticalForEveryThreadSetting) {
  if (const char* replay = std::getenv("WEFT_PROPERTY_SEED")) {
    CheckOneGraph(std::strtoull(replay, nullptr, 10));
    return;
  }
  for (int i = 0; i < kGraphs; ++i) {
    CheckOneGraph(1000 + static_cast<uint64_t>(i));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace weft
