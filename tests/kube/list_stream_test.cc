// File: tests/kube/list_stream_test.cc
//
// A Kubernetes list read as it arrives (list_stream.h): the same items and
// metadata as the whole answer parsed at once, at every chunk size; refusals
// of what is not a list; and RestClient::ListEach over a transport.

#include "controller/kube/list_stream.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <string>
#include <vector>

#include "controller/common/bounded_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::kube {
namespace {

using ::testing::HasSubstr;

// Hands `text` over `chunk` bytes at a time, then fails with `fail` if set.
class ChunkedSource : public http::BodySource {
 public:
  ChunkedSource(std::string text, size_t chunk, absl::Status fail = absl::OkStatus())
      : text_(std::move(text)), chunk_(chunk), fail_(std::move(fail)) {}
  absl::StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    if (offset_ == text_.size() && !fail_.ok()) return fail_;
    const size_t n = std::min({capacity, chunk_, text_.size() - offset_});
    std::memcpy(buffer, text_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  std::string text_;
  size_t chunk_, offset_ = 0;
  absl::Status fail_;
};

struct Read {
  absl::StatusOr<nlohmann::json> list;
  std::vector<nlohmann::json> items;
  absl::Status transport;
};

Read ReadText(const std::string& text, size_t chunk, int max_depth = kMaxKubeJsonDepth,
              absl::Status fail = absl::OkStatus()) {
  Read r;
  ChunkedSource source(text, chunk, std::move(fail));
  BodySourceStream buffer(source);
  std::istream in(&buffer);
  r.list = ReadList(in, max_depth, [&](nlohmann::json item) {
    r.items.push_back(std::move(item));
    return absl::OkStatus();
  });
  r.transport = buffer.transport_status();
  return r;
}

constexpr char kList[] = R"({"kind":"SlurmJobList","apiVersion":"hpc.slurmoperator.dev/v1alpha1",
  "metadata":{"resourceVersion":"42","continue":"abc"},
  "items":[{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"n":[1,2.5,-3,18446744073709551615,
  true,null,"s\u00e9\"\\"]}},{"metadata":{"name":"b"},"items":[{"nested":"items are not the list's"}]},
  7,"odd",[1,[2]],{}]})";

TEST(ReadListTest, EveryChunkSizeGivesTheItemsAndTheRestOfTheWholeAnswer) {
  const nlohmann::json whole = ParseBoundedJson(kList, kMaxKubeJsonDepth);
  ASSERT_FALSE(whole.is_discarded());
  nlohmann::json rest = whole;
  rest.erase("items");
  for (size_t chunk = 1; chunk <= std::strlen(kList); ++chunk) {
    Read r = ReadText(kList, chunk);
    ASSERT_TRUE(r.list.ok()) << chunk << ": " << r.list.status();
    EXPECT_EQ(*r.list, rest) << chunk;
    ASSERT_EQ(r.items.size(), whole["items"].size()) << chunk;
    for (size_t i = 0; i < r.items.size(); ++i) EXPECT_EQ(r.items[i], whole["items"][i]) << chunk;
  }
}

TEST(ReadListTest, AKeyGivenTwiceKeepsTheLaterValueAsTheWholeParseDoes) {
  Read r = ReadText(R"({"metadata":{"resourceVersion":"1","resourceVersion":"2"},"items":[]})", 3);
  ASSERT_TRUE(r.list.ok());
  EXPECT_EQ((*r.list)["metadata"]["resourceVersion"], "2");
}

TEST(ReadListTest, WhatIsNotAListIsRefused) {
  for (const char* text : {"", "<html>", "[1,2]", "\"x\"", R"({"items":{}})", R"({"items":3})",
                           R"({"items":[{"a":1}],"items":[]})", R"({"items":[{"a":1})",
                           R"({"items":[1,]})", R"({"items":[]} trailing)"}) {
    Read r = ReadText(text, 2);
    EXPECT_EQ(r.list.status().code(), absl::StatusCode::kInternal) << text;
  }
}

TEST(ReadListTest, NestingDeeperThanTheLimitIsRefusedBeforeItIsBuilt) {
  std::string deep = R"({"items":[)";
  for (int i = 0; i < 10; ++i) deep += "[";
  for (int i = 0; i < 10; ++i) deep += "]";
  deep += "]}";
  EXPECT_TRUE(ReadText(deep, 4, /*max_depth=*/12).list.ok());
  Read r = ReadText(deep, 4, /*max_depth=*/11);
  EXPECT_EQ(r.list.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.list.status().message(), HasSubstr("deeper than 11"));
}

TEST(ReadListTest, TheCallersRefusalStopsTheRead) {
  ChunkedSource source(R"({"items":[{"n":1},{"n":2},{"n":3}]})", 5);
  BodySourceStream buffer(source);
  std::istream in(&buffer);
  int seen = 0;
  absl::StatusOr<nlohmann::json> list = ReadList(in, 100, [&](nlohmann::json) {
    return ++seen == 2 ? absl::ResourceExhaustedError("enough") : absl::OkStatus();
  });
  EXPECT_EQ(list.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(seen, 2);
}

TEST(ReadListTest, ADroppedConnectionIsTheTransportsFailure) {
  Read r = ReadText(R"({"items":[{"n":1},{"n":)", 7, kMaxKubeJsonDepth,
                    absl::UnavailableError("connection reset"));
  EXPECT_FALSE(r.list.ok());
  EXPECT_EQ(r.transport.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.items.size(), 1u);  // what arrived whole was handed over
}

}  // namespace
}  // namespace slurmop::kube
