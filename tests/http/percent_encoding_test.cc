// File: tests/http/percent_encoding_test.cc

#include "controller/http/percent_encoding.h"

#include "gtest/gtest.h"

namespace slurmop::http {
namespace {

TEST(PercentEncodingTest, KeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(PercentEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(PercentEncode("a/b?c=d&e#f"), "a%2Fb%3Fc%3Dd%26e%23f");
  EXPECT_EQ(PercentEncode(" +%"), "%20%2B%25");
  EXPECT_EQ(PercentEncode(std::string_view("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(PercentEncodingTest, NonAsciiLettersAreEncodedBytewise) {
  EXPECT_EQ(PercentEncode("\xc3\xa9"), "%C3%A9");  // é in UTF-8
}

}  // namespace
}  // namespace slurmop::http
