// File: tests/agentplatform/envelope_test.cc
//
// The callSlurmRestApi envelope: exact request bytes, both response forms
// (structuredBody; body as a string or an object), integer preservation, and
// rejection of what the envelope cannot carry.

#include "controller/agentplatform/envelope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace slurmop::agentplatform {
namespace {

using ::testing::HasSubstr;

TEST(EnvelopeRequest, GetHasNoBody) {
  absl::StatusOr<std::string> bytes =
      EncodeRequest(HttpMethod::kGet, "/slurm/v0.0.42/job/1234", nullptr);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, R"({"method":"HTTP_METHOD_GET","path":"/slurm/v0.0.42/job/1234"})");
}

TEST(EnvelopeRequest, DeleteHasNoBody) {
  absl::StatusOr<std::string> bytes =
      EncodeRequest(HttpMethod::kDelete, "/slurm/v0.0.42/job/7", nullptr);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, R"({"method":"HTTP_METHOD_DELETE","path":"/slurm/v0.0.42/job/7"})");
}

TEST(EnvelopeRequest, PostExactBytes) {
  const nlohmann::json body = {{"job", {{"time_limit", {{"number", 120}}}}}};
  absl::StatusOr<std::string> bytes =
      EncodeRequest(HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &body);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, R"({"method":"HTTP_METHOD_POST","path":"/slurm/v0.0.42/job/submit",)"
                    R"("body":{"job":{"time_limit":{"number":120}}}})");
}

TEST(EnvelopeRequest, PostEmptyObjectBodyIsSent) {
  const nlohmann::json body = nlohmann::json::object();
  absl::StatusOr<std::string> bytes = EncodeRequest(HttpMethod::kPost, "/x", &body);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, R"({"method":"HTTP_METHOD_POST","path":"/x","body":{}})");
}

TEST(EnvelopeRequest, PostRichBodyRoundTrips) {
  const nlohmann::json body = {{"script", "#!/bin/bash\necho \"hi\" </dev/null\n"},
                               {"job",
                                {{"name", "train-é"},
                                 {"partition", "a3"},
                                 {"minimum_nodes", 2},
                                 {"environment", {"PATH=/bin:/usr/bin"}},
                                 {"time_limit", {{"set", true}, {"number", 120}}},
                                 {"ratio", 0.25},
                                 {"comment", nullptr},
                                 {"negative", -3}}}};
  absl::StatusOr<std::string> bytes =
      EncodeRequest(HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &body);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const nlohmann::json parsed = nlohmann::json::parse(*bytes);
  EXPECT_EQ(parsed["method"], "HTTP_METHOD_POST");
  EXPECT_EQ(parsed["path"], "/slurm/v0.0.42/job/submit");
  EXPECT_EQ(parsed["body"], body);
  EXPECT_TRUE(parsed["body"]["job"]["minimum_nodes"].is_number_integer());
}

TEST(EnvelopeRequest, RejectsIntegersBeyondDoublePrecision) {
  const nlohmann::json body = {{"job", {{"id", 9007199254740993ULL}}}};
  absl::StatusOr<std::string> bytes = EncodeRequest(HttpMethod::kPost, "/x", &body);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("/job/id"));
  const nlohmann::json ok = {{"n", 9007199254740992LL}};
  EXPECT_TRUE(EncodeRequest(HttpMethod::kPost, "/x", &ok).ok());
}

TEST(EnvelopeRequest, RejectsNonObjectBody) {
  const nlohmann::json body = nlohmann::json::array({1, 2});
  EXPECT_EQ(EncodeRequest(HttpMethod::kPost, "/x", &body).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EnvelopeResponse, StructuredBody) {
  absl::StatusOr<SlurmResponse> r =
      DecodeResponse(R"({"status":200,"structuredBody":{"job_id":1234,"errors":[],"warnings":[],)"
                     R"("ratio":1.5,"big":4294967294,"nested":{"ids":[1,2,3]}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body["job_id"].is_number_integer());
  EXPECT_EQ(r->body["job_id"].get<int64_t>(), 1234);
  EXPECT_EQ(r->body["job_id"].dump(), "1234");
  EXPECT_TRUE(r->body["ratio"].is_number_float());
  EXPECT_DOUBLE_EQ(r->body["ratio"].get<double>(), 1.5);
  EXPECT_EQ(r->body["big"].get<int64_t>(), 4294967294LL);
  EXPECT_EQ(r->body["nested"]["ids"], nlohmann::json::array({1, 2, 3}));
  EXPECT_TRUE(r->body["errors"].is_array());
}

TEST(EnvelopeResponse, StructuredBodyPreferredOverBody) {
  absl::StatusOr<SlurmResponse> r =
      DecodeResponse(R"({"status":200,"structuredBody":{"a":1},"body":"{\"a\":2}"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, nlohmann::json({{"a", 1}}));
}

TEST(EnvelopeResponse, BodyStringIsParsed) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      R"({"status":404,"body":"{\"jobs\":[],\"errors\":[{\"error\":\"Job not found\",)"
      R"(\"error_number\":2017}],\"job_id\":9007199254740993}"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body["errors"][0]["error_number"].get<int>(), 2017);
  // Parsed by nlohmann directly: even integers beyond 2^53 are exact.
  EXPECT_EQ(r->body["job_id"].get<uint64_t>(), 9007199254740993ULL);
}

TEST(EnvelopeResponse, BodyStringThatIsNotJsonIsKeptAsString) {
  absl::StatusOr<SlurmResponse> r =
      DecodeResponse(R"({"status":500,"body":"Authentication failure"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, nlohmann::json("Authentication failure"));
}

TEST(EnvelopeResponse, BodyObjectIsTaken) {
  absl::StatusOr<SlurmResponse> r =
      DecodeResponse(R"({"status":200,"body":{"job_id":42,"warnings":[{"description":"w"}]}})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->body["job_id"].is_number_integer());
  EXPECT_EQ(r->body["job_id"].get<int>(), 42);
  EXPECT_EQ(r->body["warnings"][0]["description"], "w");
}

TEST(EnvelopeResponse, NoBodyIsNull) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(R"({"status":204})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 204);
  EXPECT_TRUE(r->body.is_null());
  r = DecodeResponse(R"({"status":200,"body":""})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->body.is_null());
}

TEST(EnvelopeResponse, UnknownFieldsAreIgnored) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      R"({"status":"200","structuredBody":{"x":true},"newField":{"a":1},"headers":[1]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body["x"], true);
}

TEST(EnvelopeResponse, NotAnEnvelope) {
  EXPECT_EQ(DecodeResponse("<html>hello</html>").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeResponse(R"({"structuredBody":{}})").status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeResponse(R"({"status":"abc"})").status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace slurmop::agentplatform
