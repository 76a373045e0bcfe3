#include "session/session_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace weft::internal {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const SessionOptions& options) {
  return ValidateSessionOptions(options).message();
}

TEST(SessionOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateSessionOptions(SessionOptions{}).ok());
}

TEST(SessionOptionsTest, ThreadCountsAreCheckedAgainstOneLimit) {
  SessionOptions options;
  options.inter_op_parallelism_threads = kMaxThreads;
  options.intra_op_parallelism_threads = kMaxThreads;
  EXPECT_TRUE(ValidateSessionOptions(options).ok());
  options.intra_op_parallelism_threads = kMaxThreads + 1;
  EXPECT_THAT(ErrorOf(options),
              HasSubstr("SessionOptions.intra_op_parallelism_threads = 4097 "
                        "is out of range [0, 4096]"));
  options.intra_op_parallelism_threads = -1;
  EXPECT_THAT(ErrorOf(options), HasSubstr("intra_op_parallelism_threads"));
  options = {};
  options.inter_op_parallelism_threads = kMinInterOpThreads - 1;
  EXPECT_THAT(ErrorOf(options), HasSubstr("inter_op_parallelism_threads"));
  options = {};
  options.session_inter_op_thread_pools.push_back({kMaxThreads + 1, ""});
  EXPECT_THAT(ErrorOf(options),
              HasSubstr("session_inter_op_thread_pools[0].num_threads"));
}

TEST(SessionOptionsTest, SpinPinDevicesAndLimitsAreChecked) {
  SessionOptions options;
  options.intra_op_spin_us = -2;
  EXPECT_THAT(ErrorOf(options), HasSubstr("intra_op_spin_us"));
  options = {};
  options.inter_op_pin_cpus = {1 << 20};
  EXPECT_THAT(ErrorOf(options), HasSubstr("affinity mask"));
  options = {};
  options.device_count = {{"GPU", 1}};
  EXPECT_THAT(ErrorOf(options), HasSubstr("CPU only"));
  options.device_count = {{"CPU", 0}};
  EXPECT_THAT(ErrorOf(options), HasSubstr("device_count[\"CPU\"] = 0"));
  options = {};
  options.memory_limit_bytes = -1;
  EXPECT_THAT(ErrorOf(options), HasSubstr("memory_limit_bytes"));
  options = {};
  options.operation_timeout_ms = -1;
  EXPECT_THAT(ErrorOf(options), HasSubstr("operation_timeout_ms"));
  options = {};
  options.join_inline_cost_ns = -1;
  EXPECT_THAT(ErrorOf(options), HasSubstr("join_inline_cost_ns = -1"));
  options.join_inline_cost_ns = std::nan("");
  EXPECT_THAT(ErrorOf(options), HasSubstr("join_inline_cost_ns = nan"));
  options = {};
  options.inline_node_cost_ns = std::numeric_limits<double>::infinity();
  EXPECT_THAT(ErrorOf(options), HasSubstr("inline_node_cost_ns = inf"));
}

}  // namespace
}  // namespace weft::internal
