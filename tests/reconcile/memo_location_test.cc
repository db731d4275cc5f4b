// File: tests/reconcile/memo_location_test.cc
//
// MemoLocation: reads as an optional, equal locations share one copy, and
// the pool forgets what nobody names.

#include "controller/reconcile/memo_location.h"

#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

MemoLocation::Location Where(const std::string& project, const std::string& region,
                             const std::string& cluster) {
  MemoLocation::Location l;
  l.set_project_id(project);
  l.set_region(region);
  l.set_cluster_id(cluster);
  return l;
}

TEST(MemoLocationTest, ReadsAsAnOptional) {
  MemoLocation none;
  EXPECT_FALSE(none.has_value());
  EXPECT_FALSE(none);
  EXPECT_EQ(none.value_or(Where("p", "r", "c")).cluster_id(), "c");
  EXPECT_EQ(none.ToOptional(), std::nullopt);

  MemoLocation some = Where("p", "r", "c1");
  ASSERT_TRUE(some);
  EXPECT_EQ(some->cluster_id(), "c1");
  EXPECT_EQ((*some).project_id(), "p");
  EXPECT_EQ(some.value_or(Where("p", "r", "c")).cluster_id(), "c1");
  ASSERT_TRUE(some.ToOptional().has_value());
  EXPECT_EQ(some.ToOptional()->region(), "r");
  some.reset();
  EXPECT_FALSE(some);
}

TEST(MemoLocationTest, EqualLocationsShareOneCopy) {
  MemoLocation a = Where("p", "r", "c");
  MemoLocation b = Where("p", "r", "c");
  MemoLocation other = Where("p", "rc", "");  // the same characters, split otherwise
  EXPECT_EQ(&*a, &*b);
  EXPECT_NE(&*a, &*other);
  EXPECT_EQ(other->region(), "rc");
  // Reassigning one holder leaves the other's value alone.
  b = Where("p", "r", "d");
  EXPECT_EQ(a->cluster_id(), "c");
  EXPECT_EQ(b->cluster_id(), "d");
}

TEST(MemoLocationTest, ThePoolForgetsWhatNobodyNames) {
  const size_t before = MemoLocation::PoolSizeForTest();
  {
    std::vector<MemoLocation> held;
    for (int i = 0; i < 100; ++i) held.emplace_back(Where("p", "r", "c" + std::to_string(i)));
    EXPECT_EQ(MemoLocation::PoolSizeForTest(), before + 100);
  }
  EXPECT_EQ(MemoLocation::PoolSizeForTest(), before);
}

}  // namespace
}  // namespace slurmop::reconcile
