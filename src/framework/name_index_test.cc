#include "framework/name_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::internal {
namespace {

// An index with the names it refers to, as Graph keeps them.
class IndexedNames {
 public:
  bool Add(const std::string& name) {
    const bool added =
        index_.Insert(name, static_cast<int>(names_.size()), NameOf());
    if (added) names_.push_back(name);
    return added;
  }
  int Find(const std::string& name) const {
    return index_.Find(name, NameOf());
  }
  size_t size() const { return index_.size(); }
  void Reserve(size_t n) { index_.Reserve(n); }

 private:
  struct NameAt {
    const std::vector<std::string>* names;
    const std::string& operator()(int i) const { return (*names)[i]; }
  };
  NameAt NameOf() const { return {&names_}; }

  NameIndex index_;
  std::vector<std::string> names_;
};

TEST(NameIndexTest, FindsEveryNameAtItsPositionThroughGrowth) {
  IndexedNames names;
  constexpr int kNames = 100'000;  // Many rehashes from the first slot on.
  for (int i = 0; i < kNames; ++i) {
    ASSERT_TRUE(names.Add("node_" + std::to_string(i)));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNames));
  for (int i = 0; i < kNames; ++i) {
    ASSERT_EQ(names.Find("node_" + std::to_string(i)), i);
  }
}

TEST(NameIndexTest, AbsentNamesAreNotFound) {
  IndexedNames names;
  EXPECT_EQ(names.Find("x"), -1);  // Empty index.
  for (int i = 0; i < 1000; ++i) names.Add("n" + std::to_string(i));
  EXPECT_EQ(names.Find("n1000"), -1);
  EXPECT_EQ(names.Find(""), -1);
  EXPECT_EQ(names.Find("n"), -1);
  EXPECT_EQ(names.Find("n10 "), -1);
}

TEST(NameIndexTest, ADuplicateIsRefusedAndChangesNothing) {
  IndexedNames names;
  ASSERT_TRUE(names.Add("a"));
  ASSERT_TRUE(names.Add("b"));
  EXPECT_FALSE(names.Add("a"));
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.Find("a"), 0);
  EXPECT_EQ(names.Find("b"), 1);
}

TEST(NameIndexTest, ReserveKeepsEntries) {
  IndexedNames names;
  ASSERT_TRUE(names.Add("a"));
  ASSERT_TRUE(names.Add("b"));
  names.Reserve(1'000'000);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.Find("a"), 0);
  EXPECT_EQ(names.Find("b"), 1);
  EXPECT_FALSE(names.Add("a"));
}

}  // namespace
}  // namespace weft::internal
