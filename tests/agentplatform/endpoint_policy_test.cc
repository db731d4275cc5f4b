// File: tests/agentplatform/endpoint_policy_test.cc
//
// EndpointPolicy: Google's hosts always (https, 443), other hosts only when
// listed (loopback not special), URLs that cannot be read safely refused,
// flag/file parsing, and PolicyTransport never forwarding a refused URL.

#include "controller/agentplatform/endpoint_policy.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agentplatform/fake_transport.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::Respond;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

EndpointPolicy Listed(const std::vector<std::string>& entries) {
  absl::StatusOr<EndpointPolicy> p = EndpointPolicy::Create(entries);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : EndpointPolicy();
}

TEST(EndpointPolicyTest, GoogleHostsAlwaysOverHttpsOnly) {
  const EndpointPolicy google;
  for (const char* url :
       {"https://us-central1-aiplatform.googleapis.com/v1beta1/x",
        "https://aiplatform.googleapis.com", "https://oauth2.googleapis.com/token",
        "https://sts.googleapis.com/v1/token", "https://IAMCredentials.googleapis.com:443/v1/x",
        "https://accounts.google.com/o/oauth2/token"}) {
    EXPECT_TRUE(google.Check(url).ok()) << url;
  }
  for (const char* url :
       {"http://us-central1-aiplatform.googleapis.com", "https://oauth2.googleapis.com:8443/",
        "https://bucket.storage.googleapis.com/", "https://evil.googleapis.com.attacker.example/",
        "https://x_y-aiplatform.googleapis.com/", "https://-aiplatform.googleapis.com/"}) {
    absl::Status s = google.Check(url);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << url;
    EXPECT_TRUE(IsEndpointRefusal(s)) << url;
  }
}

TEST(EndpointPolicyTest, OtherHostsOnlyWhenListedAndLoopbackIsNotSpecial) {
  absl::Status s = EndpointPolicy().Check("http://127.0.0.1:8080");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("\"127.0.0.1:8080\" is not allowed"));
  EXPECT_THAT(s.message(), HasSubstr("--allowed-endpoint-hosts=127.0.0.1:8080"));
  EXPECT_FALSE(EndpointPolicy().Check("http://localhost/").ok());
  EXPECT_FALSE(EndpointPolicy().Check("http://[::1]:80/").ok());

  const EndpointPolicy p = Listed({"127.0.0.1:8080", "Proxy.Example", "[::1]:9000"});
  EXPECT_TRUE(p.Check("http://127.0.0.1:8080/v1beta1").ok());
  EXPECT_TRUE(p.Check("https://127.0.0.1:8080").ok());
  EXPECT_FALSE(p.Check("http://127.0.0.1:8081").ok());
  EXPECT_FALSE(p.Check("http://127.0.0.1").ok());  // port 80, not listed
  EXPECT_TRUE(p.Check("http://proxy.example:1234/x").ok());
  EXPECT_TRUE(p.Check("https://PROXY.example").ok());
  EXPECT_TRUE(p.Check("http://[::1]:9000/").ok());
  EXPECT_FALSE(p.Check("http://[::1]:9001/").ok());
  // Listing a host does not open Google's hosts to plain http.
  EXPECT_FALSE(p.Check("http://oauth2.googleapis.com/token").ok());
}

TEST(EndpointPolicyTest, UnreadableUrlsAreRefused) {
  const EndpointPolicy p = Listed({"127.0.0.1", "good.example"});
  for (const char* url :
       {"ftp://127.0.0.1/", "file:///etc/passwd", "127.0.0.1:80",
        "http://good.example@evil.example/", "http://evil.example\\@good.example/",
        "http://good.example:0/", "http://good.example:99999", "http://good.example:+80",
        "http:///x", "http://good%2eexample/", "http://[::1/"}) {
    absl::Status s = p.Check(url);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << url;
  }
}

TEST(EndpointPolicyTest, BadEntriesAreNamed) {
  for (const char* entry : {"http://x", "x:y", "a/b", "[::1", "x:70000", ""}) {
    absl::StatusOr<EndpointPolicy> p = EndpointPolicy::Create({entry});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << entry;
  }
}

TEST(EndpointPolicyTest, FlagAndFileLists) {
  EXPECT_THAT(SplitHostList(" a:1, b ,,c\n# note, d\ne # f\n"), ElementsAre("a:1", "b", "c", "e"));
  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) / "allowed_hosts.txt";
  std::ofstream(file) << "# stand-ins\n127.0.0.1:7000\n";
  absl::StatusOr<EndpointPolicy> p = EndpointPolicyFromFlags("127.0.0.1:7001", file.string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->Check("http://127.0.0.1:7000").ok());
  EXPECT_TRUE(p->Check("http://127.0.0.1:7001").ok());
  EXPECT_EQ(p->Describe(), "Google's API hosts and: 127.0.0.1:7001, 127.0.0.1:7000");
  EXPECT_EQ(EndpointPolicyFromFlags("", "/nonexistent/hosts").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(EndpointPolicyFromFlags("a b:c", "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EndpointPolicyTest, PolicyTransportNeverForwardsARefusedUrl) {
  FakeTransport inner;
  inner.Enqueue(Respond(200, "{}"));
  PolicyTransport guarded(inner, Listed({"127.0.0.1:7000"}));
  http::Request refused;
  refused.url = "http://127.0.0.1:7001/x";
  absl::StatusOr<http::Response> r = guarded.Send(refused);
  EXPECT_TRUE(IsEndpointRefusal(r.status()));
  EXPECT_FALSE(http::MayHaveBeenDelivered(r.status()));
  EXPECT_EQ(guarded
                .Stream(
                    refused, [](const std::string&) { return true; }, nullptr)
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(inner.request_count(), 0u);
  http::Request allowed;
  allowed.url = "http://127.0.0.1:7000/x";
  EXPECT_TRUE(guarded.Send(allowed).ok());
  EXPECT_EQ(inner.request_count(), 1u);
}

}  // namespace
}  // namespace slurmop::agentplatform
