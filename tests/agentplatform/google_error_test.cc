// File: tests/agentplatform/google_error_test.cc
//
// Google API errors (google.rpc.Status JSON) to absl::Status: every
// canonical status name, the HTTP fallback, messages, RetryInfo,
// Retry-After and ErrorInfo.reason.

#include "controller/agentplatform/google_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/client.h"
#include "controller/common/bounded_text.h"
#include "tests/agentplatform/fake_transport.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::Respond;
using ::testing::HasSubstr;

const Time kNow = Time(std::chrono::seconds(1700000000));

std::string ErrorBody(int code, const std::string& status, const std::string& message,
                      const std::string& details = "[]") {
  return "{\"error\":{\"code\":" + std::to_string(code) + ",\"message\":\"" + message +
         "\",\"status\":\"" + status + "\",\"details\":" + details + "}}";
}

struct Case {
  int http;
  const char* status;
  absl::StatusCode code;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.status; }

class GoogleStatusTest : public ::testing::TestWithParam<Case> {};

TEST_P(GoogleStatusTest, MapsStatusNameToCodeAndMessage) {
  const Case& c = GetParam();
  absl::Status s = GoogleErrorToStatus(
      Respond(c.http, ErrorBody(c.http, c.status, "something went wrong")), kNow);
  EXPECT_EQ(s.code(), c.code) << c.status;
  EXPECT_EQ(s.message(), "Agent Platform: something went wrong");
  EXPECT_EQ(ErrorHttpStatus(s), c.http);
  EXPECT_FALSE(RetryDelay(s).has_value());
}

INSTANTIATE_TEST_SUITE_P(
    AllCanonicalCodes, GoogleStatusTest,
    ::testing::Values(Case{499, "CANCELLED", absl::StatusCode::kCancelled},
                      Case{500, "UNKNOWN", absl::StatusCode::kUnknown},
                      Case{400, "INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
                      Case{504, "DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
                      Case{404, "NOT_FOUND", absl::StatusCode::kNotFound},
                      Case{409, "ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
                      Case{403, "PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
                      Case{429, "RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
                      Case{400, "FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
                      Case{409, "ABORTED", absl::StatusCode::kAborted},
                      Case{400, "OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
                      Case{501, "UNIMPLEMENTED", absl::StatusCode::kUnimplemented},
                      Case{500, "INTERNAL", absl::StatusCode::kInternal},
                      Case{503, "UNAVAILABLE", absl::StatusCode::kUnavailable},
                      Case{500, "DATA_LOSS", absl::StatusCode::kDataLoss},
                      Case{401, "UNAUTHENTICATED", absl::StatusCode::kUnauthenticated}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.status); });

TEST(GoogleError, StatusNameWinsOverHttpCode) {
  // e.g. a 400 whose status says FAILED_PRECONDITION.
  absl::Status s =
      GoogleErrorToStatus(Respond(400, ErrorBody(400, "FAILED_PRECONDITION", "m")), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(GoogleError, FallsBackToHttpStatus) {
  struct {
    int http;
    absl::StatusCode code;
  } cases[] = {
      {400, absl::StatusCode::kInvalidArgument},   {401, absl::StatusCode::kUnauthenticated},
      {403, absl::StatusCode::kPermissionDenied},  {404, absl::StatusCode::kNotFound},
      {408, absl::StatusCode::kUnavailable},       {409, absl::StatusCode::kAborted},
      {429, absl::StatusCode::kResourceExhausted}, {499, absl::StatusCode::kCancelled},
      {500, absl::StatusCode::kInternal},          {501, absl::StatusCode::kUnimplemented},
      {502, absl::StatusCode::kUnavailable},       {503, absl::StatusCode::kUnavailable},
      {504, absl::StatusCode::kDeadlineExceeded},  {418, absl::StatusCode::kFailedPrecondition},
      {599, absl::StatusCode::kInternal}};
  for (const auto& c : cases) {
    // No "status" field: the code comes from the HTTP status.
    const std::string body =
        "{\"error\":{\"code\":" + std::to_string(c.http) + ",\"message\":\"m\"}}";
    EXPECT_EQ(GoogleErrorToStatus(Respond(c.http, body), kNow).code(), c.code) << c.http;
    // Not JSON at all.
    EXPECT_EQ(GoogleErrorToStatus(Respond(c.http, "<html>bad gateway</html>"), kNow).code(), c.code)
        << c.http;
  }
}

TEST(GoogleError, UnknownStatusNameFallsBackToHttp) {
  absl::Status s = GoogleErrorToStatus(Respond(503, ErrorBody(503, "SOMETHING_NEW", "m")), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

// A non-JSON body is not Google's (its front ends answer google.rpc.Status
// JSON): it is described, never quoted, so an internal service's answer
// cannot be read back through a SlurmCluster's status.
TEST(GoogleError, NonJsonBodyIsDescribedNotQuoted) {
  const std::string html = "<html><body>internal-secret\n" + std::string(1000, 'x') + "</body>";
  http::Response response = Respond(502, html);
  response.headers["content-type"] = "text/html; charset=\"<script>\"";
  absl::Status s = GoogleErrorToStatus(response, kNow);
  EXPECT_THAT(s.message(),
              HasSubstr("Agent Platform: HTTP 502 with a 1035-byte text/html body that is not a "
                        "JSON error (not quoted)"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("internal-secret")));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("<")));
}

// An error body nested deeper than 100 levels is not parsed (it would be
// walked recursively): it counts as not JSON.
TEST(GoogleError, DeeplyNestedBodyIsNotParsed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  absl::Status s = GoogleErrorToStatus(Respond(500, deep), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("200000-byte body that is not a JSON error"));
}

TEST(GoogleError, ArrayWrappedError) {
  absl::Status s = GoogleErrorToStatus(
      Respond(404, "[" + ErrorBody(404, "NOT_FOUND", "no cluster") + "]"), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "Agent Platform: no cluster");
}

TEST(GoogleError, RetryInfoAndErrorInfo) {
  const std::string details =
      R"([{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED",)"
      R"("domain":"googleapis.com","metadata":{"quota_limit":"x"}},)"
      R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}])";
  absl::Status s = GoogleErrorToStatus(
      Respond(429, ErrorBody(429, "RESOURCE_EXHAUSTED", "Quota exceeded", details)), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "Agent Platform: Quota exceeded (retry after 1.5s)");
  ASSERT_TRUE(RetryDelay(s).has_value());
  EXPECT_EQ(*RetryDelay(s), std::chrono::milliseconds(1500));
  EXPECT_EQ(ErrorReason(s), "RATE_LIMIT_EXCEEDED");
}

TEST(GoogleError, RetryInfoAsDurationObject) {
  const std::string details = R"([{"@type":"type.googleapis.com/google.rpc.RetryInfo",)"
                              R"("retryDelay":{"seconds":"2","nanos":500000000}}])";
  absl::Status s =
      GoogleErrorToStatus(Respond(503, ErrorBody(503, "UNAVAILABLE", "busy", details)), kNow);
  EXPECT_EQ(RetryDelay(s), std::chrono::milliseconds(2500));
  EXPECT_EQ(s.message(), "Agent Platform: busy (retry after 2.5s)");
}

TEST(GoogleError, RetryAfterHeaderSecondsAndDate) {
  absl::Status s = GoogleErrorToStatus(
      Respond(503, ErrorBody(503, "UNAVAILABLE", "busy"), {{"retry-after", "7"}}), kNow);
  EXPECT_EQ(RetryDelay(s), std::chrono::milliseconds(7000));
  EXPECT_EQ(s.message(), "Agent Platform: busy (retry after 7s)");

  // 1700000000 is Tue, 14 Nov 2023 22:13:20 GMT.
  s = GoogleErrorToStatus(Respond(429, ErrorBody(429, "RESOURCE_EXHAUSTED", "q"),
                                  {{"retry-after", "Tue, 14 Nov 2023 22:13:50 GMT"}}),
                          kNow);
  EXPECT_EQ(RetryDelay(s), std::chrono::milliseconds(30000));
}

TEST(GoogleError, LargerOfRetryInfoAndRetryAfter) {
  const std::string details =
      R"([{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10s"}])";
  absl::Status s = GoogleErrorToStatus(
      Respond(429, ErrorBody(429, "RESOURCE_EXHAUSTED", "q", details), {{"retry-after", "3"}}),
      kNow);
  EXPECT_EQ(RetryDelay(s), std::chrono::milliseconds(10000));
}

TEST(GoogleError, Durations) {
  EXPECT_EQ(ParseDurationString("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(ParseDurationString("30s"), std::chrono::milliseconds(30000));
  EXPECT_EQ(ParseDurationString("0.000001s"), std::chrono::milliseconds(1));
  EXPECT_FALSE(ParseDurationString("1.5").has_value());
  EXPECT_FALSE(ParseDurationString("-1s").has_value());
  EXPECT_FALSE(ParseDurationString("s").has_value());
  EXPECT_EQ(FormatDelay(std::chrono::milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDelay(std::chrono::milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDelay(std::chrono::milliseconds(60000)), "60s");
  EXPECT_FALSE(ParseRetryAfter("soon", kNow).has_value());
}

TEST(GoogleError, RetryDelayOfPlainStatusIsEmpty) {
  EXPECT_FALSE(RetryDelay(absl::UnavailableError("x")).has_value());
  EXPECT_FALSE(RetryDelay(absl::OkStatus()).has_value());
  EXPECT_EQ(ErrorReason(absl::UnavailableError("x")), "");
}

// A remote's message is untrusted input: a 40 KB one made the SlurmJob's status write fail (a
// condition's message holds 32 KiB) and the SlurmJob said nothing.
// Redacted before it is cut: a cut through an echoed secret would leave its start readable.
TEST(GoogleError, ASecretAcrossTheCutIsRedactedWhole) {
  const std::string secret = "ya29.secret-token-0123456789abcdefghijklmnopqrstuvwxyz";
  for (size_t at = 400; at < 520; ++at) {
    const std::string body = std::string(at, 'x') + secret + std::string(1000, 'y');
    absl::Status s = GoogleErrorToStatus(Respond(403, ErrorBody(403, "PERMISSION_DENIED", body)),
                                         kNow, {secret});
    EXPECT_EQ(std::string(s.message()).find("ya29.secret"), std::string::npos) << at;
  }
}

TEST(GoogleError, AHugeMessageIsCut) {
  const std::string huge = "denied " + std::string(40000, 'x');
  absl::Status s =
      GoogleErrorToStatus(Respond(403, ErrorBody(403, "PERMISSION_DENIED", huge)), kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  // The remote's part, after the operator's own prefix.
  EXPECT_LE(s.message().size(), kMaxRemoteMessageBytes + 100) << s.message();
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("denied xxx"));
}

}  // namespace
}  // namespace slurmop::agentplatform
