#include "ops/kernel_switches.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "weft/weft.h"

namespace weft::internal {
namespace {

// Sets one variable for a test's scope and puts back what was there (the
// kernel-choice suites run this file with some of them set).
class ScopedSwitchVariable {
 public:
  ScopedSwitchVariable(KernelSwitch kernel_switch, const char* value)
      : name_(KernelSwitchVariable(kernel_switch)) {
    if (const char* old = getenv(name_)) saved_ = old;
    if (value == nullptr) {
      unsetenv(name_);
    } else {
      setenv(name_, value, 1);
    }
  }
  ~ScopedSwitchVariable() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedSwitchVariable(const ScopedSwitchVariable&) = delete;
  ScopedSwitchVariable& operator=(const ScopedSwitchVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(KernelSwitchTest, ZeroAndOneOverrideTheRuleAndUnsetKeepsIt) {
  {
    ScopedSwitchVariable off(KernelSwitch::kNchwWinograd, "0");
    EXPECT_EQ(KernelSwitchSetting(KernelSwitch::kNchwWinograd), false);
    EXPECT_FALSE(KernelSwitchOr(KernelSwitch::kNchwWinograd, true));
  }
  {
    ScopedSwitchVariable on(KernelSwitch::kDnnlMatMul, "1");
    EXPECT_TRUE(KernelSwitchOr(KernelSwitch::kDnnlMatMul, false));
  }
  ScopedSwitchVariable unset(KernelSwitch::kNhwcConv, nullptr);
  EXPECT_EQ(KernelSwitchSetting(KernelSwitch::kNhwcConv), std::nullopt);
  EXPECT_TRUE(KernelSwitchOr(KernelSwitch::kNhwcConv, true));
  EXPECT_FALSE(KernelSwitchOr(KernelSwitch::kNhwcConv, false));
}

TEST(KernelSwitchTest, AnyOtherValueFailsTheSessionNamingTheVariable) {
  ScopedSwitchVariable bad(KernelSwitch::kConvWinograd, "yes");
  EXPECT_EQ(KernelSwitchSetting(KernelSwitch::kConvWinograd), std::nullopt);
  const Status status = CheckKernelSwitchEnvironment();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("WEFT_CONV_WINOGRAD=yes is neither 0 nor 1"),
            std::string::npos)
      << status;
  auto session = Session::Create(Graph(), SessionOptions());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("WEFT_CONV_WINOGRAD=yes"),
            std::string::npos)
      << session.status();
}

TEST(KernelSwitchTest, EverySwitchHasItsOwnVariable) {
  const KernelSwitch all[] = {
      KernelSwitch::kNhwcConv, KernelSwitch::kConvWinograd,
      KernelSwitch::kDnnlMatMul, KernelSwitch::kNchwWinograd};
  for (const KernelSwitch kernel_switch : all) {
    ScopedSwitchVariable bad(kernel_switch, "2");
    const Status status = CheckKernelSwitchEnvironment();
    EXPECT_NE(status.message().find(
                  std::string(KernelSwitchVariable(kernel_switch)) + "=2"),
              std::string::npos)
        << status;
  }
}

}  // namespace
}  // namespace weft::internal
