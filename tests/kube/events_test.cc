// File: tests/kube/events_test.cc
//
// EventRecorder against a FakeClient: events.k8s.io/v1 shape, aggregation of
// repeats into a series within 10 minutes, fallback to core/v1 Events on
// 404, recreation after a vanished Event, limits, and non-blocking Record().

#include "controller/kube/events.h"

#include <chrono>
#include <set>
#include <string>

#include "absl/synchronization/notification.h"
#include "controller/common/time_format.h"
#include "controller/kube/event_spam_filter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_client.h"

namespace slurmop::kube {
namespace {

using ::slurmop::kube::testing::FakeClient;
using ::slurmop::kube::testing::RecordedCall;
using ::testing::StartsWith;

const nlohmann::json kJob = {
    {"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
    {"kind", "SlurmJob"},
    {"metadata",
     {{"namespace", "ns"}, {"name", "j1"}, {"uid", "uid-1"}, {"resourceVersion", "42"}}},
    {"spec", {{"big", "ignored"}}}};

absl::Status NotFound() {
  return StatusFromResponse(
      http::Response{404, {}, R"({"kind":"Status","code":404,"reason":"NotFound"})"});
}

class EventRecorderTest : public ::testing::Test {
 protected:
  FakeClient client_;
  FakeClock clock_;
};

TEST_F(EventRecorderTest, CreatesEventsV1WithRegardingReference) {
  EventRecorder recorder(client_, clock_, "slurmjob-operator", "slurmjob-operator-pod-1");
  recorder.Record(kJob, "Normal", "Submitted", "Submit", "submitted Slurm job 123");
  recorder.Flush();

  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "create");
  EXPECT_EQ(calls[0].rt, EventsV1());
  EXPECT_EQ(calls[0].ns, "ns");
  const nlohmann::json& event = calls[0].body;
  EXPECT_EQ(event["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(event["kind"], "Event");
  EXPECT_THAT(event["metadata"]["name"].get<std::string>(), StartsWith("j1."));
  EXPECT_EQ(event["metadata"]["namespace"], "ns");
  EXPECT_EQ(event["eventTime"], FormatRfc3339Micro(clock_.Now()));
  EXPECT_EQ(event["reportingController"], "slurmjob-operator");
  EXPECT_EQ(event["reportingInstance"], "slurmjob-operator-pod-1");
  EXPECT_EQ(event["action"], "Submit");
  EXPECT_EQ(event["reason"], "Submitted");
  EXPECT_EQ(event["note"], "submitted Slurm job 123");
  EXPECT_EQ(event["type"], "Normal");
  EXPECT_EQ(event["regarding"], (nlohmann::json{{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                                                {"kind", "SlurmJob"},
                                                {"namespace", "ns"},
                                                {"name", "j1"},
                                                {"uid", "uid-1"},
                                                {"resourceVersion", "42"}}));
  EXPECT_FALSE(event.contains("series"));
}

TEST_F(EventRecorderTest, RepeatsWithinTenMinutesPatchTheSeries) {
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  recorder.Record(kJob, "Warning", "SubmitFailed", "Submit", "slurm said no");
  recorder.Flush();
  clock_.Advance(std::chrono::minutes(3));
  recorder.Record(kJob, "Warning", "SubmitFailed", "Submit", "slurm said no");
  recorder.Flush();
  clock_.Advance(std::chrono::minutes(9));  // 9 min after the last one: still a repeat
  recorder.Record(kJob, "Warning", "SubmitFailed", "Submit", "slurm said no");
  recorder.Flush();

  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 3u);
  const std::string name = calls[0].body["metadata"]["name"];
  EXPECT_EQ(calls[1].verb, "patch");
  EXPECT_EQ(calls[1].rt, EventsV1());
  EXPECT_EQ(calls[1].ns, "ns");
  EXPECT_EQ(calls[1].name, name);
  EXPECT_EQ(calls[1].patch_type, PatchType::kMerge);
  EXPECT_EQ(calls[1].body["series"]["count"], 2);
  EXPECT_EQ(calls[1].body["series"]["lastObservedTime"],
            FormatRfc3339Micro(clock_.Now() - std::chrono::minutes(9)));
  EXPECT_EQ(calls[2].body["series"]["count"], 3);
  EXPECT_EQ(calls[2].body["series"]["lastObservedTime"], FormatRfc3339Micro(clock_.Now()));
}

TEST_F(EventRecorderTest, SeriesPastTheBoundForgetTheLeastRecentlyWritten) {
  EventRecorderOptions options;
  options.max_series = 2;
  EventRecorder recorder(client_, clock_, "ctl", "inst", options);
  nlohmann::json a = kJob, b = kJob, c = kJob;
  b["metadata"]["name"] = "j2";
  b["metadata"]["uid"] = "uid-2";
  c["metadata"]["name"] = "j3";
  c["metadata"]["uid"] = "uid-3";
  recorder.Record(a, "Warning", "SubmitFailed", "Submit", "no");
  recorder.Record(b, "Warning", "SubmitFailed", "Submit", "no");
  recorder.Record(a, "Warning", "SubmitFailed", "Submit", "no");  // a: most recent
  recorder.Record(c, "Warning", "SubmitFailed", "Submit", "no");  // forgets b, not a
  recorder.Record(a, "Warning", "SubmitFailed", "Submit", "no");
  recorder.Record(b, "Warning", "SubmitFailed", "Submit", "no");
  recorder.Flush();
  std::vector<std::string> verbs;
  for (const RecordedCall& call : client_.calls()) verbs.push_back(call.verb + " " + call.name);
  EXPECT_THAT(verbs,
              ::testing::ElementsAre("create ", "create ", ::testing::StartsWith("patch j1."),
                                     "create ", ::testing::StartsWith("patch j1."), "create "))
      << "b's series was forgotten: its repeat is a new Event";
}

TEST_F(EventRecorderTest, DifferentNoteReasonOrObjectMakesANewEvent) {
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  recorder.Record(kJob, "Normal", "Running", "Poll", "state RUNNING");
  recorder.Record(kJob, "Normal", "Running", "Poll", "state RUNNING (2 nodes)");
  recorder.Record(kJob, "Normal", "Completed", "Poll", "state RUNNING");
  nlohmann::json other = kJob;
  other["metadata"]["uid"] = "uid-2";
  other["metadata"]["name"] = "j2";
  recorder.Record(other, "Normal", "Running", "Poll", "state RUNNING");
  recorder.Flush();
  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 4u);
  std::set<std::string> names;
  for (const RecordedCall& call : calls) {
    EXPECT_EQ(call.verb, "create");
    names.insert(call.body["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 4u) << "event names are unique even at the same instant";
}

TEST_F(EventRecorderTest, AfterTheWindowARepeatIsANewEvent) {
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  recorder.Record(kJob, "Normal", "Running", "Poll", "same");
  recorder.Flush();
  clock_.Advance(std::chrono::minutes(10) + std::chrono::seconds(1));
  recorder.Record(kJob, "Normal", "Running", "Poll", "same");
  recorder.Flush();
  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].verb, "create");
}

TEST_F(EventRecorderTest, FallsBackToCoreEventsWhenEventsV1IsNotServed) {
  client_.on_create = [](const RecordedCall& call) -> absl::StatusOr<nlohmann::json> {
    if (call.rt == EventsV1()) return NotFound();
    return call.body;
  };
  EventRecorder recorder(client_, clock_, "slurmjob-operator", "pod-1");
  recorder.Record(kJob, "Warning", "SubmitFailed", "Submit", "no partition");
  recorder.Flush();
  clock_.Advance(std::chrono::seconds(30));
  recorder.Record(kJob, "Warning", "SubmitFailed", "Submit", "no partition");
  recorder.Record(kJob, "Normal", "Other", "Poll", "goes straight to core/v1");
  recorder.Flush();

  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].rt, EventsV1());
  EXPECT_EQ(calls[1].rt, CoreEvents());
  const nlohmann::json& event = calls[1].body;
  EXPECT_EQ(event["apiVersion"], "v1");
  EXPECT_EQ(event["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(event["involvedObject"]["kind"], "SlurmJob");
  EXPECT_EQ(event["message"], "no partition");
  EXPECT_EQ(event["reason"], "SubmitFailed");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["source"]["component"], "slurmjob-operator");
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], FormatRfc3339(clock_.Now() - std::chrono::seconds(30)));
  EXPECT_EQ(event["lastTimestamp"], event["firstTimestamp"]);

  EXPECT_EQ(calls[2].verb, "patch");
  EXPECT_EQ(calls[2].rt, CoreEvents());
  EXPECT_EQ(calls[2].body["count"], 2);
  EXPECT_EQ(calls[2].body["lastTimestamp"], FormatRfc3339(clock_.Now()));
  EXPECT_EQ(calls[3].verb, "create");
  EXPECT_EQ(calls[3].rt, CoreEvents()) << "no second events.k8s.io attempt";
}

TEST_F(EventRecorderTest, VanishedEventIsRecreated) {
  client_.on_patch = [](const RecordedCall&) -> absl::StatusOr<nlohmann::json> {
    return NotFound();
  };
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  recorder.Record(kJob, "Normal", "Running", "Poll", "same");
  recorder.Record(kJob, "Normal", "Running", "Poll", "same");
  recorder.Flush();
  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].verb, "patch");
  EXPECT_EQ(calls[2].verb, "create");
}

TEST_F(EventRecorderTest, FailuresAreSwallowed) {
  client_.on_create = [](const RecordedCall&) -> absl::StatusOr<nlohmann::json> {
    return absl::UnavailableError("apiserver down");
  };
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  recorder.Record(kJob, "Normal", "Running", "Poll", "x");
  recorder.Record(kJob, "Normal", "Running", "Poll", "x");
  recorder.Flush();
  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].verb, "create") << "a failed create starts no series";
}

TEST_F(EventRecorderTest, LimitsAndClusterScopedObjects) {
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  std::string note(1000, 'a');
  note += "\xC3\xA9";             // a 2-byte UTF-8 character straddling...
  note += std::string(100, 'b');  // ...nothing: 1102 bytes in total
  nlohmann::json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}};
  recorder.Record(node, "Warning", std::string(200, 'R'), std::string(300, 'A'), note);
  std::string split_note(1023, 'a');
  split_note += "\xC3\xA9";  // byte 1024 would cut this character in half
  recorder.Record(kJob, "Normal", "R", "A", split_note);
  recorder.Flush();
  std::vector<RecordedCall> calls = client_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].ns, "default");
  EXPECT_EQ(calls[0].body["reason"].get<std::string>().size(), 128u);
  EXPECT_EQ(calls[0].body["action"].get<std::string>().size(), 128u);
  EXPECT_EQ(calls[0].body["note"].get<std::string>().size(), 1024u);
  EXPECT_EQ(calls[1].body["note"].get<std::string>(), std::string(1023, 'a'));
}

// client-go's spam filter: 25 writes about one object, then one per 5 minutes; other objects
// keep their own budget. A repeat counted into a series (a PATCH) spends a token too.
TEST_F(EventRecorderTest, SpamFilterAllowsABurstOf25ThenOnePerFiveMinutes) {
  EventRecorder recorder(client_, clock_, "ctl", "inst");
  for (int i = 0; i < 30; ++i) {
    recorder.Record(kJob, "Warning", "Unreachable", "Probe", "try " + std::to_string(i));
    clock_.Advance(std::chrono::seconds(1));  // 30 s in all: not a token's worth of refill
  }
  recorder.Record(kJob, "Warning", "Unreachable", "Probe", "try 0");  // a repeat: dropped too
  recorder.Flush();
  EXPECT_EQ(client_.calls().size(), 25u);

  nlohmann::json other = kJob;
  other["metadata"]["name"] = "j2";
  other["metadata"]["uid"] = "uid-2";
  recorder.Record(other, "Warning", "Unreachable", "Probe", "try 0");
  recorder.Flush();
  EXPECT_EQ(client_.calls().size(), 26u) << "another object has its own bucket";

  clock_.Advance(std::chrono::seconds(269));  // 299 s since the burst began: still no token
  recorder.Record(kJob, "Warning", "Unreachable", "Probe", "late 1");
  recorder.Flush();
  EXPECT_EQ(client_.calls().size(), 26u);
  clock_.Advance(std::chrono::seconds(2));  // 301 s: one token
  recorder.Record(kJob, "Warning", "Unreachable", "Probe", "late 2");
  recorder.Record(kJob, "Warning", "Unreachable", "Probe", "late 3");
  recorder.Flush();
  ASSERT_EQ(client_.calls().size(), 27u);
  EXPECT_EQ(client_.calls().back().body["note"], "late 2");
}

TEST(EventSpamFilterTest, RefillsUpToTheBurstOnly) {
  EventSpamFilter filter({/*burst=*/2, /*qps=*/1.0, /*max_objects=*/10});
  Time t = FakeClock().Now();
  EXPECT_TRUE(filter.Allow("a", t));
  EXPECT_TRUE(filter.Allow("a", t));
  EXPECT_FALSE(filter.Allow("a", t));
  t += std::chrono::hours(1);  // refill is capped at the burst
  EXPECT_TRUE(filter.Allow("a", t));
  EXPECT_TRUE(filter.Allow("a", t));
  EXPECT_FALSE(filter.Allow("a", t));
}

TEST(EventSpamFilterTest, LeastRecentlyUsedObjectIsEvictedWithItsBucket) {
  EventSpamFilter filter({/*burst=*/1, /*qps=*/0.0, /*max_objects=*/2});
  Time t = FakeClock().Now();
  EXPECT_TRUE(filter.Allow("a", t));
  EXPECT_TRUE(filter.Allow("b", t));
  EXPECT_FALSE(filter.Allow("a", t));  // a is now the most recent
  EXPECT_TRUE(filter.Allow("c", t));   // evicts b
  EXPECT_EQ(filter.TrackedObjects(), 2u);
  EXPECT_FALSE(filter.Allow("a", t));
  EXPECT_TRUE(filter.Allow("b", t)) << "b was evicted: a fresh, full bucket (as client-go's LRU)";
}

// Each key is stored once, viewed by the index: keys past the short-string
// size, used, moved to the front and evicted many times over, are still
// found (ASan would see a view of a freed key).
TEST(EventSpamFilterTest, LongKeysSurviveUseAndEviction) {
  EventSpamFilter filter({/*burst=*/2, /*qps=*/0.0, /*max_objects=*/8});
  Time t = FakeClock().Now();
  auto key = [](int i) { return "namespace-long-enough/slurmjob-" + std::to_string(i); };
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 8; ++i) EXPECT_TRUE(filter.Allow(key(round * 8 + i), t));
    for (int i = 7; i >= 0; --i) EXPECT_TRUE(filter.Allow(key(round * 8 + i), t));
    for (int i = 0; i < 8; ++i) EXPECT_FALSE(filter.Allow(key(round * 8 + i), t));
    EXPECT_EQ(filter.TrackedObjects(), 8u);
  }
}

TEST_F(EventRecorderTest, RecordNeverBlocksOnTheApiServer) {
  absl::Notification release;
  client_.on_create = [&](const RecordedCall& call) -> absl::StatusOr<nlohmann::json> {
    release.WaitForNotification();
    return call.body;
  };
  EventRecorderOptions opts;
  opts.spam.burst = 100;  // 50 Events about one object: above client-go's burst of 25
  EventRecorder recorder(client_, clock_, "ctl", "inst", opts);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    recorder.Record(kJob, "Normal", "Tick", "Poll", "tick " + std::to_string(i));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  release.Notify();
  recorder.Flush();
  EXPECT_EQ(client_.calls().size(), 50u);
}

TEST_F(EventRecorderTest, DestructorDeliversPendingEvents) {
  {
    EventRecorder recorder(client_, clock_, "ctl", "inst");
    recorder.Record(kJob, "Normal", "A", "Poll", "1");
    recorder.Record(kJob, "Normal", "B", "Poll", "2");
  }
  EXPECT_EQ(client_.calls().size(), 2u);
}

}  // namespace
}  // namespace slurmop::kube
