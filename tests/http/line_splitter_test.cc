// File: tests/http/line_splitter_test.cc
//
// LineSplitter: lines split across pieces, coalesced lines, CRLF, stop.

#include "controller/http/line_splitter.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::http {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class LineSplitterTest : public ::testing::Test {
 protected:
  LineCallback collect_ = [this](const std::string& line) {
    lines_.push_back(line);
    return true;
  };
  std::vector<std::string> lines_;
};

TEST_F(LineSplitterTest, HoldsPartialLineUntilCompleted) {
  LineSplitter splitter(collect_);
  EXPECT_TRUE(splitter.Feed("{\"type\":\"ADD"));
  EXPECT_THAT(lines_, IsEmpty());
  EXPECT_EQ(splitter.pending_bytes(), 12u);
  EXPECT_TRUE(splitter.Feed("ED\"}\n{\"ty"));
  EXPECT_THAT(lines_, ElementsAre("{\"type\":\"ADDED\"}"));
  EXPECT_TRUE(splitter.Feed("pe\":\"X\"}\n"));
  EXPECT_THAT(lines_, ElementsAre("{\"type\":\"ADDED\"}", "{\"type\":\"X\"}"));
  EXPECT_EQ(splitter.pending_bytes(), 0u);
}

TEST_F(LineSplitterTest, SplitsCoalescedLinesAndSkipsBlankOnes) {
  LineSplitter splitter(collect_);
  EXPECT_TRUE(splitter.Feed("a\nb\r\n\n\r\nc\n"));
  EXPECT_THAT(lines_, ElementsAre("a", "b", "c"));
}

TEST_F(LineSplitterTest, StripsEveryTrailingCarriageReturn) {
  LineSplitter splitter(collect_);
  EXPECT_TRUE(splitter.Feed("a\r\r\nb\r\r\r\n\r\r\nc\rd\n"));
  EXPECT_TRUE(splitter.Feed("e\r\r"));
  EXPECT_TRUE(splitter.Finish());
  EXPECT_THAT(lines_, ElementsAre("a", "b", "c\rd", "e"));
}

TEST_F(LineSplitterTest, FinishDeliversUnterminatedLine) {
  LineSplitter splitter(collect_);
  EXPECT_TRUE(splitter.Feed("a\npartial"));
  EXPECT_TRUE(splitter.Finish());
  EXPECT_THAT(lines_, ElementsAre("a", "partial"));
}

TEST_F(LineSplitterTest, StopsWhenCallbackReturnsFalse) {
  int calls = 0;
  LineCallback stop_after_first = [&calls](const std::string&) { return ++calls < 1; };
  LineSplitter splitter(stop_after_first);
  EXPECT_FALSE(splitter.Feed("a\nb\nc\n"));
  EXPECT_EQ(calls, 1);
}

TEST_F(LineSplitterTest, ByteByByteFeeding) {
  LineSplitter splitter(collect_);
  const std::string stream = "one\ntwo\nthree\n";
  for (char c : stream) EXPECT_TRUE(splitter.Feed(std::string(1, c)));
  EXPECT_THAT(lines_, ElementsAre("one", "two", "three"));
}

// A line longer than the limit stops the splitter without delivering it,
// whether it arrives whole or piece by piece, and nothing past the limit is
// held; lines up to the limit pass.
TEST_F(LineSplitterTest, RefusesALineOverTheLimit) {
  LineSplitter whole(collect_, 8);
  EXPECT_TRUE(whole.Feed("12345678\n"));
  EXPECT_FALSE(whole.Feed("123456789\nafter\n"));
  EXPECT_TRUE(whole.overflowed());
  EXPECT_FALSE(whole.Feed("x\n"));
  EXPECT_THAT(lines_, ElementsAre("12345678"));

  lines_.clear();
  LineSplitter pieces(collect_, 8);
  EXPECT_TRUE(pieces.Feed("12345"));
  EXPECT_FALSE(pieces.Feed("6789"));
  EXPECT_TRUE(pieces.overflowed());
  EXPECT_EQ(pieces.pending_bytes(), 0u);
  EXPECT_THAT(lines_, IsEmpty());
}

}  // namespace
}  // namespace slurmop::http
