// File: tests/http/test_pki.cc
//
// See test_pki.h.

#include "tests/http/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace slurmop::testing {
namespace {

struct KeyAndCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
};

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data;
  long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(bio);
  return pem;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data;
  long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(bio);
  return pem;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("X509V3_EXT_conf_nid failed");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Issues a certificate for `cn`; a null issuer means self-signed (a CA).
KeyAndCert Issue(const char* cn, const KeyAndCert* issuer, const char* san, bool is_ca,
                 long serial) {
  KeyAndCert out;
  out.key = EVP_EC_gen("P-256");
  out.cert = X509_new();
  X509_set_version(out.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), 3600L * 24 * 365);
  X509_set_pubkey(out.cert, out.key);
  X509_NAME* name = X509_get_subject_name(out.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert : out.cert;
  X509_set_issuer_name(out.cert, X509_get_subject_name(issuer_cert));
  if (is_ca) {
    AddExtension(out.cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(out.cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(out.cert, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(out.cert, issuer_cert, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  if (san != nullptr) AddExtension(out.cert, issuer_cert, NID_subject_alt_name, san);
  X509_sign(out.cert, issuer != nullptr ? issuer->key : out.key, EVP_sha256());
  return out;
}

TestPki Generate() {
  TestPki pki;
  KeyAndCert ca = Issue("test-ca", nullptr, nullptr, true, 1);
  KeyAndCert server = Issue("127.0.0.1", &ca, "IP:127.0.0.1,DNS:localhost", false, 2);
  KeyAndCert named = Issue("kubernetes", &ca, "DNS:kubernetes.default.svc", false, 3);
  KeyAndCert client = Issue("test-client", &ca, nullptr, false, 4);
  KeyAndCert other = Issue("other-ca", nullptr, nullptr, true, 5);
  pki.ca_cert_pem = CertPem(ca.cert);
  pki.server_cert_pem = CertPem(server.cert);
  pki.server_key_pem = KeyPem(server.key);
  pki.named_server_cert_pem = CertPem(named.cert);
  pki.named_server_key_pem = KeyPem(named.key);
  pki.client_cert_pem = CertPem(client.cert);
  pki.client_key_pem = KeyPem(client.key);
  pki.other_ca_cert_pem = CertPem(other.cert);
  for (KeyAndCert* kc : {&ca, &server, &named, &client, &other}) {
    X509_free(kc->cert);
    EVP_PKEY_free(kc->key);
  }
  return pki;
}

}  // namespace

const TestPki& GetTestPki() {
  static const TestPki* pki = new TestPki(Generate());
  return *pki;
}

SSL_CTX* NewServerTlsContext(const std::string& cert_pem, const std::string& key_pem,
                             const std::string& client_ca_pem) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  SSL_CTX_use_certificate(ctx, cert);
  SSL_CTX_use_PrivateKey(ctx, key);
  X509_free(cert);
  EVP_PKEY_free(key);
  BIO_free(cert_bio);
  BIO_free(key_bio);
  if (!client_ca_pem.empty()) {
    BIO* ca_bio = BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size()));
    X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
    X509_free(ca);
    BIO_free(ca_bio);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

}  // namespace slurmop::testing
