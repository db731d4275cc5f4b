// File: tests/reconcile/submit_note_key_test.cc
//
// ResolveSubmitNoteKey (submit_note_key.h): where the submit-note key comes
// from, over the in-memory Kubernetes API.

#include "controller/reconcile/submit_note_key.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "controller/kube/resource_types.h"
#include "tests/reconcile/fakes/fake_kube.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;
using testing::InMemoryKube;

constexpr char kNs[] = "slurmjob-operator-system";
const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');

SubmitNoteKeySource FromSecret() { return {"", kNs, kDefaultNoteKeySecret}; }

std::string KeyA() { return kKeyA; }

nlohmann::json SecretWithData(nlohmann::json data) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", kDefaultNoteKeySecret}, {"namespace", kNs}}},
          {"data", std::move(data)}};
}

void StoreSecret(InMemoryKube& kube, nlohmann::json secret) {
  ASSERT_TRUE(kube.Create(kube::Secrets(), kNs, secret).ok());
  kube.ClearCalls();
}

TEST(SubmitNoteKeyTest, AnExistingSecretsKeyIsUsedAndNothingIsWritten) {
  InMemoryKube kube;
  StoreSecret(kube, SecretWithData({{"key", absl::Base64Escape(kKeyB + "\n")}}));
  absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->key, kKeyB);  // the trailing newline of `openssl rand -hex 32` dropped
  EXPECT_THAT(k->origin,
              HasSubstr("Secret slurmjob-operator-system/" + std::string(kDefaultNoteKeySecret)));
  EXPECT_EQ(kube.WriteCount(), 0);
}

TEST(SubmitNoteKeyTest, AMissingSecretIsCreatedImmutableWithTheNewKey) {
  InMemoryKube kube;
  absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->key, kKeyA);
  EXPECT_THAT(k->origin, HasSubstr("(created)"));
  std::optional<nlohmann::json> stored = kube.Object("secrets", kNs, kDefaultNoteKeySecret);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["immutable"], true);
  EXPECT_EQ((*stored)["data"]["key"], absl::Base64Escape(kKeyA));
  // A second replica (or the next start) reads the same key and generates none.
  absl::StatusOr<SubmitNoteKey> again =
      ResolveSubmitNoteKey(kube, FromSecret(), [] { return kKeyB; });
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->key, kKeyA);
}

TEST(SubmitNoteKeyTest, AReplicaThatLosesTheCreateRaceTakesTheWinnersKey) {
  InMemoryKube kube;
  bool raced = false;
  kube.on_request = [&](const testing::KubeCall& call) {
    if (call.verb != "create" || raced) return;
    raced = true;  // another replica's create lands just before ours
    ASSERT_TRUE(
        kube.Create(kube::Secrets(), kNs, SecretWithData({{"key", absl::Base64Escape(kKeyB)}}))
            .ok());
  };
  absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->key, kKeyB);
  EXPECT_THAT(k->origin, HasSubstr("another replica"));
}

TEST(SubmitNoteKeyTest, NotAllowedToReadOrCreateTurnsNotesOffAndSaysWhatToGrant) {
  struct Case {
    const char* verb;
    absl::Status answer;
    const char* says;
  };
  const Case cases[] = {
      {"get", absl::PermissionDeniedError("secrets is forbidden"), "cannot read Secret"},
      {"create", absl::PermissionDeniedError("secrets is forbidden"), "cannot create Secret"},
      // The namespace does not exist.
      {"create", absl::NotFoundError("namespaces \"slurmjob-operator-system\" not found"),
       "namespaces \"slurmjob-operator-system\" not found"},
  };
  for (const Case& c : cases) {
    InMemoryKube kube;
    kube.FailNext(c.verb, c.answer);
    absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_TRUE(k->key.empty()) << c.verb;
    EXPECT_THAT(k->off_reason, HasSubstr(c.says));
    EXPECT_THAT(k->off_reason, HasSubstr("Grant the operator get and create on secrets"));
    EXPECT_EQ(kube.Count("create", /*only_ok=*/true), 0) << c.verb;
  }
}

TEST(SubmitNoteKeyTest, AnUnansweredReadOrCreateIsAnErrorNotAKeylessStart) {
  // Running without the key while other replicas have it is what must not
  // happen by accident: the process exits and is restarted instead.
  {
    InMemoryKube kube;
    kube.FailNext("get", absl::UnavailableError("connection refused"));
    absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
    ASSERT_FALSE(k.ok());
    EXPECT_THAT(std::string(k.status().message()), HasSubstr("cannot read Secret"));
    EXPECT_EQ(kube.WriteCount(), 0);
  }
  {
    InMemoryKube kube;
    kube.FailNext("create", absl::InternalError("etcdserver: request timed out"));
    absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
    ASSERT_FALSE(k.ok());
    EXPECT_THAT(std::string(k.status().message()), HasSubstr("cannot create Secret"));
  }
}

TEST(SubmitNoteKeyTest, AMalformedSecretIsAnErrorNamingItAndTheFix) {
  const nlohmann::json bad_data[] = {
      nlohmann::json::object(),                                               // no data.key
      {{"key", "%%% not base64"}},                                            // not base64
      {{"key", absl::Base64Escape(std::string(31, 'x'))}},                    // too short
      {{"key", absl::Base64Escape(std::string(kMaxNoteKeyBytes + 1, 'x'))}},  // too long
      {{"key", 42}},                                                          // not a string
  };
  for (const nlohmann::json& data : bad_data) {
    InMemoryKube kube;
    StoreSecret(kube, SecretWithData(data));
    absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, FromSecret(), KeyA);
    ASSERT_FALSE(k.ok()) << data.dump();
    EXPECT_THAT(std::string(k.status().message()),
                HasSubstr("Secret slurmjob-operator-system/" + std::string(kDefaultNoteKeySecret)));
    EXPECT_THAT(std::string(k.status().message()), HasSubstr("delete the Secret"));
    EXPECT_EQ(kube.WriteCount(), 0) << "a bad key is never replaced behind the installer's back";
  }
}

TEST(SubmitNoteKeyTest, AFailedGeneratorCreatesNoSecret) {
  InMemoryKube kube;
  absl::StatusOr<SubmitNoteKey> k =
      ResolveSubmitNoteKey(kube, FromSecret(), [] { return std::string(); });
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(kube.WriteCount(), 0);
}

TEST(SubmitNoteKeyTest, AKeyFileTakesPrecedenceAndTheAPIIsNotAsked) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("submit_note_key_test." + std::to_string(::getpid()) + ".key"))
                               .string();
  std::ofstream(path) << kKeyB << "\n";
  InMemoryKube kube;
  SubmitNoteKeySource source = FromSecret();
  source.file = path;
  absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, source, KeyA);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->key, kKeyB);
  EXPECT_TRUE(kube.calls().empty());

  std::ofstream(path) << "short\n";
  k = ResolveSubmitNoteKey(kube, source, KeyA);
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("holds 5 bytes"));
  std::filesystem::remove(path);
  k = ResolveSubmitNoteKey(kube, source, KeyA);
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("cannot be opened"));
}

TEST(SubmitNoteKeyTest, NoFileAndNoSecretIsOffWithoutAWord) {
  InMemoryKube kube;
  absl::StatusOr<SubmitNoteKey> k = ResolveSubmitNoteKey(kube, {"", kNs, ""}, KeyA);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k->key.empty());
  EXPECT_TRUE(k->off_reason.empty());
  EXPECT_TRUE(kube.calls().empty());
}

TEST(SubmitNoteKeyTest, NewRandomNoteKeysAre64HexDigitsAndDiffer) {
  const std::string a = NewRandomNoteKey();
  const std::string b = NewRandomNoteKey();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace slurmop::reconcile
