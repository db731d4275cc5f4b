// File: tests/http/tls_material_test.cc
//
// ConfigureSslContext's trust stores: contexts without CA PEM share the
// process's one system store (issue #16: a copy per context was ~1 MB of
// heap each) and hold the system's CAs; a context with CA PEM trusts only
// its own store.

#include "controller/http/tls_material.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>

#include "gtest/gtest.h"
#include "tests/http/test_pki.h"

namespace slurmop::http {
namespace {

using ::slurmop::testing::GetTestPki;

X509_STORE* StoreOf(boost::asio::ssl::context& context) {
  return SSL_CTX_get_cert_store(context.native_handle());
}

TEST(TlsMaterialTest, ContextsWithoutCaShareTheOneSystemStore) {
  boost::asio::ssl::context first(boost::asio::ssl::context::tls_client);
  boost::asio::ssl::context second(boost::asio::ssl::context::tls_client);
  // As cpprest does for each connection before its callback configures it.
  second.set_default_verify_paths();
  ASSERT_TRUE(ConfigureSslContext(TlsMaterial{}, first).ok());
  ASSERT_TRUE(ConfigureSslContext(TlsMaterial{}, second).ok());
  ASSERT_NE(SystemTrustStore(), nullptr);
  EXPECT_EQ(StoreOf(first), SystemTrustStore());
  EXPECT_EQ(StoreOf(second), SystemTrustStore());
}

TEST(TlsMaterialTest, AContextWithCaTrustsOnlyItsOwnStore) {
  boost::asio::ssl::context with_ca(boost::asio::ssl::context::tls_client);
  TlsMaterial material;
  material.ca_pem = GetTestPki().ca_cert_pem;
  ASSERT_TRUE(ConfigureSslContext(material, with_ca).ok());
  X509_STORE* store = StoreOf(with_ca);
  EXPECT_NE(store, SystemTrustStore());
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(store);
  ASSERT_NE(objects, nullptr);
  EXPECT_EQ(sk_X509_OBJECT_num(objects), 1);
}

// The shared store holds the system's CAs (install-deps.sh installs Debian's
// ca-certificates, which OpenSSL's default file points at).
TEST(TlsMaterialTest, AContextWithoutCaTrustsTheSystemCas) {
  boost::asio::ssl::context system(boost::asio::ssl::context::tls_client);
  ASSERT_TRUE(ConfigureSslContext(TlsMaterial{}, system).ok());
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(StoreOf(system));
  ASSERT_NE(objects, nullptr);
  EXPECT_GT(sk_X509_OBJECT_num(objects), 10);
}

}  // namespace
}  // namespace slurmop::http
