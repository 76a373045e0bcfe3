#include "weft/predict.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "io/image_codec.h"
#include "weft/npy.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

// A model that returns its input: the rows of the output are the items the
// pipeline made, so order and values can be checked.
constexpr char kIdentityModel[] = R"({"format": "weft-graph", "version": 1,
  "nodes": [{"name": "x", "op": "Placeholder", "attrs": {"dtype": "uint8"}},
            {"name": "y", "op": "Identity", "inputs": ["x"]}],
  "outputs": ["y"]})";

class PredictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weft_predict_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "images");
    std::ofstream(dir_ / "model.json") << kIdentityModel;
    // Image k: 4 x 4 pixels whose first byte is k, the others varied (so
    // crops and flips show; PNG keeps them exactly).
    for (int k = 0; k < 7; ++k) {
      Tensor image(DataType::kUInt8, Shape({4, 4, 3}));
      for (int i = 0; i < 48; ++i) {
        image.data<uint8_t>()[i] = static_cast<uint8_t>(k + i * 37 % 200);
      }
      const fs::path path =
          dir_ / "images" / ("img" + std::to_string(k) + ".png");
      std::ofstream(path, std::ios::binary)
          << internal::EncodePng(image).value();
      inputs_.push_back(path.string());
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  PredictOptions Options(const std::string& output) {
    PredictOptions options;
    options.model = (dir_ / "model.json").string();
    options.inputs = inputs_;
    options.preprocess = "decode";
    options.batch_size = 3;
    options.output = (dir_ / output).string();
    return options;
  }

  // A preprocessing graph file: crop and flip seeded by the key, as
  // imagenet-train.
  std::string AugmentGraph() {
    const fs::path graph = dir_ / "augment.json";
    std::ofstream(graph) << R"({"format": "weft-graph", "version": 1,
      "nodes": [
        {"name": "path", "op": "Placeholder", "attrs": {"dtype": "string"}},
        {"name": "key", "op": "Placeholder", "attrs": {"dtype": "int64"}},
        {"name": "bytes", "op": "ReadFile", "inputs": ["path"]},
        {"name": "image", "op": "DecodeImage", "inputs": ["bytes"]},
        {"name": "crop", "op": "RandomCrop", "inputs": ["image", "key"],
         "attrs": {"size": [2, 3], "seed": 9}},
        {"name": "item", "op": "RandomFlipLeftRight", "inputs": ["crop", "key"]}],
      "outputs": ["item"]})";
    return graph.string();
  }

  // The value of each output row (its first byte).
  static std::vector<int> RowValues(const Tensor& t) {
    std::vector<int> out;
    const int64_t row = t.NumElements() / t.shape().dim(0);
    for (int64_t r = 0; r < t.shape().dim(0); ++r) {
      out.push_back(t.data<uint8_t>()[r * row]);
    }
    return out;
  }

  std::string Text(const std::string& name) {
    std::ifstream in(dir_ / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
  std::vector<std::string> inputs_;
};

TEST_F(PredictTest, WritesRowsAndPathsInInputOrder) {
  auto summary = Predict(Options("preds.npy"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->predicted, 7);
  Tensor preds = ReadNpy((dir_ / "preds.npy").string()).value();
  EXPECT_EQ(preds.shape(), Shape({7, 4, 4, 3}));
  EXPECT_EQ(RowValues(preds), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  std::string listed;
  for (const std::string& input : inputs_) listed += input + "\n";
  EXPECT_EQ(Text("preds.npy.paths.txt"), listed);
  EXPECT_FALSE(fs::exists(dir_ / "preds.npy.partial"));

  // Run again: nothing left to do, nothing recomputed.
  auto again = Predict(Options("preds.npy"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->predicted, 0);
  EXPECT_EQ(again->resumed, 7);
  // Another job's inputs do not pass for this one's result.
  PredictOptions fewer = Options("preds.npy");
  fewer.inputs.pop_back();
  auto conflict = Predict(fewer);
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("choose another --output"),
            std::string::npos);
}

TEST_F(PredictTest, ResumesAnInterruptedJob) {
  PredictOptions options = Options("preds.npy");
  int batches = 0;
  options.progress = [&](const PredictProgress&) { ++batches; };
  options.stop_requested = [&] { return batches >= 2; };  // Start + 1 batch.
  auto stopped = Predict(options);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled);
  EXPECT_NE(stopped.status().message().find("3 of 7"), std::string::npos)
      << stopped.status();
  EXPECT_TRUE(fs::exists(dir_ / "preds.npy.partial" / "batch-0.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "preds.npy"));

  auto resumed = Predict(Options("preds.npy"));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->resumed, 3);
  EXPECT_EQ(resumed->predicted, 4);
  Tensor preds = ReadNpy((dir_ / "preds.npy").string()).value();
  EXPECT_EQ(RowValues(preds), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));

  // A partial job over other inputs is not mixed into this one.
  PredictOptions interrupted = Options("other.npy");
  interrupted.stop_requested = [] { return true; };
  ASSERT_FALSE(Predict(interrupted).ok());
  PredictOptions different = Options("other.npy");
  different.batch_size = 2;
  auto refused = Predict(different);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("remove it to start over"),
            std::string::npos);
}

TEST_F(PredictTest, DirectoryOutputWritesOneFilePerInput) {
  auto summary = Predict(Options("out"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  Tensor five = ReadNpy((dir_ / "out" / "img5.npy").string()).value();
  EXPECT_EQ(five.shape(), Shape({4, 4, 3}));
  EXPECT_EQ(five.data<uint8_t>()[0], 5);
  fs::remove(dir_ / "out" / "img2.npy");
  auto again = Predict(Options("out"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->resumed, 6);
  EXPECT_EQ(again->predicted, 1);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "img2.npy"));
}

TEST_F(PredictTest, ABadInputIsNamedOrSkipped) {
  std::ofstream(dir_ / "images" / "img3.png", std::ios::binary) << "not a png";
  auto failed = Predict(Options("preds.npy"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("img3.png: not a JPEG or PNG"),
            std::string::npos)
      << failed.status();

  PredictOptions skipping = Options("skipping.npy");
  skipping.skip_bad_inputs = true;
  auto summary = Predict(skipping);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->predicted, 6);
  ASSERT_EQ(summary->skipped.size(), 1u);
  EXPECT_EQ(summary->skipped[0].first, inputs_[3]);
  Tensor preds = ReadNpy((dir_ / "skipping.npy").string()).value();
  EXPECT_EQ(RowValues(preds), (std::vector<int>{0, 1, 2, 4, 5, 6}));
  EXPECT_NE(Text("skipping.npy.skipped.txt").find("img3.png\t"),
            std::string::npos);
}

TEST_F(PredictTest, ItemsOfDifferentShapesAreAnErrorNamingTheInput) {
  Tensor wide(DataType::kUInt8, Shape({4, 6, 3}));
  std::ofstream(dir_ / "images" / "img1.png", std::ios::binary)
      << internal::EncodePng(wide).value();
  auto failed = Predict(Options("preds.npy"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("img0.png and later inputs differ"),
            std::string::npos)
      << failed.status();
}

TEST_F(PredictTest, SeededRecipesGiveTheSameItemsWhateverTheThreads) {
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    PredictOptions options =
        Options("seeded" + std::to_string(threads) + ".npy");
    options.preprocess = AugmentGraph();
    options.session.use_per_session_threads = true;
    options.session.inter_op_parallelism_threads = threads;
    options.session.intra_op_parallelism_threads = threads;
    auto summary = Predict(options);
    ASSERT_TRUE(summary.ok()) << summary.status();
    results.push_back(ReadNpy(options.output).value());
  }
  EXPECT_EQ(results[0].shape(), Shape({7, 2, 3, 3}));
  EXPECT_TRUE(results[0].BitwiseEqual(results[1]));
  // The key varies the windows: items do not all come from one place.
  std::set<int> corners;
  for (int r = 0; r < 7; ++r) {
    corners.insert(results[0].data<uint8_t>()[r * 18] - r);
  }
  EXPECT_GT(corners.size(), 2u);
}

TEST_F(PredictTest, AJobCutIntoPartsInMemoryGivesTheWholeJobsRows) {
  PredictOptions whole = Options("whole.npy");
  whole.preprocess = AugmentGraph();
  ASSERT_TRUE(Predict(whole).ok());
  const Tensor expected = ReadNpy(whole.output).value();

  // Two parts on one opened model, other batch sizes; each part's keys
  // start at its first input's place in the whole job.
  auto model = PredictModel::Open(whole.model, SessionOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Tensor> rows;
  for (auto [first, count, batch] : {std::tuple{0, 4, 4}, {4, 3, 2}}) {
    PredictOptions part = Options("");
    part.output.clear();
    part.preprocess = whole.preprocess;
    part.opened_model = *model;
    part.batch_size = batch;
    part.inputs.assign(inputs_.begin() + first,
                       inputs_.begin() + first + count);
    part.key_offset = first;
    auto result = PredictToMemory(part);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->predicted.size(), static_cast<size_t>(count));
    rows.push_back(result->rows);
  }
  ASSERT_EQ(rows[0].shape(), Shape({4, 2, 3, 3}));
  const size_t row_bytes = expected.size_bytes() / 7;
  EXPECT_EQ(std::memcmp(rows[0].raw_data(), expected.raw_data(), 4 * row_bytes),
            0);
  EXPECT_EQ(
      std::memcmp(rows[1].raw_data(),
                  static_cast<const char*>(expected.raw_data()) + 4 * row_bytes,
                  3 * row_bytes),
      0);
}

TEST_F(PredictTest, InMemoryJobsSayWhatTheySkipped) {
  std::ofstream(dir_ / "images" / "img5.png", std::ios::binary) << "junk";
  PredictOptions options = Options("");
  options.output.clear();
  options.skip_bad_inputs = true;
  auto result = PredictToMemory(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->predicted, (std::vector<int64_t>{0, 1, 2, 3, 4, 6}));
  ASSERT_EQ(result->skipped.size(), 1u);
  EXPECT_EQ(result->skipped[0].first, 5);
  EXPECT_EQ(RowValues(result->rows), (std::vector<int>{0, 1, 2, 3, 4, 6}));
  // A path is refused: memory jobs write nothing.
  options.output = (dir_ / "x.npy").string();
  EXPECT_FALSE(PredictToMemory(options).ok());
}

TEST_F(PredictTest, OptionsAreChecked) {
  PredictOptions none = Options("p.npy");
  none.inputs.clear();
  EXPECT_FALSE(Predict(none).ok());
  PredictOptions zero = Options("p.npy");
  zero.batch_size = 0;
  EXPECT_FALSE(Predict(zero).ok());
  PredictOptions recipe = Options("p.npy");
  recipe.preprocess = "imagenette";
  auto bad = Predict(recipe);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a recipe"), std::string::npos);
}

}  // namespace
}  // namespace weft
