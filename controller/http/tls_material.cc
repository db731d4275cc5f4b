// File: controller/http/tls_material.cc
//
// See tls_material.h for the contract.

#include "controller/http/tls_material.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace slurmop::http {
namespace {

// Loads `file` (if set) followed by `inline_pem` (if set).
absl::StatusOr<std::string> CombinePem(const std::string& file, const std::string& inline_pem) {
  std::string pem;
  if (!file.empty()) {
    absl::StatusOr<std::string> contents = ReadFileToString(file);
    if (!contents.ok()) return contents.status();
    pem = *std::move(contents);
  }
  if (!inline_pem.empty()) {
    if (!pem.empty() && pem.back() != '\n') pem.push_back('\n');
    pem.append(inline_pem);
  }
  return pem;
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("file not found: ", path));
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  return contents.str();
}

absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsOptions& options) {
  TlsMaterial material;
  material.insecure_skip_tls_verify = options.insecure_skip_tls_verify;
  material.server_name = options.server_name;

  absl::StatusOr<std::string> ca = CombinePem(options.ca_file, options.ca_pem);
  if (!ca.ok()) return ca.status();
  material.ca_pem = *std::move(ca);
  absl::StatusOr<std::string> cert = CombinePem(options.client_cert_file, options.client_cert_pem);
  if (!cert.ok()) return cert.status();
  material.client_cert_pem = *std::move(cert);
  absl::StatusOr<std::string> key = CombinePem(options.client_key_file, options.client_key_pem);
  if (!key.ok()) return key.status();
  material.client_key_pem = *std::move(key);

  if (material.client_cert_pem.empty() != material.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate and a client key must be given together");
  }
  boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
  absl::Status configured = ConfigureSslContext(material, probe);
  if (!configured.ok()) return configured;
  return material;
}

X509_STORE* SystemTrustStore() {
  // Never freed: contexts hold references to it until the process exits.
  static X509_STORE* const store = [] {
    X509_STORE* loaded = X509_STORE_new();
    if (loaded != nullptr && X509_STORE_set_default_paths(loaded) != 1) {
      LOG(WARNING) << "the system CA store could not be loaded: servers will not be verified "
                      "against it";
    }
    return loaded;
  }();
  return store;
}

absl::Status ConfigureSslContext(const TlsMaterial& material, boost::asio::ssl::context& context) {
  boost::system::error_code ec;
  context.set_options(
      boost::asio::ssl::context::default_workarounds | boost::asio::ssl::context::no_sslv2 |
          boost::asio::ssl::context::no_sslv3 | boost::asio::ssl::context::no_tlsv1 |
          boost::asio::ssl::context::no_tlsv1_1,
      ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS options: ", ec.message()));

  if (material.ca_pem.empty()) {
    // The process's one copy of the system store, in place of any the context
    // loaded itself (cpprest loads one for every connection it opens).
    X509_STORE* system = SystemTrustStore();
    if (system == nullptr) return absl::InternalError("X509_STORE_new failed");
    SSL_CTX_set1_cert_store(context.native_handle(), system);
  } else {
    // Trust exactly the given CAs, not the system store cpprest loaded.
    X509_STORE* store = X509_STORE_new();
    if (store == nullptr) return absl::InternalError("X509_STORE_new failed");
    SSL_CTX_set_cert_store(context.native_handle(), store);
    context.add_certificate_authority(
        boost::asio::buffer(material.ca_pem.data(), material.ca_pem.size()), ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("CA certificate: ", ec.message()));
  }
  if (!material.client_cert_pem.empty()) {
    context.use_certificate_chain(
        boost::asio::buffer(material.client_cert_pem.data(), material.client_cert_pem.size()), ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("client certificate: ", ec.message()));
    context.use_private_key(
        boost::asio::buffer(material.client_key_pem.data(), material.client_key_pem.size()),
        boost::asio::ssl::context::pem, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("client key: ", ec.message()));
    if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
      return absl::InvalidArgumentError("client key does not match the client certificate");
    }
  }
  return absl::OkStatus();
}

}  // namespace slurmop::http
