// File: tests/slurm/slurm_errors_test.cc
//
// Message parsing in every shape and the rejection -> absl::Status mapping of
// controller/slurm/dialect.h.

#include "controller/slurm/slurm_errors.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/common/bounded_text.h"
#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

TEST(SlurmMessageParsingTest, EveryElementShape) {
  SlurmMessage a = ParseSlurmMessage(json{{"error_code", 2000}, {"error", "Invalid partition"}});
  EXPECT_EQ(a.error_number, 2000);
  EXPECT_EQ(a.error, "Invalid partition");
  SlurmMessage b = ParseSlurmMessage(json{{"description", "Unable to query JobId=999"},
                                          {"error_number", 2017},
                                          {"error", "Invalid job id specified"},
                                          {"source", "_handle_job_get"}});
  EXPECT_EQ(b.error_number, 2017);
  EXPECT_EQ(b.description, "Unable to query JobId=999");
  EXPECT_EQ(b.source, "_handle_job_get");
  SlurmMessage c = ParseSlurmMessage(
      json{{"error", {{"string", "Invalid job id specified"}, {"code", 2017}, {"message", "x"}}},
           {"step_id", "42"}});
  EXPECT_EQ(c.error_number, 2017);
  EXPECT_EQ(c.error, "Invalid job id specified");
  SlurmMessage d = ParseSlurmMessage(json{{"warning", "held"}, {"source", "s"}});
  EXPECT_EQ(d.description, "held");
  EXPECT_EQ(ParseSlurmMessage(json(3)).ToString(), "unspecified Slurm error");
  EXPECT_TRUE(MessagesMember(json{{"errors", "x"}}, "errors").empty());
  EXPECT_EQ(MessagesMember(json{{"errors", {{{"error", "e"}}}}}, "errors").size(), 1u);
}

struct MappingCase {
  int http;
  std::vector<int> numbers;
  absl::StatusCode code;
};

// The code says what kind of failure it was, not whether a submit may be sent
// again: for a submit, kUnavailable and kInternal answers may have queued the
// job (submit_outcome.h decides, and the operator searches for the tag).
TEST(RejectionStatusTest, CodeTable) {
  const MappingCase cases[] = {
      {401, {}, absl::StatusCode::kUnauthenticated},
      {511, {}, absl::StatusCode::kUnauthenticated},
      {500, {1007}, absl::StatusCode::kUnauthenticated},
      {200, {1007}, absl::StatusCode::kUnauthenticated},
      {502, {}, absl::StatusCode::kUnavailable},
      {503, {}, absl::StatusCode::kUnavailable},
      {500, {1001}, absl::StatusCode::kUnavailable},
      {500, {1004}, absl::StatusCode::kUnavailable},
      {500, {1800}, absl::StatusCode::kUnavailable},
      {500, {1804}, absl::StatusCode::kUnavailable},
      {500, {7000}, absl::StatusCode::kUnavailable},
      {400, {}, absl::StatusCode::kInvalidArgument},
      {422, {9000}, absl::StatusCode::kInvalidArgument},
      {500, {9202}, absl::StatusCode::kInvalidArgument},
      {500, {2009}, absl::StatusCode::kInvalidArgument},
      {500, {2063}, absl::StatusCode::kInvalidArgument},
      {500, {2000}, absl::StatusCode::kFailedPrecondition},
      {500, {2002}, absl::StatusCode::kFailedPrecondition},
      {500, {1005}, absl::StatusCode::kFailedPrecondition},
      {500, {5005}, absl::StatusCode::kFailedPrecondition},
      {404, {}, absl::StatusCode::kFailedPrecondition},
      {500, {2000, 1007}, absl::StatusCode::kUnauthenticated},  // the first row wins
      {400, {1001}, absl::StatusCode::kUnavailable},
  };
  for (const MappingCase& c : cases) {
    std::vector<SlurmMessage> errors;
    for (int n : c.numbers) errors.push_back(SlurmMessage{n, "e", "", ""});
    absl::Status s = RejectionStatus(c.http, nullptr, errors);
    EXPECT_EQ(s.code(), c.code) << "HTTP " << c.http << " " << ::testing::PrintToString(c.numbers);
  }
}

TEST(RejectionStatusTest, MessageIsTheSlurmText) {
  std::vector<SlurmMessage> errors = {
      {2000, "Invalid partition name specified", "Batch job submission failed", "x"},
      {std::nullopt, "", "second", ""}};
  EXPECT_EQ(RejectionStatus(500, nullptr, errors).message(),
            "Invalid partition name specified (error 2000): Batch job submission failed; second");
  EXPECT_EQ(RejectionStatus(401, json("Authentication failure\n"), {}).message(),
            "Authentication failure");
  EXPECT_EQ(RejectionStatus(502, nullptr, {}).message(),
            "Slurm REST API answered HTTP 502 without an error message");
}

TEST(RejectionStatusTest, AHugeErrorListIsCut) {
  std::vector<SlurmMessage> errors(2000, SlurmMessage{2000, "Invalid partition name specified",
                                                      "Batch job submission failed", "x"});
  const absl::Status s = RejectionStatus(500, nullptr, errors);
  EXPECT_LE(s.message().size(), kMaxRemoteMessageBytes);
  EXPECT_EQ(s.message().substr(0, 32), "Invalid partition name specified");
}

SlurmMessage Warning(std::string text) { return SlurmMessage{std::nullopt, "", text, ""}; }

TEST(FoldMessagesTest, NoneIsEmptyAndOneIsItself) {
  EXPECT_EQ(FoldMessages({}, 960), "");
  EXPECT_EQ(FoldMessages({Warning("partition busy")}, 960), "partition busy");
}

TEST(FoldMessagesTest, DistinctMessagesAreJoinedInOrderAndRepeatsDropped) {
  EXPECT_EQ(FoldMessages({Warning("a"), Warning("b"), Warning("a"), Warning("c")}, 960), "a; b; c");
}

TEST(FoldMessagesTest, ThousandsFitTheLimitAndSayHowManyWereLeftOut) {
  std::vector<SlurmMessage> many;
  for (int i = 0; i < 5000; ++i) many.push_back(Warning(absl::StrCat("warning number ", i)));
  const std::string text = FoldMessages(many, 960);
  EXPECT_LE(text.size(), 960u);
  EXPECT_EQ(text.substr(0, 34), "warning number 0; warning number 1");
  // Every message is either shown or counted.
  const size_t shown = std::count(text.begin(), text.end(), ';') + 1;
  EXPECT_TRUE(absl::EndsWith(text, absl::StrCat(" (and ", 5000 - shown, " more)"))) << text;
}

TEST(FoldMessagesTest, AHugeMessageIsCutAndTheRestCounted) {
  const std::string text =
      FoldMessages({Warning(std::string(100000, 'x')), Warning("y"), Warning("z")}, 600);
  EXPECT_LE(text.size(), 600u);
  EXPECT_TRUE(absl::StrContains(text, "bytes cut")) << text;
  EXPECT_TRUE(absl::EndsWith(text, " bytes cut); y; z")) << text;
}

}  // namespace
}  // namespace slurmop::slurm
