// File: tests/kube/informer_test.cc
//
// Informer against a scripted FakeClient: initial list, watch events,
// re-watch after a normal end, relist after 410 (ERROR event and HTTP),
// bookmarks, pagination, backoff and Retry-After, prompt Stop().

#include "controller/kube/informer.h"

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_client.h"

namespace slurmop::kube {
namespace {

using ::slurmop::kube::testing::FakeClient;
using ::slurmop::kube::testing::WaitUntil;
using ::slurmop::kube::testing::WatchScript;
using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const ResourceType kJobs{"hpc.slurmoperator.dev", "v1alpha1", "slurmjobs", "SlurmJob", true};

nlohmann::json Job(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
          {"kind", "SlurmJob"},
          {"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
}

nlohmann::json JobList(std::vector<nlohmann::json> items, const std::string& rv,
                       const std::string& continue_token = "") {
  nlohmann::json list = {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                         {"kind", "SlurmJobList"},
                         {"metadata", {{"resourceVersion", rv}}},
                         {"items", std::move(items)}};
  if (!continue_token.empty()) list["metadata"]["continue"] = continue_token;
  return list;
}

WatchEvent Event(const std::string& type, nlohmann::json object) {
  return WatchEvent{type, std::move(object)};
}

WatchEvent Bookmark(const std::string& rv) {
  return Event(kBookmark, {{"kind", "SlurmJob"},
                           {"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                           {"metadata", {{"resourceVersion", rv}}}});
}

WatchEvent TooOld() {
  return Event(kError, {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", nlohmann::json::object()},
                        {"status", "Failure"},
                        {"message", "too old resource version: 1 (3171407)"},
                        {"reason", "Expired"},
                        {"code", 410}});
}

// Every test runs with the cache holding parsed objects and with the compact
// (CBOR) cache: the behaviour must be the same.
class InformerTest : public ::testing::TestWithParam<bool> {
 protected:
  InformerOptions Options() {
    InformerOptions opts;
    opts.random = [] { return 0.0; };
    opts.compact_cache = GetParam();
    opts.sleep_for_testing = [this](Duration d) {
      std::lock_guard<std::mutex> lock(mu_);
      sleeps_.push_back(d);
    };
    return opts;
  }

  std::unique_ptr<Informer> StartInformer(InformerOptions opts) {
    auto informer = std::make_unique<Informer>(
        client_, kJobs, "ns",
        [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
          std::lock_guard<std::mutex> lock(mu_);
          events_.emplace_back(type, (*obj)["metadata"]["name"].get<std::string>());
        },
        clock_, std::move(opts));
    informer->Start();
    return informer;
  }
  std::unique_ptr<Informer> StartInformer() { return StartInformer(Options()); }

  // Waits until the informer sits in a watch with nothing left to do.
  void WaitForIdleWatch() {
    ASSERT_TRUE(WaitUntil([this] { return client_.idle_watches() == 1; }));
  }

  std::vector<std::pair<std::string, std::string>> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<Duration> sleeps() {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }

  FakeClient client_;
  FakeClock clock_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> events_;
  std::vector<Duration> sleeps_;
};

TEST_P(InformerTest, InitialListDeliversAddsThenWatchesFromListVersion) {
  client_.AddList(JobList({Job("a", "3"), Job("b", "7")}, "10"));
  auto informer = StartInformer();
  WaitForIdleWatch();

  EXPECT_TRUE(informer->HasSynced());
  EXPECT_THAT(events(), UnorderedElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b")));
  ASSERT_NE(informer->Get("ns", "a"), nullptr);
  EXPECT_EQ((*informer->Get("ns", "a"))["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(informer->Get("ns", "missing"), nullptr);
  EXPECT_EQ(informer->List().size(), 2u);
  EXPECT_EQ(informer->LastSyncResourceVersion(), "10");

  std::vector<ListOptions> lists = client_.list_calls();
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].resource_version, "0");
  EXPECT_EQ(lists[0].limit, 500);
  std::vector<WatchOptions> watches = client_.watch_calls();
  ASSERT_EQ(watches.size(), 1u);
  EXPECT_EQ(watches[0].resource_version, "10");
  EXPECT_TRUE(watches[0].allow_bookmarks);
  EXPECT_GE(watches[0].timeout_seconds, 300);
  EXPECT_LT(watches[0].timeout_seconds, 600);
}

TEST_P(InformerTest, WatchTimeoutIsRandomBetweenFiveAndTenMinutes) {
  client_.AddList(JobList({}, "1"));
  InformerOptions opts = Options();
  opts.random = [] { return 0.999; };
  auto informer = StartInformer(std::move(opts));
  WaitForIdleWatch();
  EXPECT_EQ(client_.watch_calls()[0].timeout_seconds, 599);
}

TEST_P(InformerTest, WatchEventsUpdateCacheAndReachHandler) {
  client_.AddList(JobList({Job("a", "3")}, "10"));
  client_.AddWatch(WatchScript{{Event(kAdded, Job("b", "11")), Event(kModified, Job("a", "12")),
                                Event(kDeleted, Job("b", "13"))}});
  auto informer = StartInformer();
  WaitForIdleWatch();

  EXPECT_THAT(events(), ElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b"), Pair("MODIFIED", "a"),
                                    Pair("DELETED", "b")));
  EXPECT_EQ(informer->Get("ns", "b"), nullptr);
  EXPECT_EQ((*informer->Get("ns", "a"))["metadata"]["resourceVersion"], "12");
  EXPECT_EQ(informer->LastSyncResourceVersion(), "13");
}

// The reconcile an event queues reads the object the handler got, not a
// decoded copy; with compact_cache an object is packed once recent_parsed
// later events were delivered (and only then does Get() decode a copy).
TEST_P(InformerTest, TheLatestEventsObjectsStayParsedAndOlderOnesArePacked) {
  client_.AddList(JobList({}, "10"));
  client_.AddWatch(WatchScript{{Event(kAdded, Job("a", "11")), Event(kAdded, Job("b", "12")),
                                Event(kAdded, Job("c", "13")), Event(kModified, Job("b", "14"))}});
  InformerOptions opts = Options();
  opts.recent_parsed = 2;
  std::map<std::string, std::shared_ptr<const nlohmann::json>> delivered;
  auto informer = std::make_unique<Informer>(
      client_, kJobs, "ns",
      [&](const std::string&, const std::shared_ptr<const nlohmann::json>& obj) {
        std::lock_guard<std::mutex> lock(mu_);
        delivered[(*obj)["metadata"]["name"].get<std::string>()] = obj;
      },
      clock_, std::move(opts));
  informer->Start();
  WaitForIdleWatch();

  std::lock_guard<std::mutex> lock(mu_);
  // The last two events: c, then b again.
  EXPECT_EQ(informer->Get("ns", "b"), delivered["b"]);
  EXPECT_EQ(informer->Get("ns", "c"), delivered["c"]);
  EXPECT_EQ((*informer->Get("ns", "b"))["metadata"]["resourceVersion"], "14");
  std::shared_ptr<const nlohmann::json> a = informer->Get("ns", "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, *delivered["a"]);
  if (GetParam()) {
    EXPECT_NE(a, delivered["a"]) << "a is three events old: packed, decoded anew";
  } else {
    EXPECT_EQ(a, delivered["a"]) << "a parsed cache shares its objects";
  }
}

TEST_P(InformerTest, NormalWatchEndReWatchesFromLastVersionWithoutRelist) {
  client_.AddList(JobList({}, "10"));
  client_.AddWatch(WatchScript{{Event(kAdded, Job("a", "11"))}});
  client_.AddWatch(WatchScript{{Event(kModified, Job("a", "15"))}});
  auto informer = StartInformer();
  WaitForIdleWatch();

  EXPECT_EQ(client_.list_calls().size(), 1u);
  std::vector<WatchOptions> watches = client_.watch_calls();
  ASSERT_EQ(watches.size(), 3u);
  EXPECT_EQ(watches[0].resource_version, "10");
  EXPECT_EQ(watches[1].resource_version, "11");
  EXPECT_EQ(watches[2].resource_version, "15");
  EXPECT_TRUE(sleeps().empty()) << "a normal watch end is no failure";
}

TEST_P(InformerTest, BookmarkAdvancesResourceVersionSilently) {
  client_.AddList(JobList({Job("a", "3")}, "10"));
  client_.AddWatch(WatchScript{{Bookmark("20")}});
  auto informer = StartInformer();
  WaitForIdleWatch();

  EXPECT_THAT(events(), ElementsAre(Pair("ADDED", "a")));
  EXPECT_EQ(informer->LastSyncResourceVersion(), "20");
  EXPECT_EQ(client_.watch_calls().back().resource_version, "20");
  EXPECT_EQ(informer->List().size(), 1u);
}

TEST_P(InformerTest, ErrorEvent410RelistsAndDeletesVanishedKeys) {
  client_.AddList(JobList({Job("a", "3"), Job("b", "4")}, "10"));
  client_.AddWatch(WatchScript{{TooOld()}});
  client_.AddList(JobList({Job("a", "3"), Job("c", "25")}, "30"));
  auto informer = StartInformer();
  WaitForIdleWatch();

  EXPECT_THAT(events(), UnorderedElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b"),
                                             Pair("ADDED", "c"), Pair("DELETED", "b")));
  std::vector<ListOptions> lists = client_.list_calls();
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[1].resource_version, "") << "relist after 410 is a quorum read";
  EXPECT_EQ(client_.watch_calls().back().resource_version, "30");
  EXPECT_EQ(informer->Get("ns", "b"), nullptr);
  EXPECT_NE(informer->Get("ns", "c"), nullptr);
  EXPECT_TRUE(sleeps().empty()) << "relist after 410 is immediate";
}

TEST_P(InformerTest, RelistDeliversModifiedOnlyForChangedObjects) {
  client_.AddList(JobList({Job("a", "3"), Job("b", "4")}, "10"));
  client_.AddWatch(WatchScript{{TooOld()}});
  client_.AddList(JobList({Job("a", "3"), Job("b", "9")}, "30"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  EXPECT_THAT(events(),
              UnorderedElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b"), Pair("MODIFIED", "b")));
}

TEST_P(InformerTest, HttpGoneOnWatchRelists) {
  client_.AddList(JobList({Job("a", "3")}, "10"));
  client_.AddWatch(WatchScript{{},
                               StatusFromResponse(http::Response{
                                   410, {}, R"({"kind":"Status","reason":"Gone","code":410})"})});
  client_.AddList(JobList({}, "40"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  EXPECT_EQ(client_.list_calls().size(), 2u);
  EXPECT_THAT(events(), ElementsAre(Pair("ADDED", "a"), Pair("DELETED", "a")));
}

TEST_P(InformerTest, PaginatedListFollowsContinueWithoutResourceVersion) {
  client_.AddList(JobList({Job("a", "1")}, "5", "token-1"));
  client_.AddList(JobList({Job("b", "2")}, "5"));
  InformerOptions opts = Options();
  opts.page_size = 1;
  auto informer = StartInformer(std::move(opts));
  WaitForIdleWatch();

  std::vector<ListOptions> lists = client_.list_calls();
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].resource_version, "0");
  EXPECT_EQ(lists[0].limit, 1);
  EXPECT_EQ(lists[0].continue_token, "");
  EXPECT_EQ(lists[1].resource_version, "");
  EXPECT_EQ(lists[1].continue_token, "token-1");
  EXPECT_EQ(lists[1].limit, 1);
  EXPECT_THAT(events(), UnorderedElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b")));
  EXPECT_EQ(client_.watch_calls()[0].resource_version, "5");
}

TEST_P(InformerTest, ExpiredContinueTokenRelistsFromScratch) {
  client_.AddList(JobList({Job("a", "1")}, "5", "token-1"));
  client_.AddList(StatusFromResponse(
      http::Response{410, {}, R"({"kind":"Status","reason":"Expired","code":410})"}));
  client_.AddList(JobList({Job("a", "1"), Job("b", "2")}, "8"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  std::vector<ListOptions> lists = client_.list_calls();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[2].resource_version, "");
  EXPECT_EQ(lists[2].continue_token, "");
  EXPECT_THAT(events(), UnorderedElementsAre(Pair("ADDED", "a"), Pair("ADDED", "b")));
}

TEST_P(InformerTest, ListItemsWithoutKindGetIt) {
  nlohmann::json bare = {
      {"metadata", {{"namespace", "ns"}, {"name", "a"}, {"resourceVersion", "1"}}}};
  client_.AddList(JobList({bare}, "2"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  auto a = informer->Get("ns", "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["kind"], "SlurmJob");
  EXPECT_EQ((*a)["apiVersion"], "hpc.slurmoperator.dev/v1alpha1");
}

TEST_P(InformerTest, FailuresBackOffExponentiallyAndWatchFailureDoesNotRelist) {
  client_.AddList(absl::UnavailableError("connection refused"));
  client_.AddList(absl::UnavailableError("connection refused"));
  client_.AddList(JobList({}, "10"));
  client_.AddWatch(WatchScript{{Event(kAdded, Job("a", "11"))}, absl::UnavailableError("reset")});
  auto informer = StartInformer();
  WaitForIdleWatch();

  // random() == 0: no jitter, so the steps are exact.
  EXPECT_THAT(sleeps(), ElementsAre(std::chrono::milliseconds(800), std::chrono::milliseconds(1600),
                                    std::chrono::milliseconds(3200)));
  EXPECT_EQ(client_.list_calls().size(), 3u);
  EXPECT_EQ(client_.watch_calls().back().resource_version, "11");
}

TEST_P(InformerTest, BackoffCapsAtThirtySecondsAndResetsAfterHealthyStretch) {
  InformerOptions opts = Options();
  for (int i = 0; i < 7; ++i) client_.AddList(absl::UnavailableError("down"));
  client_.AddList(JobList({}, "10"));
  auto informer = StartInformer(std::move(opts));
  WaitForIdleWatch();
  std::vector<Duration> waits = sleeps();
  ASSERT_EQ(waits.size(), 7u);
  EXPECT_EQ(waits[5], std::chrono::seconds(25) + std::chrono::milliseconds(600));
  EXPECT_EQ(waits[6], std::chrono::seconds(30));
  informer->Stop();

  // Directly: more than 2 min after the last backoff the step resets.
  ExponentialBackoff backoff(clock_, BackoffOptions{}, [] { return 0.0; });
  for (int i = 0; i < 6; ++i) backoff.Next();
  clock_.Advance(std::chrono::minutes(2) + std::chrono::seconds(1));
  EXPECT_EQ(backoff.Next(), std::chrono::milliseconds(800));
}

TEST_P(InformerTest, RetryAfterOf429IsHonoured) {
  client_.AddList(StatusFromResponse(http::Response{
      429, {{"retry-after", "7"}}, R"({"kind":"Status","reason":"TooManyRequests","code":429})"}));
  client_.AddList(JobList({}, "10"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  EXPECT_THAT(sleeps(), ElementsAre(std::chrono::seconds(7)));
}

TEST_P(InformerTest, WatchClosingAtOnceWithoutEventsBacksOff) {
  client_.AddList(JobList({}, "10"));
  client_.AddWatch(WatchScript{});
  auto informer = StartInformer();
  WaitForIdleWatch();
  EXPECT_EQ(sleeps().size(), 1u);
  EXPECT_EQ(client_.list_calls().size(), 1u);
}

TEST_P(InformerTest, StopCancelsAnInFlightWatchPromptly) {
  client_.AddList(JobList({}, "10"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  const auto start = std::chrono::steady_clock::now();
  informer->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  informer->Stop();  // idempotent
}

TEST_P(InformerTest, StopInterruptsARealBackoffWait) {
  client_.AddList(absl::UnavailableError("down"));
  InformerOptions opts;
  opts.backoff.initial = std::chrono::hours(1);  // real wait, interrupted by Stop()
  auto informer = StartInformer(std::move(opts));
  ASSERT_TRUE(WaitUntil([this] { return client_.list_calls().size() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  informer->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(informer->HasSynced());
}

TEST_P(InformerTest, HandlerMayReadTheCache) {
  client_.AddList(JobList({Job("a", "3")}, "10"));
  Informer* self = nullptr;
  bool seen_in_cache = false;
  Informer informer(
      client_, kJobs, "ns",
      [&](const std::string&, const std::shared_ptr<const nlohmann::json>& obj) {
        std::shared_ptr<const nlohmann::json> cached = self->Get("ns", "a");
        seen_in_cache = cached != nullptr && *cached == *obj;
      },
      clock_, Options());
  self = &informer;
  informer.Start();
  WaitForIdleWatch();
  EXPECT_TRUE(seen_in_cache);
}

TEST_P(InformerTest, CachedObjectsComeBackWhole) {
  nlohmann::json job = Job("a", "3");
  job["spec"] = {{"script", "#!/bin/bash\necho \u00e9t\u00e9\n"},
                 {"cpus", 4},
                 {"big", int64_t{9007199254740993}},
                 {"ratio", 0.25},
                 {"suspend", false},
                 {"partition", nullptr},
                 {"environment", {{{"name", "A"}, {"value", ""}}}},
                 {"empty", nlohmann::json::object()}};
  job["status"] = {{"jobId", 12}, {"conditions", nlohmann::json::array()}};
  client_.AddList(JobList({job}, "10"));
  auto informer = StartInformer();
  WaitForIdleWatch();
  std::shared_ptr<const nlohmann::json> cached = informer->Get("ns", "a");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ((*cached)["spec"], job["spec"]);
  EXPECT_EQ((*cached)["status"], job["status"]);
  EXPECT_EQ((*cached)["spec"]["big"].get<int64_t>(), 9007199254740993);
  ASSERT_EQ(informer->List().size(), 1u);
  EXPECT_EQ(*informer->List()[0], *cached);
}

INSTANTIATE_TEST_SUITE_P(Cache, InformerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Compact" : "Parsed";
                         });

}  // namespace
}  // namespace slurmop::kube
