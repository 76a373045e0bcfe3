// The configuration readers on input that once crashed `weft run
// --config` (the small-parsers fuzzer's findings): each is refused with an
// InvalidArgument naming the file, where it is and what is wrong.
#include "weft/config_file.h"

#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

std::string Nested(const std::string& open, const std::string& close,
                   int levels, const std::string& inner) {
  std::string text;
  for (int i = 0; i < levels; ++i) text += open;
  text += inner;
  for (int i = 0; i < levels; ++i) text += close;
  return text;
}

TEST(ConfigTextTest, ANumberPastADoubleIsAnErrorNamingIt) {
  RunConfig config;
  const Status status = ApplyConfigText(
      R"({"inter_op_parallelism_threads": 1e400})", "cfg.json", &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cfg.json: "), std::string::npos);
  EXPECT_NE(status.message().find("1e400"), std::string::npos);
}

TEST(ConfigTextTest, JsonNestedPastTheLimitIsRefusedWhereItGoesTooDeep) {
  RunConfig config;
  const Status status = ApplyConfigText(
      "{\"gpu_options\":\n" + Nested("[", "]", 100000, "1") + "}", "cfg.json",
      &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cfg.json:2:32: syntax error: objects and "
                                  "arrays nest deeper than 32 levels"),
            std::string::npos)
      << status.message();
}

TEST(ConfigTextTest, TextFormatNestedPastTheLimitIsRefused) {
  for (const std::string& text :
       {"gpu_options " + Nested("{x: ", "}", 100000, "1"),
        "x: " + Nested("[", "]", 100000, "1"),
        "gpu_options " + Nested("<x ", ">", 100000, "")}) {
    RunConfig config;
    const Status status = ApplyConfigText(text, "cfg.pbtxt", &config);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(
                  "syntax error: messages and lists nest deeper than 32"),
              std::string::npos)
        << status.message();
  }
  RunConfig config;
  EXPECT_NE(ApplySetting("gpu_options=" + Nested("{x: ", "}", 40, "1"), &config)
                .message()
                .find("nest deeper than 32"),
            std::string::npos);
}

TEST(ConfigTextTest, NestingWithinTheLimitStillReachesTheFields) {
  // A pool message, in either syntax: as deep as ConfigProto goes.
  RunConfig text;
  ASSERT_TRUE(ApplyConfigText("session_inter_op_thread_pool {num_threads: 2}",
                              "cfg.pbtxt", &text)
                  .ok());
  ASSERT_EQ(text.session.session_inter_op_thread_pools.size(), 1u);
  EXPECT_EQ(text.session.session_inter_op_thread_pools[0].num_threads, 2);
  RunConfig json;
  const Status status = ApplyConfigText(
      R"({"session_inter_op_thread_pool": [{"num_threads": 3}]})", "cfg.json",
      &json);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(json.session.session_inter_op_thread_pools.size(), 1u);
  EXPECT_EQ(json.session.session_inter_op_thread_pools[0].num_threads, 3);
}

}  // namespace
}  // namespace weft
