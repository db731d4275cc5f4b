// File: tests/fuzz/kube_status_fuzz.cc
//
// Fuzz target: what the Kubernetes side sends back besides objects: a failed
// call's response (usually a metav1.Status) through
// kube::StatusFromResponse() and the helpers that read it back, and an exec
// credential plugin's stdout through kube::ParseExecCredential().
//
// Input: an optional first line "HTTP <status> [<retry-after>]" (the status
// defaults to 500, the Retry-After header is sent only when given), then
// the body.
//
// Checked (errors.h, exec_plugin.h): no crash, no exception, no undefined
// behaviour; a failed response is never an OK Status and HttpStatusCode()
// gives back the HTTP status (when it is >= 100); a Retry-After is never negative; an exec
// credential that parses has a token or a certificate and key, and a bad one
// is kUnauthenticated.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "controller/http/http_transport.h"
#include "controller/kube/errors.h"
#include "controller/kube/exec_plugin.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckExecCredential(const std::string& output, const std::string& api_version) {
  absl::StatusOr<slurmop::kube::ExecCredential> credential =
      slurmop::kube::ParseExecCredential(output, api_version);
  if (!credential.ok()) {
    FUZZ_CHECK(credential.status().code() == absl::StatusCode::kUnauthenticated);
    return;
  }
  FUZZ_CHECK(!credential->token.empty() ||
             (!credential->client_certificate_pem.empty() && !credential->client_key_pem.empty()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [header, body] = slurmop::fuzz::SplitHeader(slurmop::fuzz::Input(data, size), "HTTP ");
  slurmop::http::Response response;
  response.status = slurmop::fuzz::LeadingNumber(header, 5, 500);
  if (const size_t space = header.find(' ', 5); space != std::string_view::npos) {
    response.headers["retry-after"] = std::string(header.substr(space + 1));
  }
  response.body = std::string(body);

  if (response.status < 200 || response.status > 299) {
    const absl::Status status = slurmop::kube::StatusFromResponse(response);
    FUZZ_CHECK(!status.ok());
    if (response.status >= 100) {
      FUZZ_CHECK(slurmop::kube::HttpStatusCode(status) == response.status);
    }
    if (auto retry = slurmop::kube::RetryAfter(status); retry.has_value()) {
      FUZZ_CHECK(retry->count() >= 0);
    }
    (void)slurmop::kube::StatusReason(status);
    (void)slurmop::kube::IsGone(status);
    (void)slurmop::kube::IsResourceVersionTooLarge(status);
    (void)slurmop::kube::IsConflict(status);
  }

  CheckExecCredential(response.body, "client.authentication.k8s.io/v1");
  CheckExecCredential(response.body, "client.authentication.k8s.io/v1beta1");
  return 0;
}
