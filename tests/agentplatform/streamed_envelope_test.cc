// File: tests/agentplatform/streamed_envelope_test.cc
//
// DecodeResponseStream (envelope.h): the answer decoded as it streams in,
// job records handed to a sink one by one. Its result, with the sink's
// records put back in front of body.jobs, equals DecodeResponse's on the
// same text, whatever the chunking (every split point of small answers,
// one byte at a time); records over kMaxJobRecordBytes, nesting bombs,
// truncated answers, transport failures and a sink's refusal are errors
// that say so, found before the rest of the answer is read.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/agentplatform/envelope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/chunked_body_source.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::testing::ChunkedBodySource;
using ::slurmop::testing::CollectingSink;
using ::testing::HasSubstr;
using Json = nlohmann::json;

CallOptions Filtered(CollectingSink* sink) {
  CallOptions options;
  options.job_fields = {"job_id", "job_state", "comment"};
  options.job_sink = sink;
  return options;
}

// The streamed result with the sink's records put back in front of body.jobs.
absl::StatusOr<SlurmResponse> Streamed(const std::string& text, std::vector<size_t> chunks,
                                       const std::vector<std::string>& job_fields) {
  CollectingSink sink;
  CallOptions options;
  options.job_fields = job_fields;
  options.job_sink = &sink;
  ChunkedBodySource source(text, std::move(chunks));
  absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, options);
  if (!r.ok()) return r;
  if (!sink.records.empty()) {
    EXPECT_TRUE(r->body.is_object() && r->body.contains("jobs") && r->body["jobs"].is_array());
    if (!r->body.is_object()) return r;
    Json merged = Json::array();
    for (Json& j : sink.records) merged.push_back(std::move(j));
    for (Json& j : r->body["jobs"]) merged.push_back(std::move(j));
    r->body["jobs"] = std::move(merged);
  }
  return r;
}

std::string Describe(const absl::StatusOr<SlurmResponse>& r) {
  if (!r.ok()) return "error";
  return absl::StrCat(r->status, " ", r->body.dump());
}

const Json kBody = Json::parse(R"({"meta":{"plugin":{"type":"openapi/v0.0.42"}},
  "jobs":[{"job_id":1,"job_state":["RUNNING"],"nodes":"n[1-2]","comment":"slurmop:abc"},
          {"job_id":2,"job_state":["PENDING"],"array":{"a":[1,[2,{"b":3}]]}},
          7, [8, 9], {"job_id":3,"comment":"\u00e9\ud83d\ude00 \"q\" \\ / \n"}],
  "last_update":{"set":true,"number":1733000000},"errors":[],"warnings":[{"description":"w"}]})");

std::vector<std::string> Texts() {
  const std::string body = kBody.dump();
  const std::string ascii_body = kBody.dump(-1, ' ', /*ensure_ascii=*/true);
  return {
      Json{{"status", 200}, {"structuredBody", kBody}}.dump(),
      Json{{"status", 200}, {"body", kBody}}.dump(),
      Json{{"status", 200}, {"body", body}}.dump(),
      Json{{"status", 200}, {"body", ascii_body}}.dump(-1, ' ', /*ensure_ascii=*/true),
      Json{{"body", body}, {"status", "200"}, {"x", {{"y", {1, 2, "}"}}}}}.dump(),
      R"({"status":404,"body":"Unable find requested URL"})",
      R"({"status":200,"body":""})",
      R"({"status":200,"body":"1, 2"})",
      R"({"status":200,"body":"1, \"status\": 500"})",
      R"({"status":200,"body":"{} x"})",
      R"({"status":200,"body":" 42 "})",
      R"({"status":200,"body":"{\"jobs\":[{\"job_id\":1}]}","structuredBody":{"jobs":[{"job_id":2}]}})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":2}]},"body":"{\"jobs\":[{\"job_id\":1}]}"})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":2}]},"structuredBody":{"jobs":[{"job_id":4}]}})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":2}]},"structuredBody":null})",
      R"({"status":200,"body":{"jobs":[{"job_id":2}]},"body":{"jobs":[{"job_id":5}]}})",
      R"({"status":200,"body":"{\"jobs\":[{\"job_id\":1}],\"jobs\":[{\"job_id\":6}]}"})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":1}],"jobs":[]}})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":1,"job_id":2}]}})",
      R"({"status":200,"body":"{\"jobs\":[{\"job_id\":1,\"job_id\":2}]}"})",
      R"({"status":200,"body":"{\"jobs\":[{\"job_id\":18014398509481985}]}"})",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":18014398509481985}]}})",
      R"({"status":200,"body":"\ud800"})",
      R"({"status":200,"body":"\u00"})",
      R"({"status":200,"body":"{\"a\":\"\\u00e9\"}"})",
      R"({"status":200,"bod\u0079":"{\"jobs\":[{\"job_id\":1}]}"})",
      R"({"status":200,"structuredBody":[]})",
      R"({"status":0})",
      R"({})",
      R"([])",
      R"("x")",
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":1}]}} trailing)",
  };
}

TEST(StreamedEnvelopeTest, EqualsTheWholeDecodeAtEveryChunkBoundary) {
  for (const std::vector<std::string>& fields :
       {std::vector<std::string>{}, std::vector<std::string>{"job_id", "job_state"}}) {
    CallOptions whole_options;
    whole_options.job_fields = fields;
    for (const std::string& text : Texts()) {
      SCOPED_TRACE(text.substr(0, 120));
      const std::string want = Describe(DecodeResponse(text, whole_options));
      EXPECT_EQ(Describe(Streamed(text, {text.size() + 1}, fields)), want);
      EXPECT_EQ(Describe(Streamed(text, {1}, fields)), want);
      for (size_t k = 1; k < text.size(); ++k) {
        ASSERT_EQ(Describe(Streamed(text, {k, text.size()}, fields)), want) << "split at " << k;
      }
    }
  }
}

TEST(StreamedEnvelopeTest, RecordsReachTheSinkAsTheyCloseAndAreNotKept) {
  CollectingSink sink;
  const std::string text = Json{{"status", 200}, {"body", kBody.dump()}}.dump();
  ChunkedBodySource source(text, {3});
  absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(sink.records.size(), 5u);
  EXPECT_EQ(sink.records[0], Json::parse(R"({"job_id":1,"job_state":["RUNNING"],
                                             "comment":"slurmop:abc"})"));
  EXPECT_EQ(sink.records[2], Json(7));
  EXPECT_EQ(sink.records[4]["comment"], "\u00e9\U0001F600 \"q\" \\ / \n");
  EXPECT_EQ(r->body["jobs"], Json::array());
  EXPECT_EQ(r->body["last_update"]["number"], 1733000000);
}

TEST(StreamedEnvelopeTest, TruncatedAnswersAreErrors) {
  for (const std::string& text : {Json{{"status", 200}, {"structuredBody", kBody}}.dump(),
                                  Json{{"status", 200}, {"body", kBody.dump()}}.dump()}) {
    for (size_t n = 0; n < text.size(); ++n) {
      CollectingSink sink;
      ChunkedBodySource source(text.substr(0, n), {5});
      absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
      ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes";
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
      EXPECT_THAT(r.status().message(), HasSubstr("not a callSlurmRestApi envelope"));
    }
  }
}

std::string BigList(size_t records, size_t comment_bytes) {
  std::string out = R"({"status":200,"structuredBody":{"jobs":[)";
  for (size_t i = 0; i < records; ++i) {
    if (i > 0) out += ',';
    out += absl::StrCat(R"({"job_id":)", i + 1, R"(,"comment":")", std::string(comment_bytes, 'c'),
                        R"(","other":")", std::string(comment_bytes, 'o'), R"("})");
  }
  return out + "]}}";
}

TEST(StreamedEnvelopeTest, ARecordOverTheLimitIsRefusedBeforeItIsRead) {
  const std::string text = BigList(3, kMaxJobRecordBytes / 2 + 10);  // record 1 is over
  CollectingSink sink;
  ChunkedBodySource source(text, {4096});
  absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat("over the ", kMaxJobRecordBytes,
                                     "-byte limit of one record (record 1)")));
  EXPECT_LT(source.offset(), kMaxJobRecordBytes + 2 * 65536);  // the rest never read

  // Records just under the limit, many of them: all arrive.
  const std::string fine = BigList(4, kMaxJobRecordBytes / 2 - 100);
  CollectingSink all;
  ChunkedBodySource fine_source(fine, {65536});
  r = DecodeResponseStream(fine_source, Filtered(&all));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(all.records.size(), 4u);
  EXPECT_FALSE(all.records[3].contains("other"));
}

TEST(StreamedEnvelopeTest, DepthBombsStopAtTheLimit) {
  const std::string bomb(1 << 22, '[');  // 4 MiB deep, more than the whole-decode size
  {
    CollectingSink sink;
    ChunkedBodySource source(absl::StrCat(R"({"status":200,"structuredBody":{"jobs":[{"a":)", bomb),
                             {65536});
    absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("nested deeper than 100 levels"));
  }
  {
    CollectingSink sink;
    ChunkedBodySource source(absl::StrCat(R"({"status":200,"body":")", bomb, R"("})"), {65536});
    absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("its body is nested deeper than 100 levels"));
  }
  {  // a body string's JSON nests from its own root: 100 levels inside one are fine
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    CollectingSink sink;
    ChunkedBodySource source(absl::StrCat(R"({"status":200,"body":")", deep, R"("})"), {7});
    absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
    EXPECT_TRUE(r.ok()) << r.status();
  }
}

TEST(StreamedEnvelopeTest, ALargeBodyStringThatIsNotJsonIsNamed) {
  const std::string text = absl::StrCat(R"({"status":200,"body":"not json )",
                                        std::string(kMaxWholeDecodeBytes, 'x'), R"("})");
  CollectingSink sink;
  ChunkedBodySource source(text, {65536});
  absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("its body string does not hold one JSON value"));
}

TEST(StreamedEnvelopeTest, ATransportFailureIsTheTransportsAndARefusalTheSinks) {
  const std::string text = Json{{"status", 200}, {"structuredBody", kBody}}.dump();
  {
    CollectingSink sink;
    ChunkedBodySource source(text, {16}, text.size() / 2);
    absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(r.status().message(), HasSubstr("connection reset"));
  }
  {
    CollectingSink sink;
    sink.refuse_at = 1;
    ChunkedBodySource source(text, {16});
    absl::StatusOr<SlurmResponse> r = DecodeResponseStream(source, Filtered(&sink));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("refused here"));
  }
}

}  // namespace
}  // namespace slurmop::agentplatform
