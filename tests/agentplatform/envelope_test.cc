// File: tests/agentplatform/envelope_test.cc
//
// The callSlurmRestApi envelope: exact request bytes, both response forms
// (structuredBody; body as a string or an object), integer preservation,
// rejection of what the envelope cannot carry, protobuf's JSON mapping rules
// (field spellings, status as a number or a numeric string, wrong types),
// and the `jobs` key filter.

#include "controller/agentplatform/envelope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/common/bounded_text.h"

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

TEST(EnvelopeRequest, RejectsWhatAStructCannotCarry) {
  nlohmann::json nan = {{"x", {{"ratio", std::nan("")}}}};
  absl::StatusOr<std::string> bytes = EncodeRequest(HttpMethod::kPost, "/x", &nan);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("non-finite number at /x/ratio"));

  nlohmann::json negative = {{"ids", {1, -9007199254740993LL}}};
  bytes = EncodeRequest(HttpMethod::kPost, "/x", &negative);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("at /ids/1, beyond 2^53"));

  nlohmann::json deep = nlohmann::json::object();
  nlohmann::json* at = &deep;
  for (int i = 0; i < 101; ++i) at = &((*at)["a"] = nlohmann::json::object());
  bytes = EncodeRequest(HttpMethod::kPost, "/x", &deep);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("nests deeper than 100 levels"));

  nlohmann::json not_utf8 = {{"script", std::string("#!/bin/sh\n\xff\xfe")}};
  bytes = EncodeRequest(HttpMethod::kPost, "/x", &not_utf8);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << bytes.status();
}

TEST(EnvelopeRequest, PathIsAJsonString) {
  absl::StatusOr<std::string> bytes =
      EncodeRequest(HttpMethod::kGet, "/slurmdb/v0.0.42/jobs?job_name=a%22b\"c", nullptr);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes,
            R"({"method":"HTTP_METHOD_GET","path":"/slurmdb/v0.0.42/jobs?job_name=a%22b\"c"})");
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

TEST(EnvelopeResponse, StatusIsANumberOrANumericString) {
  for (const char* text : {R"({"status":200})", R"({"status":"200"})", R"({"status":"+200"})",
                           R"({"status":2e2})", R"({"status":200.0})"}) {
    absl::StatusOr<SlurmResponse> r = DecodeResponse(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status();
    EXPECT_EQ(r->status, 200) << text;
  }
  absl::StatusOr<SlurmResponse> r = DecodeResponse(R"({"status":"-5"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, -5);
}

TEST(EnvelopeResponse, StatusOfAnotherTypeOrOutOfRangeIsRefused) {
  for (const char* text :
       {R"({"status":{}})", R"({"status":[200]})", R"({"status":true})", R"({"status":200.5})",
        R"({"status":3000000000})", R"({"status":"3000000000"})", R"({"status":""})",
        R"({"status":" 200"})", R"({"status":"200 "})", R"({"status":"2e2"})",
        R"({"status":"200.0"})", R"({"status":"0x10"})", R"({"status":-2147483649})"}) {
    absl::StatusOr<SlurmResponse> r = DecodeResponse(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << text;
    EXPECT_THAT(r.status().message(), HasSubstr("not a callSlurmRestApi envelope")) << text;
  }
}

TEST(EnvelopeResponse, MissingOrZeroStatusIsNotAnEnvelope) {
  for (const char* text : {R"({})", R"({"status":0,"structuredBody":{}})", R"({"status":null})",
                           R"({"status":"0"})", R"({"Status":200})", R"({"x":{"status":200}})"}) {
    absl::StatusOr<SlurmResponse> r = DecodeResponse(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << text;
    EXPECT_THAT(r.status().message(), HasSubstr("(no status)")) << text;
  }
}

TEST(EnvelopeResponse, MalformedJsonIsNotAnEnvelope) {
  for (const char* text :
       {"", "   ", "{", R"({"status":200)", R"({"status":200} x)", R"({"status":200,})",
        R"({"status":200,"structuredBody":{'x':1}})", R"({"status":200,"unknown":tru})",
        R"({"status":200,"structuredBody":{"x":NaN}})",
        R"({"status":200,"structuredBody":{"x":1e400}})",
        R"({"status":200,"structuredBody":{"s":"\ud800"}})", R"([{"status":200}])", "5",
        R"("status")"}) {
    absl::StatusOr<SlurmResponse> r = DecodeResponse(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << text;
  }
}

TEST(EnvelopeResponse, StructuredBodyMayBeSpelledAsInTheProto) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(R"({"status":200,"structured_body":{"a":1}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, nlohmann::json({{"a", 1}}));
  // Other spellings are unknown fields.
  r = DecodeResponse(R"({"status":200,"structuredbody":{"a":1}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->body.is_null());
}

TEST(EnvelopeResponse, StructuredBodyNullIsAbsentAndAnythingButAnObjectIsRefused) {
  absl::StatusOr<SlurmResponse> r =
      DecodeResponse(R"({"status":200,"structuredBody":null,"body":"{\"a\":1}"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, nlohmann::json({{"a", 1}}));
  for (const char* text :
       {R"({"status":200,"structuredBody":[1]})", R"({"status":200,"structuredBody":"{}"})",
        R"({"status":200,"structuredBody":5})", R"({"status":200,"structuredBody":true})"}) {
    EXPECT_EQ(DecodeResponse(text).status().code(), absl::StatusCode::kInternal) << text;
  }
}

TEST(EnvelopeResponse, AFieldGivenTwiceCountsOnceTheLaterOne) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      R"({"status":500,"structuredBody":{"a":1},"status":200,"structured_body":{"b":2}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, nlohmann::json({{"b", 2}}));
  // A null message field sets nothing.
  r = DecodeResponse(R"({"status":200,"structuredBody":{"a":1},"structuredBody":null})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, nlohmann::json({{"a", 1}}));
}

TEST(EnvelopeResponse, IntegralNumbersComeBackAsIntegersAsThroughADouble) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      R"({"status":200,"structuredBody":{"a":12.0,"b":1e2,"c":-0.0,"d":1.5,"e":-7,)"
      R"("big":9007199254740993,"bigger":18014398509481985,"u":18446744073709551615,)"
      R"("list":[3.0,{"n":4.0}]}})");
  ASSERT_TRUE(r.ok()) << r.status();
  const nlohmann::json& b = r->body;
  EXPECT_EQ(b["a"].dump(), "12");
  EXPECT_EQ(b["b"].dump(), "100");
  EXPECT_EQ(b["c"].dump(), "0");
  EXPECT_TRUE(b["d"].is_number_float());
  EXPECT_EQ(b["e"].get<int64_t>(), -7);
  // As a double, 2^53 + 1 is 2^53, an integer still; beyond, a double.
  EXPECT_TRUE(b["big"].is_number_integer());
  EXPECT_EQ(b["big"].get<int64_t>(), 9007199254740992LL);
  EXPECT_TRUE(b["bigger"].is_number_float());
  EXPECT_DOUBLE_EQ(b["bigger"].get<double>(), 18014398509481984.0);
  EXPECT_TRUE(b["u"].is_number_float());
  EXPECT_EQ(b["list"].dump(), R"([3,{"n":4}])");
  // Integers come back signed, as from a double.
  EXPECT_FALSE(b["e"].is_number_unsigned());
  EXPECT_FALSE(b["a"].is_number_unsigned());

  // The same for a `body` value; a `body` string is parsed as it is.
  r = DecodeResponse(R"({"status":200,"body":[1,2.0,3.5]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body.dump(), "[1,2,3.5]");
  r = DecodeResponse(R"({"status":200,"body":12.0})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body.dump(), "12");
  r = DecodeResponse(R"({"status":200,"body":"{\"x\":12.0}"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->body["x"].is_number_float());
}

TEST(EnvelopeResponse, BodyScalarsAndStrings) {
  absl::StatusOr<SlurmResponse> r = DecodeResponse(R"({"status":200,"body":true})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, nlohmann::json(true));
  r = DecodeResponse(R"({"status":200,"body":null})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->body.is_null());
  r = DecodeResponse(R"({"status":200,"body":"5"})");  // a string holding JSON
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, nlohmann::json(5));
  r = DecodeResponse(R"({"status":200,"body":"null"})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->body.is_null());
  r = DecodeResponse(R"({"status":200,"body":"  "})");  // not JSON: kept
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, nlohmann::json("  "));
  r = DecodeResponse(R"({"status":200,"body":"{\"a\":1} trailing"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, nlohmann::json("{\"a\":1} trailing"));
}

TEST(EnvelopeResponse, ARepeatedKeyInAStructIsRefusedInABodyStringTheLaterWins) {
  EXPECT_EQ(DecodeResponse(R"({"status":200,"structuredBody":{"a":1,"a":2}})").status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeResponse(R"({"status":200,"body":{"a":{"b":1,"b":2}}})").status().code(),
            absl::StatusCode::kInternal);
  // Unknown fields are not read.
  EXPECT_TRUE(DecodeResponse(R"({"status":200,"unknown":{"a":1,"a":2}})").ok());
  absl::StatusOr<SlurmResponse> r = DecodeResponse(R"({"status":200,"body":"{\"a\":1,\"a\":2}"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, nlohmann::json({{"a", 2}}));
}

// The error may quote the answer (here a 100 KB key): it is cut like any remote text, since it
// reaches a SlurmJob's status.message, which nothing else bounds.
TEST(EnvelopeResponse, AnErrorQuotingTheAnswerIsCut) {
  const std::string key(100000, 'k');
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      absl::StrCat(R"({"status":200,"structuredBody":{")", key, R"(":1,")", key, R"(":2}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 2 * kMaxRemoteMessageBytes) << r.status().message();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("bytes cut"));
}

TEST(EnvelopeResponse, NestingIsLimited) {
  auto nested = [](int levels) {
    return std::string(levels, '[') + "1" + std::string(levels, ']');
  };
  // The envelope and structuredBody are two levels.
  EXPECT_TRUE(DecodeResponse(R"({"status":200,"structuredBody":{"a":)" + nested(98) + "}}").ok());
  EXPECT_EQ(
      DecodeResponse(R"({"status":200,"structuredBody":{"a":)" + nested(99) + "}}").status().code(),
      absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeResponse(R"({"status":200,"unknown":)" + nested(100) + "}").status().code(),
            absl::StatusCode::kInternal);
}

// A v0.0.42-like list: two jobs with more keys than are kept, and elements
// and keys that are not job records.
constexpr char kList[] =
    R"({"jobs":[{"job_id":1,"name":"a","account":"x","job_state":["RUNNING"],)"
    R"("exit_code":{"status":["SUCCESS"],"return_code":{"set":true,"number":0}},)"
    R"("nodes":"n1","tres_req_str":"cpu=1"},)"
    R"({"job_id":2,"job_state":["PENDING"],"flags":[],"unknown":{"deep":[1,{"x":[2]}]}},)"
    R"(7,"text",null,[{"job_id":3,"name":"in a nested array"}]],)"
    R"("last_update":{"set":true,"number":17},"meta":{"plugin":{"name":"x","job_id":9}},)"
    R"("errors":[],"warnings":[{"description":"w","job_id":5}],)"
    R"("other":{"jobs":[{"job_id":4,"name":"not the top-level jobs"}]}})";

nlohmann::json ExpectedFilteredList() {
  nlohmann::json expected = nlohmann::json::parse(kList);
  expected["jobs"][0] = {
      {"job_id", 1},
      {"job_state", {"RUNNING"}},
      {"exit_code", {{"status", {"SUCCESS"}}, {"return_code", {{"set", true}, {"number", 0}}}}}};
  expected["jobs"][1] = {{"job_id", 2}, {"job_state", {"PENDING"}}};
  return expected;
}

CallOptions JobFields() {
  CallOptions options;
  options.job_fields = {"job_id", "job_state", "exit_code"};
  return options;
}

TEST(EnvelopeResponse, JobFieldsKeepOnlyThoseKeysOfEachTopLevelJob) {
  const nlohmann::json expected = ExpectedFilteredList();
  const std::string forms[] = {
      absl::StrCat(R"({"status":200,"structuredBody":)", kList, "}"),
      absl::StrCat(R"({"status":200,"structured_body":)", kList, "}"),
      absl::StrCat(R"({"status":200,"body":)", kList, "}"),
      nlohmann::json({{"status", 200}, {"body", std::string(kList)}}).dump(),
  };
  for (const std::string& form : forms) {
    absl::StatusOr<SlurmResponse> r = DecodeResponse(form, JobFields());
    ASSERT_TRUE(r.ok()) << form << ": " << r.status();
    EXPECT_EQ(r->body, expected) << form;
    // Without the option nothing is dropped.
    absl::StatusOr<SlurmResponse> full = DecodeResponse(form);
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->body, nlohmann::json::parse(kList)) << form;
  }
}

TEST(EnvelopeResponse, JobFieldsLeaveOtherBodiesAlone) {
  for (const char* body : {R"({"job_id":1,"name":"x"})", R"({"jobs":{"job_id":1,"name":"x"}})",
                           R"({"jobs":[]})", R"([{"job_id":1,"name":"x"}])"}) {
    const std::string text = absl::StrCat(R"({"status":200,"body":)", body, "}");
    absl::StatusOr<SlurmResponse> r = DecodeResponse(text, JobFields());
    ASSERT_TRUE(r.ok()) << text << ": " << r.status();
    EXPECT_EQ(r->body, nlohmann::json::parse(body)) << text;
  }
}

TEST(EnvelopeResponse, DroppedKeysAreNotCheckedForRepeats) {
  // Only what is kept is built, so only kept keys can repeat.
  absl::StatusOr<SlurmResponse> r = DecodeResponse(
      R"({"status":200,"structuredBody":{"jobs":[{"job_id":1,"nodes":"a","nodes":"b"}]}})",
      JobFields());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, nlohmann::json::parse(R"({"jobs":[{"job_id":1}]})"));
  EXPECT_EQ(DecodeResponse(R"({"status":200,"structuredBody":{"jobs":[{"job_id":1,"job_id":2}]}})",
                           JobFields())
                .status()
                .code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace slurmop::agentplatform
