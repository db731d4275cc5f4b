// File: tests/reconcile/submit_target_note_test.cc
//
// The submit-target note (controller/reconcile/submit_target_note.h): what
// it records verifies under its key, and nothing else does.

#include "controller/reconcile/submit_target_note.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/reconcile/ownership.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

JobFacts WithNote(const std::string& note) {
  JobFacts job = fixtures::NewJob();
  job.annotations[std::string(kSubmitTargetAnnotation)] = note;
  return job;
}

std::string NoteFor(const JobFacts& job, std::string_view key = kKey, int32_t run = 1) {
  return EncodeSubmitTargetNote(key, job.id.uid, run, LocationOf(fixtures::Cluster().spec));
}

TEST(SubmitTargetNoteTest, ANoteVerifiesUnderItsKey) {
  const JobFacts job = WithNote(NoteFor(fixtures::NewJob()));
  const auto where = VerifiedSubmitTarget(kKey, job);
  ASSERT_TRUE(where.has_value());
  EXPECT_TRUE(SameLocation(*where, LocationOf(fixtures::Cluster().spec)));
}

// The MAC is HMAC-SHA256 (OpenSSL's one-shot HMAC() as the reference) of the
// signed text in this exact form: a note written by an earlier version of
// the operator, before an upgrade, must still verify after it.
TEST(SubmitTargetNoteTest, TheMacIsHmacSha256OfTheSignedTextInItsWireForm) {
  const v1alpha1::SlurmJobLocation where = LocationOf(fixtures::Cluster().spec);
  const std::string uid = "6f1c2a4e-0b7d-4c55-9d1e-2a3b4c5d6e7f";
  for (int pass = 0; pass < 2; ++pass) {  // the second with the thread's context reused
    const nlohmann::json note = nlohmann::json::parse(EncodeSubmitTargetNote(kKey, uid, 3, where));
    std::string text = "slurmjob-operator submit-target v1";
    for (const std::string& field : {uid, where.project_id(), where.region(), where.cluster_id()}) {
      absl::StrAppend(&text, "\n", field.size(), ":", field);
    }
    absl::StrAppend(&text, "\nrun:3");
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    ASSERT_NE(HMAC(EVP_sha256(), kKey, sizeof(kKey) - 1,
                   reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len),
              nullptr);
    EXPECT_EQ(note.value("hmac", ""),
              absl::BytesToHexString(std::string(reinterpret_cast<const char*>(mac), len)));
  }
  // Another key, then this one again: the thread's context is keyed anew each time.
  const std::string first =
      nlohmann::json::parse(EncodeSubmitTargetNote(kKey, uid, 3, where)).value("hmac", "");
  const std::string other =
      nlohmann::json::parse(
          EncodeSubmitTargetNote("another-key-0123456789abcdef0123456789", uid, 3, where))
          .value("hmac", "");
  const std::string again =
      nlohmann::json::parse(EncodeSubmitTargetNote(kKey, uid, 3, where)).value("hmac", "");
  EXPECT_NE(other, first);
  EXPECT_EQ(again, first);
}

TEST(SubmitTargetNoteTest, NothingVerifiesWithoutAKeyOrUnderAnother) {
  const JobFacts job = WithNote(NoteFor(fixtures::NewJob()));
  EXPECT_FALSE(VerifiedSubmitTarget("", job).has_value());
  EXPECT_FALSE(VerifiedSubmitTarget("another-key-0123456789abcdef0123456789", job).has_value());
  EXPECT_FALSE(VerifiedSubmitTarget(kKey, fixtures::NewJob()).has_value()) << "no note";
}

// A tenant may edit the annotation: an edited location, uid or run no longer
// verifies, so it cannot choose where a search goes.
TEST(SubmitTargetNoteTest, AnEditedNoteDoesNotVerify) {
  const JobFacts base = fixtures::NewJob();
  const std::string note = NoteFor(base);
  const std::string cluster = "\"clusterId\":\"c1\"";
  ASSERT_NE(note.find(cluster), std::string::npos) << note;
  EXPECT_FALSE(VerifiedSubmitTarget(
                   kKey, WithNote(absl::StrReplaceAll(note, {{cluster, "\"clusterId\":\"c9\""}})))
                   .has_value());
  ASSERT_NE(note.find("\"run\":1"), std::string::npos) << note;
  JobFacts run2 = WithNote(absl::StrReplaceAll(note, {{"\"run\":1", "\"run\":2"}}));
  run2.status.set_run(2);  // the edited run is the current one: only the hmac can tell
  EXPECT_FALSE(VerifiedSubmitTarget(kKey, run2).has_value());
  // A forged hmac of the right length.
  const auto at = note.find("\"hmac\":\"") + 8;
  std::string forged = note;
  forged[at] = forged[at] == '0' ? '1' : '0';
  EXPECT_FALSE(VerifiedSubmitTarget(kKey, WithNote(forged)).has_value());
}

// A note copied into another object (kubectl get -o yaml | kubectl create
// keeps annotations), or left by an earlier run, is not this run's record.
TEST(SubmitTargetNoteTest, ANoteCountsOnlyForItsUidAndTheCurrentRun) {
  JobFacts copy = WithNote(NoteFor(fixtures::NewJob()));
  copy.id.uid = "uid-of-the-copy";
  EXPECT_FALSE(VerifiedSubmitTarget(kKey, copy).has_value());
  JobFacts later = WithNote(NoteFor(fixtures::NewJob()));
  later.status.set_run(2);
  EXPECT_FALSE(VerifiedSubmitTarget(kKey, later).has_value());
  JobFacts run2 = WithNote(NoteFor(fixtures::NewJob(), kKey, 2));
  run2.status.set_run(2);
  EXPECT_TRUE(VerifiedSubmitTarget(kKey, run2).has_value());
}

TEST(SubmitTargetNoteTest, MalformedOrOversizedNotesAreIgnored) {
  for (const std::string& bad :
       {std::string(""), std::string("not json"), std::string("[1,2]"),
        std::string(R"({"uid":{"nested":1}})"), std::string(R"({"run":"1"})"),
        NoteFor(fixtures::NewJob()) + std::string(kMaxNoteBytes, ' ')}) {
    EXPECT_FALSE(VerifiedSubmitTarget(kKey, WithNote(bad)).has_value()) << bad;
  }
}

}  // namespace
}  // namespace slurmop::reconcile
