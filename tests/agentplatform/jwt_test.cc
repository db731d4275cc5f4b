// File: tests/agentplatform/jwt_test.cc
//
// RS256 signing: base64url, signatures verified with the public half of the
// committed test key pair, and the service-account assertion's claims.

#include "controller/agentplatform/jwt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/service_account.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::DecodeJwt;
using ::slurmop::agentplatform::testing::ReadTestdata;
using ::slurmop::agentplatform::testing::VerifyRs256;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(Jwt, Base64UrlIsUnpaddedAndUrlSafe) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(Base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff\xbf"), "-_-_");
}

TEST(Jwt, SignatureVerifiesWithThePublicKey) {
  absl::StatusOr<std::unique_ptr<RsaSigner>> signer =
      RsaSigner::FromPem(ReadTestdata("test_sa_key.pem"));
  ASSERT_TRUE(signer.ok()) << signer.status();
  absl::StatusOr<std::string> sig = (*signer)->Sign("hello");
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->size(), 256u);  // 2048-bit key
  const std::string pub = ReadTestdata("test_sa_key.pub.pem");
  EXPECT_TRUE(VerifyRs256(pub, "hello", *sig));
  EXPECT_FALSE(VerifyRs256(pub, "hellO", *sig));
  // PKCS#1 v1.5 is deterministic.
  EXPECT_EQ(*(*signer)->Sign("hello"), *sig);
}

TEST(Jwt, MakeJwtVerifies) {
  auto signer = RsaSigner::FromPem(ReadTestdata("test_sa_key.pem"));
  ASSERT_TRUE(signer.ok());
  absl::StatusOr<std::string> jwt =
      MakeJwt({{"alg", "RS256"}, {"typ", "JWT"}}, {{"iss", "x"}, {"iat", 1}}, **signer);
  ASSERT_TRUE(jwt.ok());
  auto decoded = DecodeJwt(*jwt);
  EXPECT_EQ(decoded.header, nlohmann::json({{"alg", "RS256"}, {"typ", "JWT"}}));
  EXPECT_EQ(decoded.claims, nlohmann::json({{"iss", "x"}, {"iat", 1}}));
  EXPECT_TRUE(
      VerifyRs256(ReadTestdata("test_sa_key.pub.pem"), decoded.signing_input, decoded.signature));
}

TEST(Jwt, BadKeysAreRejectedWithoutQuotingThem) {
  const std::string not_a_key =
      "-----BEGIN PRIVATE KEY-----\nTUlJU0VDUkVUU0VDUkVU\n-----END PRIVATE KEY-----\n";
  absl::StatusOr<std::unique_ptr<RsaSigner>> signer = RsaSigner::FromPem(not_a_key);
  ASSERT_FALSE(signer.ok());
  EXPECT_EQ(signer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(signer.status().message(), Not(HasSubstr("TUlJU0VDUkVU")));
  EXPECT_FALSE(RsaSigner::FromPem("").ok());
}

TEST(ServiceAccountAssertion, ClaimsAndSignature) {
  const nlohmann::json file = nlohmann::json::parse(ReadTestdata("test_service_account.json"));
  absl::StatusOr<ServiceAccountKey> key = ParseServiceAccountKey(file);
  ASSERT_TRUE(key.ok()) << key.status();
  const Time now = Time(std::chrono::seconds(1530060324));
  absl::StatusOr<std::string> jwt =
      MakeServiceAccountAssertion(*key, {"https://www.googleapis.com/auth/cloud-platform"}, now);
  ASSERT_TRUE(jwt.ok());
  auto decoded = DecodeJwt(*jwt);
  EXPECT_EQ(decoded.header, nlohmann::json({{"alg", "RS256"},
                                            {"typ", "JWT"},
                                            {"kid", "0123456789abcdef0123456789abcdef01234567"}}));
  EXPECT_EQ(decoded.claims,
            nlohmann::json({{"iss", "operator-test@test-project.iam.gserviceaccount.com"},
                            {"scope", "https://www.googleapis.com/auth/cloud-platform"},
                            {"aud", "https://oauth2.googleapis.com/token"},
                            {"iat", 1530060324},
                            {"exp", 1530060324 + 3600}}));
  EXPECT_TRUE(
      VerifyRs256(ReadTestdata("test_sa_key.pub.pem"), decoded.signing_input, decoded.signature));
  // Deterministic: the same inputs give the same assertion.
  EXPECT_EQ(
      *MakeServiceAccountAssertion(*key, {"https://www.googleapis.com/auth/cloud-platform"}, now),
      *jwt);
}

}  // namespace
}  // namespace slurmop::agentplatform
