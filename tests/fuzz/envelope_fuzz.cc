// File: tests/fuzz/envelope_fuzz.cc
//
// Fuzz target: the callSlurmRestApi response envelope as Agent Platform
// sends it ({"status": N, "structuredBody": {...}} or "body"), through
// agentplatform::DecodeResponse(), unfiltered and with a `jobs` key filter,
// then the decoded Slurm body back through EncodeRequest() as the client
// does for request bodies.
//
// Checked (envelope.h): no crash, no exception; a non-envelope is
// kInternal; a decoded envelope has a non-zero status; numbers that come
// back from a google.protobuf.Value body as JSON integers are within
// +-2^53 (job ids stay exact); the filter changes nothing but the objects of
// the top-level `jobs` array, which keep exactly their kept keys.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "controller/agentplatform/envelope.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr int64_t kMaxSafeInt = int64_t{1} << 53;

// Integers that came out of a google.protobuf.Value (depth-limited by
// protobuf's JSON parser) are within +-2^53.
void CheckIntegers(const nlohmann::json& j) {
  if (j.is_number_integer() && !j.is_number_unsigned()) {
    const int64_t v = j.get<int64_t>();
    FUZZ_CHECK(v <= kMaxSafeInt && v >= -kMaxSafeInt);
  }
  if (j.is_structured()) {
    for (const nlohmann::json& item : j) CheckIntegers(item);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ap = slurmop::agentplatform;
  absl::StatusOr<ap::SlurmResponse> response = ap::DecodeResponse(slurmop::fuzz::Input(data, size));
  if (!response.ok()) {
    FUZZ_CHECK(response.status().code() == absl::StatusCode::kInternal);
    return 0;
  }
  FUZZ_CHECK(response->status != 0);
  // A `body` string holding JSON is parsed as is (exact integers of any
  // size); every other body went through google.protobuf.Value.
  const nlohmann::json input =
      nlohmann::json::parse(slurmop::fuzz::Input(data, size), nullptr, /*allow_exceptions=*/false);
  auto object_member = [&input](const char* key) {
    const auto it = input.find(key);
    return it != input.end() && it->is_object();
  };
  const bool structured =
      input.is_object() && (object_member("structuredBody") || object_member("structured_body"));
  const auto body_it = input.is_object() ? input.find("body") : input.end();
  const bool text_body =
      !input.is_object() || (!structured && body_it != input.end() && body_it->is_string());
  if (!text_body) CheckIntegers(response->body);

  ap::CallOptions filter;
  filter.job_fields = {"job_id", "job_state"};
  absl::StatusOr<ap::SlurmResponse> filtered =
      ap::DecodeResponse(slurmop::fuzz::Input(data, size), filter);
  FUZZ_CHECK(filtered.ok());
  FUZZ_CHECK(filtered->status == response->status);
  nlohmann::json expected = response->body;
  if (expected.is_object()) {
    if (auto jobs = expected.find("jobs"); jobs != expected.end() && jobs->is_array()) {
      for (nlohmann::json& job : *jobs) {
        if (!job.is_object()) continue;
        nlohmann::json kept = nlohmann::json::object();
        for (const std::string& key : filter.job_fields) {
          if (auto it = job.find(key); it != job.end()) kept[key] = *it;
        }
        job = std::move(kept);
      }
    }
  }
  FUZZ_CHECK(filtered->body == expected);

  if (response->body.is_object()) {
    (void)ap::EncodeRequest(ap::HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &response->body);
  }
  return 0;
}
