// File: controller/agentplatform/endpoint_policy.cc
//
// See endpoint_policy.h for the contract.

#include "controller/agentplatform/endpoint_policy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/common/condition_reason.h"

namespace slurmop::agentplatform {
namespace {

// Google's hosts every installation may reach (https, port 443).
constexpr const char* kGoogleHosts[] = {"aiplatform.googleapis.com", "oauth2.googleapis.com",
                                        "sts.googleapis.com", "iamcredentials.googleapis.com",
                                        "accounts.google.com"};

struct Authority {
  std::string host;  // lower case; IPv6 in brackets
  int port = 0;      // 0: none given
};

bool IsHostNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}

bool IsIpv6Char(char c) {
  return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

// "host", "host:port", "[v6]" or "[v6]:port"; nullopt-like error when the
// text is anything else (userinfo, odd characters, a bad port).
absl::StatusOr<Authority> ParseAuthority(std::string_view text) {
  Authority out;
  std::string_view rest;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close < 2) {
      return absl::InvalidArgumentError("a bracketed IPv6 address is not closed");
    }
    for (char c : text.substr(1, close - 1)) {
      if (!IsIpv6Char(c)) return absl::InvalidArgumentError("not an IPv6 address");
    }
    out.host = absl::AsciiStrToLower(std::string(text.substr(0, close + 1)));
    rest = text.substr(close + 1);
  } else {
    const size_t colon = text.find(':');
    const std::string_view host = text.substr(0, colon);
    if (host.empty()) return absl::InvalidArgumentError("no host");
    for (char c : host) {
      if (!IsHostNameChar(c)) {
        return absl::InvalidArgumentError("the host holds characters other than [a-z0-9.-]");
      }
    }
    out.host = absl::AsciiStrToLower(std::string(host));
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  if (rest.empty()) return out;
  if (!rest.starts_with(':')) return absl::InvalidArgumentError("junk after the host");
  rest.remove_prefix(1);
  if (rest.empty() || rest.size() > 5 ||
      !absl::ascii_isdigit(static_cast<unsigned char>(rest.front())) ||
      !absl::SimpleAtoi(absl::string_view(rest.data(), rest.size()), &out.port) || out.port < 1 ||
      out.port > 65535) {
    return absl::InvalidArgumentError("the port is not a number from 1 to 65535");
  }
  return out;
}

bool IsGoogleHost(std::string_view host) {
  for (const char* h : kGoogleHosts) {
    if (host == h) return true;
  }
  // REGION-aiplatform.googleapis.com
  constexpr std::string_view kSuffix = "-aiplatform.googleapis.com";
  if (!host.ends_with(kSuffix) || host.size() == kSuffix.size()) return false;
  const std::string_view region = host.substr(0, host.size() - kSuffix.size());
  for (char c : region) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '-') {
      return false;
    }
  }
  return true;
}

std::string Display(const Authority& a) {
  return a.port == 0 ? a.host : absl::StrCat(a.host, ":", a.port);
}

absl::Status Refused(std::string message) {
  absl::Status s = absl::PermissionDeniedError(std::move(message));
  SetConditionReason(s, kEndpointNotAllowedReason);
  return s;
}

std::string HowToAllow(const std::string& entry) {
  return absl::StrCat(
      "the operator sends requests (and credentials) only to Google's API hosts over https and "
      "to hosts its installer lists: start it with ",
      kAllowedHostsFlag, "=", entry, " (or list the host in ", kAllowedHostsFileFlag, ")");
}

}  // namespace

absl::StatusOr<EndpointPolicy> EndpointPolicy::Create(const std::vector<std::string>& entries) {
  EndpointPolicy policy;
  for (const std::string& entry : entries) {
    absl::StatusOr<Authority> a = ParseAuthority(entry);
    if (!a.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "allowed endpoint host \"", entry, "\" is not host[:port]: ", a.status().message()));
    }
    policy.listed_.push_back({a->host, a->port});
  }
  return policy;
}

absl::Status EndpointPolicy::Check(std::string_view url) const {
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string_view::npos
                                 ? ""
                                 : absl::AsciiStrToLower(std::string(url.substr(0, scheme_end)));
  if (scheme != "http" && scheme != "https") {
    return Refused(
        "the endpoint is not an http(s) URL; only https (or http to a listed host) is "
        "allowed");
  }
  if (scheme_end == std::string_view::npos) return Refused("the endpoint has no scheme");
  std::string_view rest = url.substr(scheme_end + 3);
  const std::string_view authority_text = rest.substr(0, rest.find_first_of("/?#"));
  if (authority_text.find('@') != std::string_view::npos) {
    return Refused("the endpoint URL holds userinfo (user@host), which is never allowed");
  }
  absl::StatusOr<Authority> authority = ParseAuthority(authority_text);
  if (!authority.ok()) {
    return Refused(absl::StrCat("the endpoint URL's host cannot be used (",
                                authority.status().message(), ")"));
  }
  const int port = authority->port != 0 ? authority->port : (scheme == "https" ? 443 : 80);
  for (const Entry& e : listed_) {
    if (e.host == authority->host && (e.port == 0 || e.port == port)) return absl::OkStatus();
  }
  const std::string shown = Display(*authority);
  if (IsGoogleHost(authority->host)) {
    if (scheme == "https" && port == 443) return absl::OkStatus();
    return Refused(absl::StrCat("the endpoint host \"", shown, "\" is Google's, but reached over ",
                                scheme, " on port ", port,
                                "; Google's hosts are allowed over https "
                                "on port 443 only, other schemes or ports when listed: ",
                                HowToAllow(shown)));
  }
  return Refused(
      absl::StrCat("the endpoint host \"", shown, "\" is not allowed: ", HowToAllow(shown)));
}

std::string EndpointPolicy::Describe() const {
  std::vector<std::string> shown;
  for (const Entry& e : listed_) shown.push_back(Display({e.host, e.port}));
  if (shown.empty()) return "Google's API hosts only";
  return absl::StrCat("Google's API hosts and: ", absl::StrJoin(shown, ", "));
}

std::vector<std::string> SplitHostList(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') comment = false;
    if (c == '#') comment = true;
    const bool separator =
        comment || c == ',' || absl::ascii_isspace(static_cast<unsigned char>(c));
    if (!separator) {
      current.push_back(c);
    } else if (!current.empty()) {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

absl::StatusOr<EndpointPolicy> EndpointPolicyFromFlags(std::string_view list,
                                                       const std::string& file) {
  std::vector<std::string> entries = SplitHostList(list);
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) {
      return absl::NotFoundError(absl::StrCat(kAllowedHostsFileFlag, "=", file,
                                              " cannot be opened: ", std::strerror(errno)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      return absl::FailedPreconditionError(
          absl::StrCat(kAllowedHostsFileFlag, "=", file, " cannot be read"));
    }
    for (std::string& e : SplitHostList(text.str())) entries.push_back(std::move(e));
  }
  return EndpointPolicy::Create(entries);
}

bool IsEndpointRefusal(const absl::Status& status) {
  return ConditionReason(status) == kEndpointNotAllowedReason;
}

absl::Status PolicyTransport::Refusal(const http::Request& request) const {
  absl::Status checked = policy_.Check(request.url);
  if (checked.ok()) return checked;
  absl::Status out = http::TransportError(checked.code(), std::string(checked.message()),
                                          /*request_sent=*/false);
  SetConditionReason(out, kEndpointNotAllowedReason);
  return out;
}

absl::StatusOr<http::Response> PolicyTransport::Send(const http::Request& request) {
  if (absl::Status refused = Refusal(request); !refused.ok()) return refused;
  return inner_.Send(request);
}

absl::StatusOr<http::Response> PolicyTransport::Stream(const http::Request& request,
                                                       const http::LineCallback& on_line,
                                                       std::shared_ptr<http::StreamHandle> handle) {
  if (absl::Status refused = Refusal(request); !refused.ok()) return refused;
  return inner_.Stream(request, on_line, std::move(handle));
}

absl::StatusOr<http::Response> PolicyTransport::SendReading(const http::Request& request,
                                                            const http::BodyReader& read_body) {
  if (absl::Status refused = Refusal(request); !refused.ok()) return refused;
  return inner_.SendReading(request, read_body);
}

}  // namespace slurmop::agentplatform
