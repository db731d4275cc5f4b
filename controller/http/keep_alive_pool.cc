// File: controller/http/keep_alive_pool.cc
//
// KeepAliveConnectionPool and KeepAliveWritesTransport: see
// keep_alive_pool.h for the contract. A connection and its io_context are
// used by one thread at a time (taken out of the idle list under the lock,
// put back after the exchange), so only the idle lists need the lock.

#include "controller/http/keep_alive_pool.h"

#include <glog/logging.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/http/line_splitter.h"
#include "controller/http/one_shot_connection.h"
#include "controller/http/spare_connection_transport.h"
#include "controller/http/tls_material.h"

namespace slurmop::http {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kDefaultTimeout{30000};

// One connection with the io_context that runs its I/O.
struct Pooled {
  Pooled(asio::ssl::context& ssl, const TlsMaterial& tls, const Endpoint& endpoint)
      : connection(std::make_shared<OneShotConnection>(io, ssl, tls, endpoint,
                                                       /*keep_alive=*/true)) {}
  ~Pooled() {
    // Close first and let the handlers it cancels run, so that none is left
    // holding the connection when the io_context goes.
    connection->Close();
    try {
      io.restart();
      io.poll();
    } catch (...) {  // a handler cannot throw (error_code overloads); be sure
    }
    connection.reset();
  }

  asio::io_context io{1};
  std::shared_ptr<OneShotConnection> connection;
  Clock::time_point idle_since;
};

// Runs `io` on this thread until `done()`, then the handlers that became
// ready with it (cancelled timers). False if the io_context ran out of work
// first, or a handler threw.
bool Drive(asio::io_context& io, const std::function<bool()>& done) {
  try {
    io.restart();
    while (!done()) {
      if (io.run_one() == 0) return false;
    }
    io.poll();
    return true;
  } catch (const std::exception& e) {
    LOG(ERROR) << "keep-alive connection: " << e.what();
  } catch (...) {
    LOG(ERROR) << "keep-alive connection: unknown exception";
  }
  return false;
}

// After Drive() failed: closes the connection and runs the handlers that
// cancels, so that none outlives the caller's state it points at.
void Abandon(Pooled& pooled) {
  pooled.connection->Close();
  try {
    pooled.io.restart();
    pooled.io.poll();
  } catch (...) {  // see ~Pooled
  }
}

}  // namespace

class KeepAliveConnectionPool::Impl {
 public:
  Impl(TlsMaterial tls, const KeepAlivePoolOptions& options)
      : options_(options), tls_(std::move(tls)) {}

  // Without CA PEM the context trusts the process's shared system store.
  absl::Status Configure() { return ConfigureSslContext(tls_, ssl_); }

  absl::StatusOr<Response> Send(const Request& request);
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  const std::shared_ptr<StreamHandle>& handle);
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  std::unique_ptr<Pooled> TakeIdle(const std::string& key);
  void PutBack(std::unique_ptr<Pooled> pooled);
  absl::StatusOr<std::unique_ptr<Pooled>> Open(const Endpoint& endpoint,
                                               Clock::time_point deadline);
  static absl::StatusOr<Response> Exchange(Pooled& pooled, const Request& request,
                                           const SplitTarget& split, Clock::time_point deadline);

  const KeepAlivePoolOptions options_;
  const TlsMaterial tls_;
  asio::ssl::context ssl_{asio::ssl::context::tls_client};
  mutable std::mutex mu_;
  std::map<std::string, std::deque<std::unique_ptr<Pooled>>> idle_;  // newest last
  Stats stats_;
};

absl::StatusOr<Response> KeepAliveConnectionPool::Impl::Send(const Request& request) {
  absl::StatusOr<SplitTarget> split = SplitEndpointUrl(request.url);
  if (!split.ok()) return split.status();
  const auto timeout = request.timeout.count() > 0 ? request.timeout : kDefaultTimeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  if (std::unique_ptr<Pooled> idle = TakeIdle(split->endpoint.key); idle != nullptr) {
    absl::StatusOr<Response> answer = Exchange(*idle, request, *split, deadline);
    if (answer.ok() || answer.status().code() != absl::StatusCode::kUnavailable ||
        idle->connection->answered()) {
      if (answer.ok()) PutBack(std::move(idle));
      return answer;  // an answer came (even one refused, as over the body limit): not resent
    }
    // The server closed the idle connection under the request, without an
    // answer: once more on a new one (the request may be re-sent, see the header).
    VLOG(1) << "keep-alive connection to " << split->endpoint.key
            << " failed: " << answer.status().message() << "; sending again on a new one";
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.resent;
  }
  absl::StatusOr<std::unique_ptr<Pooled>> fresh = Open(split->endpoint, deadline);
  if (!fresh.ok()) return fresh.status();
  absl::StatusOr<Response> answer = Exchange(**fresh, request, *split, deadline);
  if (answer.ok()) PutBack(*std::move(fresh));
  return answer;
}

// Closes a connection once its StreamHandle is cancelled: checks every
// kCancelPoll on the connection's io_context, from Arm() until Disarm().
class CancelWatch {
 public:
  CancelWatch(Pooled& pooled, const StreamHandle* handle) : pooled_(pooled), handle_(handle) {}
  void Arm() {
    if (handle_ == nullptr) return;
    timer_.expires_after(kCancelPoll);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;  // disarmed
      if (!handle_->cancelled()) return Arm();
      pooled_.connection->Close();
    });
  }
  // Cancels the timer and runs its handler, so that none outlives this.
  void Disarm() {
    timer_.cancel();
    try {
      pooled_.io.restart();
      pooled_.io.poll();
    } catch (...) {  // see ~Pooled
    }
  }

 private:
  static constexpr std::chrono::milliseconds kCancelPoll{50};
  Pooled& pooled_;
  const StreamHandle* const handle_;
  asio::steady_timer timer_{pooled_.io};
};

namespace {

// Opens a stream's connection, its CancelWatch armed. Not OK: the connection
// is abandoned and the watch disarmed (cancelled, failed, or the I/O stopped).
absl::Status OpenForStream(Pooled& pooled, CancelWatch& watch, const StreamHandle* handle,
                           const std::string& endpoint_key, Clock::time_point deadline) {
  std::optional<absl::Status> opened;
  pooled.connection->AsyncOpen(deadline, [&opened](absl::Status s) { opened = std::move(s); });
  const bool drove = Drive(pooled.io, [&opened] { return opened.has_value(); });
  const bool cancelled = handle != nullptr && handle->cancelled();
  if (drove && opened->ok() && !cancelled) return absl::OkStatus();
  watch.Disarm();
  Abandon(pooled);
  if (cancelled) return TransportError(absl::StatusCode::kCancelled, "stream cancelled", false);
  if (!drove) {
    return TransportError(absl::StatusCode::kUnavailable,
                          absl::StrCat("connect to ", endpoint_key, ": the I/O stopped"), false);
  }
  return *opened;
}

// Sends the request on an open connection and hands its body's lines to
// on_line until the body ends, the callback or the line limit stops it, the
// handle is cancelled, or no byte comes for `idle`. Disarms the watch.
absl::StatusOr<Response> ReadStream(Pooled& pooled, CancelWatch& watch, const Request& request,
                                    const SplitTarget& split, std::chrono::milliseconds idle,
                                    const LineCallback& on_line, const StreamHandle* handle) {
  LineSplitter splitter(on_line, request.max_body_bytes);
  bool stopped = false;  // the caller or the line limit stopped the splitter
  std::optional<absl::StatusOr<Response>> answer;
  pooled.connection->AsyncStream(
      request, split, idle,
      [&splitter, &stopped](std::string_view bytes) {
        stopped = !splitter.Feed(bytes);
        return !stopped;
      },
      [&answer](absl::StatusOr<Response> outcome) { answer = std::move(outcome); });
  const bool finished = Drive(pooled.io, [&answer] { return answer.has_value(); });
  watch.Disarm();
  if (!finished) {
    Abandon(pooled);
    return TransportError(absl::StatusCode::kUnavailable,
                          absl::StrCat(split.endpoint.key, ": the I/O stopped"), true);
  }
  if (handle != nullptr && handle->cancelled()) {
    return TransportError(absl::StatusCode::kCancelled, "stream cancelled", true);
  }
  if (splitter.overflowed()) {
    return TransportError(absl::StatusCode::kUnavailable,
                          absl::StrCat("the answer's line is over the ", request.max_body_bytes,
                                       "-byte limit for this kind of remote"),
                          /*request_sent=*/true);
  }
  if (answer->ok() && (*answer)->status >= 200 && (*answer)->status < 300 && !stopped) {
    splitter.Finish();  // the server ended the body: its last, unterminated line
  }
  return *std::move(answer);
}

}  // namespace

absl::StatusOr<Response> KeepAliveConnectionPool::Impl::Stream(
    const Request& request, const LineCallback& on_line,
    const std::shared_ptr<StreamHandle>& handle) {
  absl::StatusOr<SplitTarget> split = SplitEndpointUrl(request.url);
  if (!split.ok()) return split.status();
  const auto idle = request.timeout.count() > 0 ? request.timeout : kDefaultTimeout;
  auto pooled = std::make_unique<Pooled>(ssl_, tls_, split->endpoint);
  CancelWatch watch(*pooled, handle.get());
  watch.Arm();
  if (absl::Status opened =
          OpenForStream(*pooled, watch, handle.get(), split->endpoint.key, Clock::now() + idle);
      !opened.ok()) {
    return opened;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.opened;
  }
  return ReadStream(*pooled, watch, request, *split, idle, on_line, handle.get());
}

std::unique_ptr<Pooled> KeepAliveConnectionPool::Impl::TakeIdle(const std::string& key) {
  std::vector<std::unique_ptr<Pooled>> dropped;  // closed outside the lock
  std::unique_ptr<Pooled> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    if (it == idle_.end()) return nullptr;
    const Clock::time_point now = Clock::now();
    while (!it->second.empty() && found == nullptr) {
      std::unique_ptr<Pooled> candidate = std::move(it->second.back());
      it->second.pop_back();
      if (now - candidate->idle_since <= options_.max_idle && candidate->connection->LooksOpen()) {
        found = std::move(candidate);
        ++stats_.reused;
      } else {
        dropped.push_back(std::move(candidate));
        ++stats_.idle_dropped;
      }
    }
  }
  return found;
}

void KeepAliveConnectionPool::Impl::PutBack(std::unique_ptr<Pooled> pooled) {
  if (!pooled->connection->IsOpen()) return;  // the answer closed it
  std::unique_ptr<Pooled> excess;
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = idle_[pooled->connection->endpoint().key];
  pooled->idle_since = Clock::now();
  list.push_back(std::move(pooled));
  if (list.size() > options_.max_idle_per_endpoint) {
    excess = std::move(list.front());
    list.pop_front();
    ++stats_.idle_dropped;
  }
}

absl::StatusOr<std::unique_ptr<Pooled>> KeepAliveConnectionPool::Impl::Open(
    const Endpoint& endpoint, Clock::time_point deadline) {
  auto pooled = std::make_unique<Pooled>(ssl_, tls_, endpoint);
  std::optional<absl::Status> opened;
  pooled->connection->AsyncOpen(deadline, [&opened](absl::Status s) { opened = std::move(s); });
  if (!Drive(pooled->io, [&opened] { return opened.has_value(); })) {
    Abandon(*pooled);
    return TransportError(absl::StatusCode::kUnavailable,
                          absl::StrCat("connect to ", endpoint.key, ": the I/O stopped"), false);
  }
  if (!opened->ok()) return *opened;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.opened;
  return pooled;
}

absl::StatusOr<Response> KeepAliveConnectionPool::Impl::Exchange(Pooled& pooled,
                                                                 const Request& request,
                                                                 const SplitTarget& split,
                                                                 Clock::time_point deadline) {
  std::optional<absl::StatusOr<Response>> answer;
  pooled.connection->AsyncExchange(
      request, split, deadline,
      [&answer](absl::StatusOr<Response> outcome) { answer = std::move(outcome); });
  if (!Drive(pooled.io, [&answer] { return answer.has_value(); })) {
    Abandon(pooled);
    return TransportError(absl::StatusCode::kUnavailable,
                          absl::StrCat(split.endpoint.key, ": the I/O stopped"), true);
  }
  return *std::move(answer);
}

absl::StatusOr<std::unique_ptr<KeepAliveConnectionPool>> KeepAliveConnectionPool::Create(
    const KeepAlivePoolOptions& options) {
  absl::StatusOr<TlsMaterial> tls = LoadTlsMaterial(options.tls);
  if (!tls.ok()) return tls.status();
  auto impl = std::make_unique<Impl>(*std::move(tls), options);
  if (absl::Status configured = impl->Configure(); !configured.ok()) return configured;
  return std::unique_ptr<KeepAliveConnectionPool>(new KeepAliveConnectionPool(std::move(impl)));
}

KeepAliveConnectionPool::KeepAliveConnectionPool(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
KeepAliveConnectionPool::~KeepAliveConnectionPool() = default;

absl::StatusOr<Response> KeepAliveConnectionPool::Send(const Request& request) {
  return impl_->Send(request);
}

absl::StatusOr<Response> KeepAliveConnectionPool::Stream(const Request& request,
                                                         const LineCallback& on_line,
                                                         std::shared_ptr<StreamHandle> handle) {
  return impl_->Stream(request, on_line, handle);
}

KeepAliveConnectionPool::Stats KeepAliveConnectionPool::stats() const { return impl_->stats(); }

KeepAliveWritesTransport::KeepAliveWritesTransport(std::unique_ptr<Transport> others,
                                                   std::unique_ptr<KeepAliveConnectionPool> writes,
                                                   bool streams_on_pool)
    : others_(std::move(others)), writes_(std::move(writes)), streams_on_pool_(streams_on_pool) {}

bool KeepAliveWritesTransport::GoesOnThePool(const Request& request) {
  return request.method != "GET" && request.method != "HEAD" &&
         !SpareConnectionTransport::MustNotBeResent(request);
}

absl::StatusOr<Response> KeepAliveWritesTransport::Send(const Request& request) {
  if (GoesOnThePool(request)) return writes_->Send(request);
  return others_->Send(request);
}

absl::StatusOr<Response> KeepAliveWritesTransport::Stream(const Request& request,
                                                          const LineCallback& on_line,
                                                          std::shared_ptr<StreamHandle> handle) {
  if (streams_on_pool_) return writes_->Stream(request, on_line, std::move(handle));
  return others_->Stream(request, on_line, std::move(handle));
}

absl::StatusOr<Response> KeepAliveWritesTransport::SendReading(const Request& request,
                                                               const BodyReader& read_body) {
  return others_->SendReading(request, read_body);
}

}  // namespace slurmop::http
