// File: controller/http/tls_material.h
//
// TLS material for CpprestTransport: loads the PEM files named in TlsOptions
// once, and applies the result to a boost::asio::ssl::context.
//
// Contract:
//  * LoadTlsMaterial() reads the files, concatenates file and inline PEM of
//    the same kind, and checks that everything parses by configuring a
//    throw-away context. A key without a certificate (or the reverse) is
//    kInvalidArgument. Error messages name files, never their contents.
//  * ConfigureSslContext() never throws. With CA PEM present it replaces the
//    context's trust store, so only those CAs are trusted (client-go
//    semantics); without it the context trusts the system store, through
//    SystemTrustStore()'s one shared copy. TLS 1.2 is the minimum protocol
//    version.
//  * SystemTrustStore() loads the system's CAs (OpenSSL's default paths)
//    once per process; every context without CA PEM shares that one store
//    (issue #16: each copy of Debian's ~140 CAs is ~1 MB of heap, and there
//    was one per client and per cpprest connection). Null only if OpenSSL
//    cannot allocate a store; a store that cannot be loaded is logged and
//    stays empty, so servers fail verification instead of being trusted.

#ifndef SLURMOP_CONTROLLER_HTTP_TLS_MATERIAL_H_
#define SLURMOP_CONTROLLER_HTTP_TLS_MATERIAL_H_

#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/http/cpprest_transport.h"

namespace slurmop::http {

struct TlsMaterial {
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;
  std::string server_name;
};

absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsOptions& options);

absl::Status ConfigureSslContext(const TlsMaterial& material, boost::asio::ssl::context& context);

X509_STORE* SystemTrustStore();

// Reads a whole file. kNotFound if it does not exist, kInvalidArgument if it
// cannot be read.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_TLS_MATERIAL_H_
