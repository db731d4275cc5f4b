// File: tests/http/cpprest_transport_tls_test.cc
//
// CpprestTransport over TLS against an in-process server with an in-memory
// PKI: CA verification (inline PEM and file), rejection of an unknown CA,
// insecure-skip-tls-verify, client certificates, tls-server-name, and bad
// TLS material at Create().

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "controller/http/cpprest_transport.h"
#include "gtest/gtest.h"
#include "tests/http/test_http_server.h"
#include "tests/http/test_pki.h"

namespace slurmop::http {
namespace {

using ::slurmop::testing::Connection;
using ::slurmop::testing::GetTestPki;
using ::slurmop::testing::NewServerTlsContext;
using ::slurmop::testing::ReceivedRequest;
using ::slurmop::testing::TestHttpServer;

void Answer(const ReceivedRequest& r, Connection& c) { c.WriteResponse(200, {}, "tls-ok"); }

absl::StatusOr<Response> Get(const TlsOptions& tls, const std::string& url) {
  CpprestTransportOptions options;
  options.tls = tls;
  absl::StatusOr<std::unique_ptr<CpprestTransport>> transport = CpprestTransport::Create(options);
  if (!transport.ok()) return transport.status();
  Request request;
  request.url = url + "/healthz";
  request.timeout = std::chrono::seconds(10);
  return (*transport)->Send(request);
}

class TlsTest : public ::testing::Test {
 protected:
  static SSL_CTX* ServerContext(bool require_client_cert = false) {
    return NewServerTlsContext(GetTestPki().server_cert_pem, GetTestPki().server_key_pem,
                               require_client_cert ? GetTestPki().ca_cert_pem : "");
  }
};

TEST_F(TlsTest, VerifiesServerAgainstInlineCa) {
  SSL_CTX* ctx = ServerContext();
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  TlsOptions tls;
  tls.ca_pem = GetTestPki().ca_cert_pem;
  absl::StatusOr<Response> response = Get(tls, server.url());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "tls-ok");
}

TEST_F(TlsTest, VerifiesServerAgainstCaFile) {
  SSL_CTX* ctx = ServerContext();
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  char path[] = "/tmp/slurmop-ca-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << GetTestPki().ca_cert_pem;
  TlsOptions tls;
  tls.ca_file = path;
  absl::StatusOr<Response> response = Get(tls, server.url());
  std::remove(path);
  ASSERT_TRUE(response.ok()) << response.status();
}

TEST_F(TlsTest, RejectsServerSignedByAnotherCa) {
  SSL_CTX* ctx = ServerContext();
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  TlsOptions tls;
  tls.ca_pem = GetTestPki().other_ca_cert_pem;
  absl::StatusOr<Response> response = Get(tls, server.url());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
}

TEST_F(TlsTest, RejectsUnknownCaByDefault) {
  SSL_CTX* ctx = ServerContext();
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  absl::StatusOr<Response> response = Get(TlsOptions{}, server.url());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
}

TEST_F(TlsTest, InsecureSkipVerifyAcceptsAnyServer) {
  SSL_CTX* ctx = ServerContext();
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  TlsOptions tls;
  tls.insecure_skip_tls_verify = true;
  absl::StatusOr<Response> response = Get(tls, server.url());
  ASSERT_TRUE(response.ok()) << response.status();
}

TEST_F(TlsTest, PresentsClientCertificate) {
  SSL_CTX* ctx = ServerContext(/*require_client_cert=*/true);
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  TlsOptions tls;
  tls.ca_pem = GetTestPki().ca_cert_pem;
  EXPECT_FALSE(Get(tls, server.url()).ok()) << "server requires a client certificate";

  tls.client_cert_pem = GetTestPki().client_cert_pem;
  tls.client_key_pem = GetTestPki().client_key_pem;
  absl::StatusOr<Response> response = Get(tls, server.url());
  ASSERT_TRUE(response.ok()) << response.status();
}

TEST_F(TlsTest, TlsServerNameOverridesUrlHostForVerification) {
  SSL_CTX* ctx =
      NewServerTlsContext(GetTestPki().named_server_cert_pem, GetTestPki().named_server_key_pem);
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  TlsOptions tls;
  tls.ca_pem = GetTestPki().ca_cert_pem;
  EXPECT_FALSE(Get(tls, server.url()).ok()) << "127.0.0.1 is not in the certificate";

  tls.server_name = "kubernetes.default.svc";
  absl::StatusOr<Response> response = Get(tls, server.url());
  ASSERT_TRUE(response.ok()) << response.status();
}

TEST_F(TlsTest, CreateRejectsBadMaterial) {
  TlsOptions bad_ca;
  bad_ca.ca_pem = "not a certificate";
  EXPECT_EQ(Get(bad_ca, "https://127.0.0.1:1").status().code(), absl::StatusCode::kInvalidArgument);

  TlsOptions key_without_cert;
  key_without_cert.client_key_pem = GetTestPki().client_key_pem;
  EXPECT_EQ(Get(key_without_cert, "https://127.0.0.1:1").status().code(),
            absl::StatusCode::kInvalidArgument);

  TlsOptions mismatched;
  mismatched.client_cert_pem = GetTestPki().client_cert_pem;
  mismatched.client_key_pem = GetTestPki().server_key_pem;
  EXPECT_EQ(Get(mismatched, "https://127.0.0.1:1").status().code(),
            absl::StatusCode::kInvalidArgument);

  TlsOptions missing_file;
  missing_file.ca_file = "/nonexistent/ca.crt";
  EXPECT_EQ(Get(missing_file, "https://127.0.0.1:1").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace slurmop::http
