// A repository model's config.json on input that would crash or mislead
// its reader: each is refused, naming the file and what is wrong.
#include "serve/model_registry.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::serve {
namespace {

Status Apply(const std::string& json) {
  BatchingOptions batching;
  SessionOptions session;
  return ApplyModelConfig(json, "m/config.json", &batching, &session);
}

TEST(ModelConfigTest, NestingPastTheLimitIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& json :
       {R"({"max_batch_size": 1, "x": )" + deep + "}",
        R"({"parameters": {"gpu_options": )" + deep + "}}"}) {
    const Status status = Apply(json);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("m/config.json: objects and arrays nest "
                                    "deeper than 32 levels"),
              std::string::npos)
        << status.message();
  }
}

TEST(ModelConfigTest, ANumberPastADoubleIsAnError) {
  const Status status = Apply(R"({"max_batch_size": 1e400})");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("m/config.json"), std::string::npos);
}

TEST(ModelConfigTest, TritonsFieldsApply) {
  BatchingOptions batching;
  SessionOptions session;
  const Status status = ApplyModelConfig(
      R"({"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500}, "parameters": {"intra_op_parallelism_threads": 1}})",
      "m/config.json", &batching, &session);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(batching.max_batch_size, 8);
  EXPECT_EQ(batching.max_queue_delay_us, 500);
  EXPECT_EQ(session.intra_op_parallelism_threads, 1);
}

}  // namespace
}  // namespace weft::serve
