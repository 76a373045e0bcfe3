#include "weft/warnings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft {
namespace {

// A handler sees each warning with its category; the default prints it on
// stderr; SetWarningHandler returns the handler it replaced, so a caller
// can put it back.
TEST(WarningsTest, TheHandlerGetsEachWarningAndTheDefaultPrintsIt) {
  std::vector<Warning> seen;
  WarningHandler before = SetWarningHandler(
      [&seen](const Warning& warning) { seen.push_back(warning); });
  EmitWarning(WarningCategory::kThreading, "2 requested, 1 effective");
  EmitWarning(WarningCategory::kConfiguration, "ignoring X=y");
  WarningHandler mine = SetWarningHandler(before);
  EXPECT_TRUE(static_cast<bool>(mine));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].category, WarningCategory::kThreading);
  EXPECT_EQ(seen[0].message, "2 requested, 1 effective");
  EXPECT_EQ(std::string(WarningCategoryName(seen[1].category)),
            "configuration");

  WarningHandler previous = SetWarningHandler(nullptr);
  testing::internal::CaptureStderr();
  EmitWarning(WarningCategory::kPerformance, "no speed-up");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "weft: warning: no speed-up\n");
  SetWarningHandler(previous);
}

// The default printer says each distinct message once per process; a
// handler still gets every one.
TEST(WarningsTest, TheDefaultPrintsEachMessageOnce) {
  WarningHandler previous = SetWarningHandler(nullptr);
  testing::internal::CaptureStderr();
  EmitWarning(WarningCategory::kPerformance, "said once");
  EmitWarning(WarningCategory::kPerformance, "said once");
  EmitWarning(WarningCategory::kConfiguration, "said once too");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "weft: warning: said once\nweft: warning: said once too\n");
  int handled = 0;
  SetWarningHandler([&handled](const Warning&) { ++handled; });
  EmitWarning(WarningCategory::kPerformance, "said once");
  EmitWarning(WarningCategory::kPerformance, "said once");
  SetWarningHandler(previous);
  EXPECT_EQ(handled, 2);
}

}  // namespace
}  // namespace weft
