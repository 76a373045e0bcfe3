#include <gtest/gtest.h>

#include "test_support/session_util.h"
#include "weft/data.h"

namespace weft::data {
namespace {

// Element i: a float [2, 3] batch of value i.
Dataset Batches(int64_t count) {
  return Dataset::Range(0, count)
      .value()
      .Map(
          [](Element e) -> StatusOr<Element> {
            const auto v = static_cast<float>(*e[0].data<int64_t>());
            return Element{
                Tensor::FromVector<float>({2, 3}, std::vector<float>(6, v))};
          },
          2)
      .Prefetch(2);
}

Graph ReadAndSum(const std::string& iterator, DataType dtype) {
  Graph g;
  test::MustAdd(g, {"batch",
                    "IteratorGetNext",
                    {},
                    {{"iterator", iterator},
                     {"output_types", std::vector<DataType>{dtype}}},
                    ""});
  g.ReduceSum("sum", "batch", {}, /*keepdims=*/false);
  return g;
}

TEST(IteratorGetNextTest, EachRunReadsTheNextBatchUntilTheEnd) {
  for (int inter : {1, 2}) {
    const std::string name = "batches" + std::to_string(inter);
    ThreadPoolOptions pool_options;
    pool_options.num_threads = 1;
    ASSERT_TRUE(
        RegisterIterator(name, Batches(5),
                         {.pool = std::make_shared<ThreadPool>(pool_options)})
            .ok());
    auto session = test::MustCreate(ReadAndSum(name, DataType::kFloat32),
                                    test::PerSessionOptions(inter, 1));
    for (int i = 0; i < 5; ++i) {
      std::vector<Tensor> out = test::MustRun(*session, {"sum"});
      EXPECT_EQ(*out[0].data<float>(), 6.0f * static_cast<float>(i));
    }
    std::vector<Tensor> out;
    Status end = session->Run({}, {"sum"}, {}, &out);
    EXPECT_EQ(end.code(), StatusCode::kOutOfRange) << end;
    EXPECT_NE(end.message().find("end of sequence"), std::string::npos);
    EXPECT_TRUE(UnregisterIterator(name).ok());
  }
}

TEST(IteratorGetNextTest, MistakesAreNamed) {
  ASSERT_TRUE(RegisterIterator("typed", Batches(2)).ok());
  EXPECT_EQ(RegisterIterator("typed", Batches(2)).code(),
            StatusCode::kAlreadyExists);
  auto wrong = test::MustCreate(ReadAndSum("typed", DataType::kInt64),
                                test::PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = wrong->Run({}, {"sum"}, {}, &out);
  EXPECT_NE(s.message().find("component 0 is float32, output_types says int64"),
            std::string::npos)
      << s;
  EXPECT_TRUE(UnregisterIterator("typed").ok());
  EXPECT_EQ(UnregisterIterator("typed").code(), StatusCode::kNotFound);
  auto missing = test::MustCreate(ReadAndSum("nowhere", DataType::kFloat32),
                                  test::PerSessionOptions(1, 1));
  s = missing->Run({}, {"sum"}, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::data
