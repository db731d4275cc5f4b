// File: tests/fuzz/google_error_fuzz.cc
//
// Fuzz target: a failed callSlurmRestApi answer from Google's front end
// (AIP-193 google.rpc.Status JSON, or any text a proxy sends), through
// agentplatform::GoogleErrorToStatus() and the helpers that read the
// resulting Status back (RetryDelay, ErrorReason, ErrorHttpStatus), plus
// the Duration and Retry-After parsers on their own.
//
// Input: an optional first line "HTTP <status> [<retry-after header>]"
// (status 503 by default), then the body.
//
// Checked (google_error.h): no crash, no exception, no undefined behaviour
// (e.g. a huge retryDelay or Retry-After must not overflow); the Status of a
// non-2xx answer is never OK, carries the HTTP status back, and a retry
// delay is never negative.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "controller/agentplatform/google_error.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ap = slurmop::agentplatform;
  const auto [header, body] = slurmop::fuzz::SplitHeader(slurmop::fuzz::Input(data, size), "HTTP ");
  slurmop::http::Response response;
  response.status = slurmop::fuzz::LeadingNumber(header, 5, 503);
  if (const size_t space = header.find(' ', 5); space != std::string_view::npos) {
    response.headers["retry-after"] = std::string(header.substr(space + 1));
  }
  response.body = std::string(body);
  const slurmop::Time now{std::chrono::seconds(1700000000)};

  if (response.status < 200 || response.status > 299) {
    const absl::Status status = ap::GoogleErrorToStatus(response, now);
    FUZZ_CHECK(!status.ok());
    FUZZ_CHECK(ap::ErrorHttpStatus(status) == response.status);
    if (auto delay = ap::RetryDelay(status); delay.has_value()) {
      FUZZ_CHECK(delay->count() >= 0);
      (void)ap::FormatDelay(*delay);
    }
    (void)ap::ErrorReason(status);
  }
  if (auto d = ap::ParseDurationString(body); d.has_value()) FUZZ_CHECK(d->count() >= 0);
  if (auto d = ap::ParseRetryAfter(body, now); d.has_value()) FUZZ_CHECK(d->count() >= 0);
  return 0;
}
