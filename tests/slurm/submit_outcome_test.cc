// File: tests/slurm/submit_outcome_test.cc
//
// ClassifySubmitFailure: only a definitive refusal is "not delivered"; every
// other submit answer without a job id may have queued the job.

#include "controller/slurm/submit_outcome.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

constexpr SubmitDelivery kRefused = SubmitDelivery::kRefused;
constexpr SubmitDelivery kMaybe = SubmitDelivery::kMaybeDelivered;

struct Case {
  const char* what;
  int http;
  json body;
  SubmitDelivery want;
};

json Errors(const std::vector<int>& numbers, const char* key = "error_number") {
  json errors = json::array();
  for (int n : numbers) errors.push_back({{key, n}, {"error", "e"}, {"description", "d"}});
  return {{"errors", errors}, {"warnings", json::array()}};
}

TEST(ClassifySubmitFailureTest, Table) {
  const Case cases[] = {
      // slurmrestd refused the request itself.
      {"rest_auth failure", 401, json("Authentication failure"), kRefused},
      {"parse error", 400, Errors({9001}), kRefused},
      {"v0.0.38 unknown key", 400, Errors({-1, 9001}, "error_code"), kRefused},
      {"invalid query", 422, Errors({9000}), kRefused},
      {"unknown path", 404, json("Unable find requested URL."), kRefused},
      {"wrong method", 405, json("Unsupported HTTP method requested"), kRefused},
      // slurmctld refused the job.
      {"invalid partition", 500, Errors({2000}), kRefused},
      {"access denied", 500, Errors({2002}), kRefused},
      {"script missing", 500, Errors({2009}), kRefused},
      {"invalid account", 500, Errors({2045}), kRefused},
      {"invalid qos", 500, Errors({2066}), kRefused},
      {"v0.0.38 error_code form", 500, Errors({2000}, "error_code"), kRefused},
      {"data parser error", 500, Errors({9202}), kRefused},
      {"refusal with a generic -1 beside it", 500, Errors({-1, 2051}), kRefused},
      // slurmrestd timed out on (or lost) slurmctld's reply.
      {"502", 502, Errors({}), kMaybe},
      {"503", 503, json(nullptr), kMaybe},
      {"504", 504, Errors({5004}), kMaybe},
      {"504 even with a refusal number", 504, Errors({2000}), kMaybe},
      // communication with slurmctld failed somewhere.
      {"1001 connection", 500, Errors({1001}), kMaybe},
      {"1003 receive", 500, Errors({1003}), kMaybe},
      {"1004 shutdown", 500, Errors({1004}), kMaybe},
      {"1800 ctld connection", 500, Errors({1800}), kMaybe},
      {"1802 ctld receive (24.11: 502)", 502, Errors({1802}), kMaybe},
      {"1804 ctld shutdown", 500, Errors({1804}), kMaybe},
      {"1007 auth (reply check)", 511, Errors({1007}), kMaybe},
      {"5005 zero bytes", 500, Errors({5005}), kMaybe},
      {"7000 db connection", 500, Errors({7000}), kMaybe},
      {"ESLURM_INTERNAL", 500, Errors({2090}), kMaybe},
      {"ambiguous wins over refusal", 500, Errors({2000, 1001}), kMaybe},
      {"ambiguous wins over a 400", 400, Errors({1001}), kMaybe},
      // a job slurmctld queued anyway, reported without its id.
      {"nodes busy", 500, Errors({2016}), kMaybe},
      {"held", 500, Errors({2042}), kMaybe},
      {"qos threshold", 500, Errors({2074}), kMaybe},
      {"partition down", 500, Errors({2101}), kMaybe},
      // not definitive.
      {"2xx without job_id", 200, Errors({}), kMaybe},
      {"2xx, empty body", 200, json(nullptr), kMaybe},
      {"500 without errors", 500, Errors({}), kMaybe},
      {"500 text body", 500, json("Internal Server Error"), kMaybe},
      {"unnumbered error", 500, json{{"errors", {{{"error", "Invalid something"}}}}}, kMaybe},
      {"only a generic -1", 500, Errors({-1}), kMaybe},
      {"errno-like number", 500, Errors({22}), kMaybe},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifySubmitFailure(c.http, c.body), c.want)
        << c.what << ": HTTP " << c.http << " " << c.body.dump();
  }
}

}  // namespace
}  // namespace slurmop::slurm
