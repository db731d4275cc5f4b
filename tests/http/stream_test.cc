// File: tests/http/stream_test.cc
//
// Transport::Stream() against an in-process HTTP server on 127.0.0.1, for
// both implementations: CpprestTransport, and KeepAliveConnectionPool
// (through KeepAliveWritesTransport with streams on the pool, as the
// Kubernetes client reads its watches). Lines across split chunks and
// coalesced, a Content-Length body, the line limit, cancellation before and
// after the header, the caller stopping, non-2xx answers, a dropped
// connection, the inactivity timeout, a refused connection.

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/keep_alive_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http/test_http_server.h"
#include "tests/testing/sanitizers.h"

namespace slurmop::http {
namespace {

using ::slurmop::testing::Connection;
using ::slurmop::testing::ReceivedRequest;
using ::slurmop::testing::TestHttpServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

enum class Kind { kCpprest, kKeepAlivePool };

// A LineCallback that appends every line to `lines` and goes on.
LineCallback Collect(std::vector<std::string>& lines) {
  return [&lines](const std::string& line) {
    lines.push_back(line);
    return true;
  };
}

class StreamTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    // cpprestsdk, stopped mid-body (cancelled, over the line limit, the
    // caller done, the connection dropped), leaves a pplx task chain of its
    // own unreachable: LeakSanitizer finds a 64-byte block allocated inside
    // libcpprest.so with a task<unsigned long> and an exception under it, in
    // up to half the runs of one such test alone (the same before these tests
    // moved here). An lsan.supp entry could only name the whole library. The
    // Kubernetes client streams on the keep-alive pool, whose variants run
    // under the sanitizers; the cpprest ones run in the plain build.
    if (slurmop::testing::kAddressSanitizer && GetParam() == Kind::kCpprest) {
      GTEST_SKIP() << "cpprestsdk's own leak under LeakSanitizer";
    }
  }

  std::unique_ptr<Transport> NewStreamingTransport() {
    absl::StatusOr<std::unique_ptr<CpprestTransport>> cpprest = CpprestTransport::Create({});
    EXPECT_TRUE(cpprest.ok()) << cpprest.status();
    if (GetParam() == Kind::kCpprest) return *std::move(cpprest);
    absl::StatusOr<std::unique_ptr<KeepAliveConnectionPool>> pool =
        KeepAliveConnectionPool::Create({});
    EXPECT_TRUE(pool.ok()) << pool.status();
    return std::make_unique<KeepAliveWritesTransport>(*std::move(cpprest), *std::move(pool),
                                                      /*streams_on_pool=*/true);
  }
};

// A streamed line over the limit ends the stream with an error naming it;
// the lines before it were delivered.
TEST_P(StreamTest, StreamRefusesALineOverTheLimit) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200);
    c.WriteChunk("{\"a\":1}\n");
    for (int i = 0; i < 64; ++i) {
      if (!c.WriteChunk(std::string(16 * 1024, 'y'))) return;
    }
    c.EndChunked();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  request.max_body_bytes = 64 * 1024;
  std::vector<std::string> lines;
  absl::StatusOr<Response> response = transport->Stream(request, Collect(lines), nullptr);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("line is over the 65536-byte limit"));
  EXPECT_THAT(lines, ElementsAre("{\"a\":1}"));
}

TEST_P(StreamTest, StreamDeliversLinesAcrossSplitChunksAndCoalescedLines) {
  absl::Notification first_line_seen;
  TestHttpServer server([&](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200, {{"Content-Type", "application/json"}});
    c.WriteChunk("{\"n\":1}\n{\"n\"");  // one line and the start of the next
    // Only continue once the client has handed out line 1 while line 2 is
    // still incomplete: the partial line must be held across chunks.
    first_line_seen.WaitForNotificationWithTimeout(absl::Seconds(10));
    c.WriteChunk(":2}\n");
    c.WriteChunk("{\"n\":3}\n{\"n\":4}\n");  // two lines in one chunk
    c.WriteChunk("{\"n\":");                 // a line split over three chunks
    c.WriteChunk("5");
    c.WriteChunk("}\n");
    c.EndChunked();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  std::vector<std::string> lines;
  absl::StatusOr<Response> response = transport->Stream(
      request,
      [&](const std::string& line) {
        lines.push_back(line);
        if (lines.size() == 1) first_line_seen.Notify();
        return true;
      },
      std::make_shared<StreamHandle>());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers["content-type"], "application/json");
  EXPECT_TRUE(response->body.empty());
  EXPECT_THAT(lines, ElementsAre("{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}", "{\"n\":5}"));
}

TEST_P(StreamTest, StreamOfContentLengthBodyWorksToo) {
  TestHttpServer server(
      [](const ReceivedRequest&, Connection& c) { c.WriteResponse(200, {}, "a\nb\nc"); });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/plain";
  std::vector<std::string> lines;
  absl::StatusOr<Response> response = transport->Stream(request, Collect(lines), nullptr);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(lines, ElementsAre("a", "b", "c"));
}

TEST_P(StreamTest, StreamCancelInterruptsABlockedRead) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200);
    c.WriteChunk("{\"n\":1}\n");
    c.WaitForPeerClose();  // hold the watch open, as an idle API server does
    c.CloseAfterResponse();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  request.timeout = std::chrono::minutes(5);
  auto handle = std::make_shared<StreamHandle>();
  absl::Notification got_line;
  absl::StatusOr<Response> result;
  std::thread watcher([&] {
    result = transport->Stream(
        request,
        [&](const std::string&) {
          got_line.Notify();
          return true;
        },
        handle);
  });
  ASSERT_TRUE(got_line.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const auto cancelled_at = std::chrono::steady_clock::now();
  handle->Cancel();
  watcher.join();
  const auto elapsed = std::chrono::steady_clock::now() - cancelled_at;
  EXPECT_LT(elapsed, std::chrono::seconds(3));  // not the 5-minute timeout
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
}

TEST_P(StreamTest, StreamCancelBeforeResponseHeaders) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.WaitForPeerClose();  // never answers
    c.CloseAfterResponse();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  auto handle = std::make_shared<StreamHandle>();
  absl::StatusOr<Response> result;
  std::thread watcher([&] {
    result = transport->Stream(
        request, [](const std::string&) { return true; }, handle);
  });
  while (server.requests().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  handle->Cancel();
  watcher.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
}

TEST_P(StreamTest, StreamStopsWhenCallbackReturnsFalse) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200);
    c.WriteChunk("a\nb\nc\n");
    c.WaitForPeerClose();
    c.CloseAfterResponse();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  std::vector<std::string> lines;
  absl::StatusOr<Response> response = transport->Stream(
      request,
      [&](const std::string& line) {
        lines.push_back(line);
        return false;
      },
      std::make_shared<StreamHandle>());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(lines, ElementsAre("a"));
}

TEST_P(StreamTest, StreamReturnsNon2xxResponseWhole) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.WriteResponse(410, {{"Content-Type", "application/json"}},
                    R"({"kind":"Status","code":410,"reason":"Expired"})");
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  int calls = 0;
  absl::StatusOr<Response> response = transport->Stream(
      request,
      [&](const std::string&) {
        ++calls;
        return true;
      },
      nullptr);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 410);
  EXPECT_THAT(response->body, HasSubstr("Expired"));
  EXPECT_EQ(calls, 0);
}

TEST_P(StreamTest, StreamDroppedMidBodyIsUnavailable) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200);
    c.WriteChunk("{\"n\":1}\n");
    c.CloseAfterResponse();  // close without the terminating chunk
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  std::vector<std::string> lines;
  absl::StatusOr<Response> response = transport->Stream(request, Collect(lines), nullptr);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_TRUE(MayHaveBeenDelivered(response.status()));
  EXPECT_THAT(lines, ElementsAre("{\"n\":1}"));
}

TEST_P(StreamTest, StreamInactivityTimeoutIsDeadlineExceeded) {
  TestHttpServer server([](const ReceivedRequest&, Connection& c) {
    c.StartChunked(200);
    c.WriteChunk("{\"n\":1}\n");
    c.WaitForPeerClose();
    c.CloseAfterResponse();
  });
  auto transport = NewStreamingTransport();
  Request request;
  request.url = server.url() + "/watch";
  request.timeout = std::chrono::milliseconds(400);
  absl::StatusOr<Response> response = transport->Stream(
      request, [](const std::string&) { return true; }, nullptr);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
}

TEST_P(StreamTest, ConnectionRefusedIsUnavailableAndNotDelivered) {
  auto transport = NewStreamingTransport();
  Request request;
  request.url = "http://127.0.0.1:" + std::to_string(testing::UnusedPort()) + "/watch";
  absl::StatusOr<Response> streamed = transport->Stream(
      request, [](const std::string&) { return true; }, nullptr);
  EXPECT_EQ(streamed.status().code(), absl::StatusCode::kUnavailable) << streamed.status();
  EXPECT_FALSE(MayHaveBeenDelivered(streamed.status()));
}

INSTANTIATE_TEST_SUITE_P(Transports, StreamTest,
                         ::testing::Values(Kind::kCpprest, Kind::kKeepAlivePool),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kCpprest ? "Cpprest" : "KeepAlivePool";
                         });

}  // namespace
}  // namespace slurmop::http
