// File: tests/http/test_pki.h
//
// An in-memory PKI for TLS tests, generated with OpenSSL once per process:
// a CA, server certificates signed by it, a client certificate, and an
// unrelated CA. Keys are EC P-256, so generation is fast.

#ifndef SLURMOP_TESTS_HTTP_TEST_PKI_H_
#define SLURMOP_TESTS_HTTP_TEST_PKI_H_

#include <openssl/ssl.h>

#include <string>

namespace slurmop::testing {

struct TestPki {
  std::string ca_cert_pem;
  // SANs: IP 127.0.0.1, DNS localhost.
  std::string server_cert_pem;
  std::string server_key_pem;
  // SAN: DNS kubernetes.default.svc only (for tls-server-name tests).
  std::string named_server_cert_pem;
  std::string named_server_key_pem;
  // CN test-client, signed by the CA.
  std::string client_cert_pem;
  std::string client_key_pem;
  // A CA that signed nothing above.
  std::string other_ca_cert_pem;
};

const TestPki& GetTestPki();

// A server SSL_CTX with the given certificate and key. With a non-empty
// `client_ca_pem` the server requires a client certificate signed by it.
// The caller owns the result (SSL_CTX_free).
SSL_CTX* NewServerTlsContext(const std::string& cert_pem, const std::string& key_pem,
                             const std::string& client_ca_pem = "");

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_HTTP_TEST_PKI_H_
