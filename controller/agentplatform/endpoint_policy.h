// File: controller/agentplatform/endpoint_policy.h
//
// Where the operator may send requests, and so its credentials. A
// SlurmCluster's spec.endpoint and the URLs inside a tenant's credentials
// Secret are written by namespace tenants; sending the operator's token (or
// any request) wherever they point would hand that token, or a read-back
// SSRF, to any tenant. The installer decides instead.
//
// Contract:
//  * Always allowed, over https on port 443 only: Google's hosts that the
//    operator's calls need (the reference docs: Agent Platform's
//    callSlurmRestApi and its credentials):
//      aiplatform.googleapis.com, REGION-aiplatform.googleapis.com
//      (REGION = [a-z0-9-]+), oauth2.googleapis.com, sts.googleapis.com,
//      iamcredentials.googleapis.com, and accounts.google.com (the token_uri
//      of older service-account keys).
//    Not every *.googleapis.com host: BUCKET.storage.googleapis.com and the
//    like serve content that anyone can own.
//  * Any other host only when listed by the installer (EndpointPolicy::
//    Create): "host" allows that host on every port, "host:port" (IPv6:
//    "[addr]:port") that port only; host names compare case-insensitively.
//    A listed host may use http or https. Loopback and IP addresses are not
//    special: 127.0.0.1 is refused unless listed.
//  * Check(url) refuses with kPermissionDenied, with the condition reason
//    "EndpointNotAllowed" (so IsEndpointRefusal() is true), and a message naming the host and the
//    flag that allows it. URLs that cannot be read safely are refused too: a scheme other than
//    http/https, userinfo ("user@host"), a host with characters outside [a-z0-9.-] (or a bracketed
//    IPv6 address), a bad port.
//  * PolicyTransport forwards only requests whose URL Check() allows; a
//    refused one never reaches the inner transport (the refusal is a
//    transport error marked as not sent).
//  * Thread-safe once built (immutable).

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_ENDPOINT_POLICY_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_ENDPOINT_POLICY_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/http/http_transport.h"

namespace slurmop::agentplatform {

// The operator flags that list extra hosts (named in refusals).
inline constexpr char kAllowedHostsFlag[] = "--allowed-endpoint-hosts";
inline constexpr char kAllowedHostsFileFlag[] = "--allowed-endpoint-hosts-file";
// The condition reason of a refusal (common/condition_reason.h).
inline constexpr char kEndpointNotAllowedReason[] = "EndpointNotAllowed";

class EndpointPolicy {
 public:
  // Google's hosts only.
  EndpointPolicy() = default;

  // Google's hosts and `entries` ("host" or "host:port"). Errors:
  // kInvalidArgument naming the entry that is not a host[:port].
  static absl::StatusOr<EndpointPolicy> Create(const std::vector<std::string>& entries);

  // OK when a request may be sent to `url`; see the file comment.
  absl::Status Check(std::string_view url) const;

  // "Google's API hosts and: a, b:1" (for the startup log).
  std::string Describe() const;

 private:
  struct Entry {
    std::string host;  // lower case; IPv6 in brackets
    int port = 0;      // 0: any port
  };
  std::vector<Entry> listed_;
};

// Splits a flag value or a file's text into entries: separated by commas,
// spaces or newlines; '#' starts a comment to the end of the line.
std::vector<std::string> SplitHostList(std::string_view text);

// The policy the operator's flags ask for: the entries of `list` and of the
// file `file` (if not empty). Errors: kInvalidArgument (a bad entry),
// kNotFound / kFailedPrecondition (the file cannot be read).
absl::StatusOr<EndpointPolicy> EndpointPolicyFromFlags(std::string_view list,
                                                       const std::string& file);

// True for a status made by EndpointPolicy::Check (a refused endpoint).
bool IsEndpointRefusal(const absl::Status& status);

// A Transport that sends only to URLs `policy` allows (see the file comment).
class PolicyTransport final : public http::Transport {
 public:
  // `inner` must outlive this transport.
  PolicyTransport(http::Transport& inner, EndpointPolicy policy)
      : inner_(inner), policy_(std::move(policy)) {}
  absl::StatusOr<http::Response> Send(const http::Request& request) override;
  absl::StatusOr<http::Response> Stream(const http::Request& request,
                                        const http::LineCallback& on_line,
                                        std::shared_ptr<http::StreamHandle> handle) override;
  absl::StatusOr<http::Response> SendReading(const http::Request& request,
                                             const http::BodyReader& read_body) override;

 private:
  absl::Status Refusal(const http::Request& request) const;

  http::Transport& inner_;
  const EndpointPolicy policy_;
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_ENDPOINT_POLICY_H_
