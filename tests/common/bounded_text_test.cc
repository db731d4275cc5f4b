// File: tests/common/bounded_text_test.cc

#include "controller/common/bounded_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(Utf8Prefix, KeepsWholeSequencesOnly) {
  EXPECT_EQ(Utf8Prefix("abc", 5), "abc");
  EXPECT_EQ(Utf8Prefix("abc", 2), "ab");
  EXPECT_EQ(Utf8Prefix("a\u00e9b", 2), "a");  // é is 2 bytes: not half of it
  EXPECT_EQ(Utf8Prefix("a\u00e9b", 3), "a\u00e9");
  EXPECT_EQ(Utf8Prefix("\U0001F600x", 3), "");  // a 4-byte emoji
  EXPECT_EQ(Utf8Prefix("\U0001F600x", 4), "\U0001F600");
  EXPECT_EQ(Utf8Prefix("", 0), "");
}

TEST(CutText, TextThatFitsIsKeptWhole) {
  EXPECT_EQ(CutText("denied", 6), "denied");
  EXPECT_EQ(CutText("", 0), "");
}

TEST(CutText, ALongTextIsCutWithinTheLimitAndSaysHowMuchWasCut) {
  const std::string text(40000, 'x');
  const std::string cut = CutText(text, 512);
  EXPECT_LE(cut.size(), 512u);
  EXPECT_THAT(cut, StartsWith(std::string(400, 'x')));
  EXPECT_THAT(cut, EndsWith(" bytes cut)"));
  EXPECT_EQ(CutText(cut, 512), cut) << "a cut text is cut no further";
}

TEST(CutText, NoUtf8SequenceIsSplit) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "\xC3\xA9";  // é, two bytes
  for (size_t limit = 40; limit < 120; ++limit) {
    const std::string cut = CutText(text, limit);
    ASSERT_LE(cut.size(), limit);
    const size_t prefix = cut.find(' ');
    ASSERT_NE(prefix, std::string::npos);
    EXPECT_EQ(prefix % 2, 0u) << "limit " << limit << ": " << cut;
  }
}

TEST(CutText, ALimitTooSmallForTheMarkerStillHolds) {
  EXPECT_LE(CutText(std::string(100, 'x'), 10).size(), 10u);
}

}  // namespace
}  // namespace slurmop
