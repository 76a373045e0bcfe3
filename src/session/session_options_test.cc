#include "session/session_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string_view>

#include "weft/option_fields.h"

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

// The table (weft/option_fields.h) is what the checks, --config and Python
// read: its lookups, defaults and range messages.
TEST(SessionOptionFieldsTest, FieldsAreFoundByEitherSpelling) {
  const SessionOptionField* field =
      FindSessionOptionField("operation_timeout_ms");
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(field, FindSessionOptionField("operation_timeout_in_ms"));
  EXPECT_EQ(field->kind, OptionKind::kInt64);
  EXPECT_EQ(FindSessionOptionField("no_such_field"), nullptr);
  std::set<std::string_view> names;
  for (const SessionOptionField& f : SessionOptionFields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " is listed twice";
    EXPECT_FALSE(f.summary.empty()) << f.name;
  }
}

TEST(SessionOptionFieldsTest, DefaultsAreReadFromADefaultSessionOptions) {
  EXPECT_EQ(DefaultValueText(*FindSessionOptionField("join_inline_cost_ns")),
            "250000");
  EXPECT_EQ(DefaultValueText(*FindSessionOptionField("enable_mem_pattern")),
            "true");
  EXPECT_EQ(DefaultValueText(*FindSessionOptionField("inter_op_spin_us")),
            "-1");
  EXPECT_EQ(DefaultValueText(*FindSessionOptionField("intra_op_pin_cpus")),
            "[]");
}

TEST(SessionOptionFieldsTest, RangesAreCheckedAndNamed) {
  const SessionOptionField& spin = *FindSessionOptionField("intra_op_spin_us");
  EXPECT_TRUE(CheckOptionRange(spin, -1).ok());
  EXPECT_TRUE(CheckOptionRange(spin, kMaxSpinUs).ok());
  EXPECT_EQ(RangeText(spin), "-1 to 1000000");
  EXPECT_THAT(CheckOptionRange(spin, kMaxSpinUs + 1).message(),
              HasSubstr("SessionOptions.intra_op_spin_us = 1000001 is out of "
                        "range [-1, 1000000] (0: park at once)"));
  const SessionOptionField& limit =
      *FindSessionOptionField("memory_limit_bytes");
  EXPECT_EQ(RangeText(limit), ">= 0");
  EXPECT_TRUE(CheckOptionRange(limit, 1e18).ok());
  EXPECT_THAT(CheckOptionRange(limit, -5).message(),
              HasSubstr("memory_limit_bytes = -5 must be >= 0 (0: no limit)"));
  const SessionOptionField& cost =
      *FindSessionOptionField("inline_node_cost_ns");
  EXPECT_THAT(CheckOptionRange(cost, std::nan("")).message(),
              HasSubstr("must be a finite number >= 0"));
}

}  // namespace
}  // namespace weft::internal
