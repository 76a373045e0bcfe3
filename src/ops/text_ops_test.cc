#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// Pool: unigrams 1 and 2 (outputs 0 and 1), bigram (1, 2) (output 2).
AttrMap Attrs(const std::string& mode, int64_t max_skip = 0) {
  return {{"mode", mode},
          {"min_gram_length", int64_t{1}},
          {"max_gram_length", int64_t{2}},
          {"max_skip_count", max_skip},
          {"ngram_counts", std::vector<int64_t>{0, 2}},
          {"ngram_indexes", std::vector<int64_t>{0, 1, 2}},
          {"pool_int64s", std::vector<int64_t>{1, 2, 1, 2}},
          {"weights", std::vector<double>{0.5, 2.0, 4.0}}};
}

std::vector<float> Vectorize(const std::vector<int64_t>& tokens,
                             AttrMap attrs) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  auto y = test::RunOneOutput("TfIdfVectorizer",
                              {Tensor::FromVector<int64_t>({n}, tokens)},
                              std::move(attrs));
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? test::Values<float>(*y) : std::vector<float>{};
}

TEST(TextOpsTest, TfIdfVectorizerCountsWeighsAndSkips) {
  // 1 2 3 1 2: unigram 1 twice, 2 twice, bigram (1, 2) twice.
  const std::vector<int64_t> tokens = {1, 2, 3, 1, 2};
  EXPECT_EQ(Vectorize(tokens, Attrs("TF")), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(Vectorize(tokens, Attrs("IDF")), (std::vector<float>{0.5, 2, 4}));
  EXPECT_EQ(Vectorize(tokens, Attrs("TFIDF")), (std::vector<float>{1, 4, 8}));
  // In 1 3 2, the bigram (1, 2) has one item between: it counts with one
  // skip allowed, not without. 1-grams count once per position either way.
  EXPECT_EQ(Vectorize({1, 3, 2}, Attrs("TF", 1)),
            (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(Vectorize({1, 3, 2}, Attrs("TF", 0)),
            (std::vector<float>{1, 1, 0}));
}

// A max_skip_count of 2^63 - 1 counts as any skip past the row does (it
// once looped that many times); an output index past 2^40 is refused.
TEST(TextOpsTest, TfIdfVectorizerTakesExtremeAttributeValues) {
  EXPECT_EQ(
      Vectorize({1, 3, 3, 2}, Attrs("TF", std::numeric_limits<int64_t>::max())),
      Vectorize({1, 3, 3, 2}, Attrs("TF", 4)));
  AttrMap attrs = Attrs("TF");
  attrs["ngram_indexes"] = std::vector<int64_t>{0, 1, int64_t{1} << 62};
  auto y = test::RunOneOutput("TfIdfVectorizer",
                              {Tensor::FromVector<int64_t>({1}, {1})}, attrs);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("must be in [0, 2^40)"));
}

TEST(TextOpsTest, TfIdfVectorizerRefusesAPoolItsCountsDoNotCut) {
  AttrMap attrs = Attrs("TF");
  attrs["pool_int64s"] = std::vector<int64_t>{1, 2, 1};
  auto y = test::RunOneOutput("TfIdfVectorizer",
                              {Tensor::FromVector<int64_t>({1}, {1})}, attrs);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("does not cut the pool"));
}

}  // namespace
}  // namespace weft
