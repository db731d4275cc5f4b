// File: tests/common/bounded_json_test.cc
//
// ParseBoundedJson / NestsDeeperThan: the nesting limit on outside JSON,
// brackets inside strings, and a hostile million-level text refused without
// being parsed.

#include "controller/common/bounded_json.h"

#include <string>

#include "gtest/gtest.h"

namespace slurmop {
namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(BoundedJsonTest, CountsOnlyBracketsOutsideStrings) {
  EXPECT_FALSE(NestsDeeperThan(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(NestsDeeperThan(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_FALSE(NestsDeeperThan(R"({"a":"[[[[[[\"[[[["})", 1));
  EXPECT_FALSE(NestsDeeperThan(R"(["\\",[]])", 2));
  EXPECT_TRUE(NestsDeeperThan(R"(["\\",[[]]])", 2));
}

TEST(BoundedJsonTest, ParsesUpToTheLimitAndRefusesDeeper) {
  nlohmann::json ok = ParseBoundedJson(Nested(kMaxRemoteJsonDepth), kMaxRemoteJsonDepth);
  EXPECT_TRUE(ok.is_array());
  EXPECT_TRUE(
      ParseBoundedJson(Nested(kMaxRemoteJsonDepth + 1), kMaxRemoteJsonDepth).is_discarded());
  EXPECT_TRUE(ParseBoundedJson("{not json", kMaxRemoteJsonDepth).is_discarded());
}

TEST(BoundedJsonTest, AMillionLevelsAreRefusedQuickly) {
  const std::string hostile(1000 * 1000, '[');
  EXPECT_TRUE(ParseBoundedJson(hostile, kMaxKubeJsonDepth).is_discarded());
}

}  // namespace
}  // namespace slurmop
