// String tensors: Cast to and from text, Equal, StringNormalizer,
// TfIdfVectorizer over pool_strings, the refusal of other ops, and the string
// ops of opset 20 (StringConcat, RegexFullMatch, StringSplit; their cases
// against ONNX Runtime are in tests/onnx/newer_opsets).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support/session_util.h"
#include "weft/graph_io.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

Tensor Strings(const Shape& shape, const std::vector<std::string>& values) {
  Tensor t(DataType::kString, shape);
  std::copy(values.begin(), values.end(), t.data<std::string>());
  return t;
}

std::vector<std::string> Texts(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(),
                                  t.data<std::string>() + t.NumElements());
}

TEST(StringTensorTest, AllocatesEmptyStringsAndComparesThem) {
  Tensor a = Strings({2}, {"x", "yz"});
  Tensor b = Strings({2}, {"x", "yz"});
  Tensor c = Strings({2}, {"x", "y"});
  EXPECT_TRUE(a.BitwiseEqual(b));
  EXPECT_FALSE(a.BitwiseEqual(c));
  EXPECT_EQ(Tensor(DataType::kString, Shape{3}).data<std::string>()[2], "");
  EXPECT_EQ(DataTypeFromName("string"), DataType::kString);
}

TEST(StringCastTest, NumbersToShortestTextAndBack) {
  auto text = test::RunOneOutput(
      "Cast", {Tensor::FromVector<float>({4}, {0.039187793f, 1e-5f, -2, 0})},
      {{"to", DataType::kString}});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(Texts(*text),
            (std::vector<std::string>{"0.039187793", "1e-05", "-2", "0"}));
  auto back = test::RunOneOutput("Cast", {*text}, {{"to", DataType::kFloat32}});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(test::Values<float>(*back),
            (std::vector<float>{0.039187793f, 1e-5f, -2, 0}));
  auto ints = test::RunOneOutput("Cast", {Strings({3}, {" 7", "+8", "-9 "})},
                                 {{"to", DataType::kInt64}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ(test::Values<int64_t>(*ints), (std::vector<int64_t>{7, 8, -9}));
}

TEST(StringCastTest, TextThatIsNoNumberFailsNamingTheElement) {
  auto bad = test::RunOneOutput("Cast", {Strings({2}, {"1.5", "1.5x"})},
                                {{"to", DataType::kFloat32}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("element 1: '1.5x' is not a float32"));
  auto overflow = test::RunOneOutput("Cast", {Strings({1}, {"300"})},
                                     {{"to", DataType::kInt8}});
  ASSERT_FALSE(overflow.ok());
  EXPECT_THAT(overflow.status().message(), HasSubstr("'300' is not a int8"));
}

TEST(StringOpsTest, EqualComparesStringsWithBroadcasting) {
  auto eq = test::RunOneOutput(
      "Equal", {Strings({3}, {"a", "b", "a"}), Strings({1}, {"a"})});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_EQ(test::Values<bool>(*eq), (std::vector<bool>{true, false, true}));
}

TEST(StringOpsTest, OtherOpsRefuseStringsAtCompile) {
  auto sum =
      test::RunOneOutput("Add", {Strings({1}, {"a"}), Strings({1}, {"b"})});
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(sum.status().message(),
              HasSubstr("op Add does not take string tensors"));
}

TEST(StringNormalizerTest, RemovesStopWordsThenChangesCase) {
  auto upper = test::RunOneOutput(
      "StringNormalizer",
      {Strings({1, 4}, {"Monday", "tuesday", "MONDAY", "x"})},
      {{"case_change_action", std::string("UPPER")},
       {"stopwords", std::vector<std::string>{"monday"}}});
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(upper->shape(), (Shape{1, 2}));
  EXPECT_EQ(Texts(*upper), (std::vector<std::string>{"TUESDAY", "X"}));
  // Case-sensitive: "Monday" is no stop word; all removed gives [""].
  auto sensitive = test::RunOneOutput(
      "StringNormalizer", {Strings({2}, {"monday", "Monday"})},
      {{"is_case_sensitive", int64_t{1}},
       {"stopwords", std::vector<std::string>{"monday"}}});
  ASSERT_TRUE(sensitive.ok()) << sensitive.status();
  EXPECT_EQ(Texts(*sensitive), (std::vector<std::string>{"Monday"}));
  auto none = test::RunOneOutput(
      "StringNormalizer", {Strings({2}, {"monday", "monday"})},
      {{"stopwords", std::vector<std::string>{"monday"}}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), (Shape{1}));
  EXPECT_EQ(Texts(*none), (std::vector<std::string>{""}));
}

TEST(StringNormalizerTest, RefusesLocalesBeyondAscii) {
  auto tr = test::RunOneOutput("StringNormalizer", {Strings({1}, {"i"})},
                               {{"case_change_action", std::string("UPPER")},
                                {"locale", std::string("tr_TR")}});
  ASSERT_FALSE(tr.ok());
  EXPECT_EQ(tr.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(tr.status().message(), HasSubstr("locale \"tr_TR\""));
}

TEST(TfIdfVectorizerTest, CountsStringNgramsOfThePool) {
  // Pool: 1-grams "a", "b"; 2-gram ("a", "b"). Tokens outside the pool
  // ("z") match nothing.
  auto y = test::RunOneOutput(
      "TfIdfVectorizer", {Strings({5}, {"a", "b", "z", "a", "b"})},
      {{"mode", std::string("TF")},
       {"min_gram_length", int64_t{1}},
       {"max_gram_length", int64_t{2}},
       {"max_skip_count", int64_t{0}},
       {"ngram_counts", std::vector<int64_t>{0, 2}},
       {"ngram_indexes", std::vector<int64_t>{0, 1, 2}},
       {"pool_strings", std::vector<std::string>{"a", "b", "a", "b"}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(test::Values<float>(*y), (std::vector<float>{2, 2, 2}));
}

TEST(StringConcatTest, ConcatenatesWithBroadcastingOrNamesBothShapes) {
  auto joined = test::RunOneOutput(
      "StringConcat", {Strings({2, 1}, {"a", "é"}), Strings({2}, {"1", ""})});
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->shape(), (Shape{2, 2}));
  EXPECT_EQ(Texts(*joined), (std::vector<std::string>{"a1", "a", "é1", "é"}));
  auto clash = test::RunOneOutput(
      "StringConcat", {Strings({2}, {"a", "b"}), Strings({3}, {"", "", ""})});
  ASSERT_FALSE(clash.ok());
  EXPECT_THAT(clash.status().message(), HasSubstr("[2]"));
  EXPECT_THAT(clash.status().message(), HasSubstr("[3]"));
}

TEST(RegexFullMatchTest, MatchesWholeStringsOnly) {
  auto matched = test::RunOneOutput("RegexFullMatch",
                                    {Strings({4}, {"abc", "xabc", "abcx", ""})},
                                    {{"pattern", std::string("a.c|")}});
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_EQ(test::Values<bool>(*matched),
            (std::vector<bool>{true, false, false, true}));
}

// RE2 never backtracks: a pattern that takes a backtracking engine time
// exponential in the string's length answers at once here.
TEST(RegexFullMatchTest, NestedRepetitionOnALongStringAnswers) {
  auto matched = test::RunOneOutput(
      "RegexFullMatch", {Strings({1}, {std::string(5000, 'a') + "!"})},
      {{"pattern", std::string("(a+)+b")}});
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_EQ(test::Values<bool>(*matched), (std::vector<bool>{false}));
}

TEST(RegexFullMatchTest, AnInvalidPatternIsRefusedWithRe2sReason) {
  auto refused = test::RunOneOutput("RegexFullMatch", {Strings({1}, {"a"})},
                                    {{"pattern", std::string("a(b")}});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("pattern \"a(b\" is not a valid RE2 expression: "
                        "missing )"));
}

// Python's str.split, ONNX's reference: a delimiter cuts at every
// occurrence; without one, runs of white space (Unicode's too) cut and
// the ends give no piece; maxsplit keeps the rest whole.
TEST(StringSplitTest, SplitsAsPythonsStrSplitAndPadsWithEmptyStrings) {
  auto split = [](Tensor x, AttrMap attrs) {
    auto out =
        test::RunOneNode("StringSplit", {std::move(x)}, std::move(attrs), 2);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *std::move(out) : std::vector<Tensor>(2);
  };
  auto on_comma = split(Strings({3}, {"a,,b", "", "c,"}),
                        {{"delimiter", std::string(",")}});
  EXPECT_EQ(on_comma[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(Texts(on_comma[0]),
            (std::vector<std::string>{"a", "", "b", "", "", "", "c", "", ""}));
  EXPECT_EQ(test::Values<int64_t>(on_comma[1]),
            (std::vector<int64_t>{3, 1, 2}));
  auto on_space = split(Strings({2}, {" x\ty\u3000z\u00a0", " \n "}), {});
  EXPECT_EQ(Texts(on_space[0]),
            (std::vector<std::string>{"x", "y", "z", "", "", ""}));
  EXPECT_EQ(test::Values<int64_t>(on_space[1]), (std::vector<int64_t>{3, 0}));
  auto limited =
      split(Strings({}, {"  a  b  c  "}), {{"maxsplit", int64_t{1}}});
  EXPECT_EQ(limited[0].shape(), (Shape{2}));
  EXPECT_EQ(Texts(limited[0]), (std::vector<std::string>{"a", "b  c  "}));
  auto none = split(Tensor(DataType::kString, Shape{0, 2}),
                    {{"delimiter", std::string("-")}});
  EXPECT_EQ(none[0].shape(), (Shape{0, 2, 0}));
  EXPECT_EQ(none[1].shape(), (Shape{0, 2}));
}

TEST(StringGraphJsonTest, StringConstantsRoundTrip) {
  GraphFile file;
  file.graph.Const("s", Strings({2}, {"hello", "wörld"}));
  file.outputs = {"s"};
  auto parsed = ParseGraph(SerializeGraph(file));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const Tensor& value =
      *parsed->graph.FindNode("s")->attrs.at("value").get_if<Tensor>();
  EXPECT_EQ(Texts(value), (std::vector<std::string>{"hello", "wörld"}));
}

}  // namespace
}  // namespace weft
