// File: controller/http/spare_connection_client.cc
//
// SpareConnectionClient: see spare_connection_client.h for the contract.
// All connection and pool state lives on the one I/O thread (handlers are
// posted to it), so it needs no lock; callers wait on a promise.

#include "controller/http/spare_connection_client.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <exception>
#include <future>
#include <map>
#include <thread>
#include <utility>

#include "controller/http/one_shot_connection.h"
#include "controller/http/tls_material.h"

namespace slurmop::http {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kDefaultTimeout{30000};
constexpr std::chrono::milliseconds kMaxSweepInterval{1000};
constexpr std::chrono::seconds kMaxOpenBackoff{30};

struct EndpointState {
  Endpoint endpoint;
  std::shared_ptr<OneShotConnection> spare;
  bool opening = false;
  Clock::time_point last_request;
  Clock::time_point next_open;  // no spare is opened before (backoff)
  int failures = 0;
};

}  // namespace

class SpareConnectionClient::Impl {
 public:
  Impl(TlsMaterial tls, const SpareConnectionOptions& options)
      : options_(options), tls_(std::move(tls)), work_(asio::make_work_guard(io_)), sweep_(io_) {}

  // Configures TLS and starts the I/O thread.
  absl::Status Start();
  ~Impl();

  absl::StatusOr<Response> Send(const Request& request);
  void Prepare(const std::string& url);
  Stats stats() const;

 private:
  using Promise = std::promise<absl::StatusOr<Response>>;

  // I/O thread only, from here on.
  void StartRequest(const Request& request, const SplitTarget& split, Clock::time_point deadline,
                    const std::shared_ptr<Promise>& promise);
  EndpointState& Touch(const Endpoint& endpoint);
  std::shared_ptr<OneShotConnection> TakeSpare(EndpointState& state);
  bool Usable(const OneShotConnection& spare, Clock::time_point now) const;
  void OpenSpare(const std::string& key);
  void SpareOpened(const std::string& key, const std::shared_ptr<OneShotConnection>& connection,
                   const absl::Status& status);
  void ScheduleSweep();
  void Sweep();
  void Shutdown();

  const SpareConnectionOptions options_;
  const TlsMaterial tls_;
  asio::ssl::context ssl_{asio::ssl::context::tls_client};
  asio::io_context io_;  // declared after ssl_: pending handlers hold connections using it
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer sweep_;
  std::map<std::string, EndpointState> endpoints_;
  std::thread thread_;

  std::atomic<int64_t> spares_opened_{0};
  std::atomic<int64_t> spares_used_{0};
  std::atomic<int64_t> spares_discarded_{0};
  std::atomic<int64_t> fresh_connections_{0};
};

absl::Status SpareConnectionClient::Impl::Start() {
  // Without CA PEM the context trusts the process's shared system store.
  if (absl::Status configured = ConfigureSslContext(tls_, ssl_); !configured.ok()) {
    return configured;
  }
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        LOG(ERROR) << "spare-connection I/O thread: " << e.what();
      } catch (...) {
        LOG(ERROR) << "spare-connection I/O thread: unknown exception";
      }
    }
  });
  asio::post(io_, [this] { ScheduleSweep(); });
  return absl::OkStatus();
}

SpareConnectionClient::Impl::~Impl() {
  if (thread_.joinable()) {
    asio::post(io_, [this] { Shutdown(); });
    thread_.join();
  }
}

void SpareConnectionClient::Impl::Shutdown() {
  sweep_.cancel();
  for (auto& [key, state] : endpoints_) {
    if (state.spare != nullptr) state.spare->Close();
  }
  endpoints_.clear();
  work_.reset();
  io_.stop();  // handlers still pending (spares being opened) are destroyed with io_
}

absl::StatusOr<Response> SpareConnectionClient::Impl::Send(const Request& request) {
  absl::StatusOr<SplitTarget> split = SplitEndpointUrl(request.url);
  if (!split.ok()) return split.status();
  const auto timeout = request.timeout.count() > 0 ? request.timeout : kDefaultTimeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  auto promise = std::make_shared<Promise>();
  std::future<absl::StatusOr<Response>> result = promise->get_future();
  // `request` and `split` outlive the handler: this thread waits below.
  asio::post(io_, [this, &request, &split, deadline, promise] {
    StartRequest(request, *split, deadline, promise);
  });
  try {
    return result.get();
  } catch (const std::exception& e) {  // broken promise: the client stopped
    return TransportError(absl::StatusCode::kUnavailable,
                          std::string("HTTP client stopped: ") + e.what(),
                          /*request_sent=*/true);
  }
}

void SpareConnectionClient::Impl::Prepare(const std::string& url) {
  absl::StatusOr<SplitTarget> split = SplitEndpointUrl(url);
  if (!split.ok()) return;
  asio::post(io_, [this, endpoint = split->endpoint] { OpenSpare(Touch(endpoint).endpoint.key); });
}

SpareConnectionClient::Stats SpareConnectionClient::Impl::stats() const {
  Stats stats;
  stats.spares_opened = spares_opened_.load();
  stats.spares_used = spares_used_.load();
  stats.spares_discarded = spares_discarded_.load();
  stats.fresh_connections = fresh_connections_.load();
  return stats;
}

void SpareConnectionClient::Impl::StartRequest(const Request& request, const SplitTarget& split,
                                               Clock::time_point deadline,
                                               const std::shared_ptr<Promise>& promise) {
  const std::string key = Touch(split.endpoint).endpoint.key;
  auto finished = [this, key, promise](absl::StatusOr<Response> outcome) {
    promise->set_value(std::move(outcome));
    OpenSpare(key);  // after the request, so that it does not compete with it
  };
  std::shared_ptr<OneShotConnection> connection = TakeSpare(endpoints_[key]);
  if (connection != nullptr) {
    ++spares_used_;
    return connection->AsyncExchange(request, split, deadline, std::move(finished));
  }
  ++fresh_connections_;
  connection = std::make_shared<OneShotConnection>(io_, ssl_, tls_, split.endpoint);
  // The request is copied: the caller's may be gone if the client stops.
  connection->AsyncOpen(deadline, [connection, request, split, deadline,
                                   finished = std::move(finished)](absl::Status opened) mutable {
    if (!opened.ok()) return finished(std::move(opened));
    connection->AsyncExchange(request, split, deadline, std::move(finished));
  });
}

EndpointState& SpareConnectionClient::Impl::Touch(const Endpoint& endpoint) {
  EndpointState& state = endpoints_[endpoint.key];
  state.endpoint = endpoint;
  state.last_request = Clock::now();
  return state;
}

bool SpareConnectionClient::Impl::Usable(const OneShotConnection& spare,
                                         Clock::time_point now) const {
  return now - spare.opened_at() <= options_.spare_max_age && spare.LooksOpen();
}

std::shared_ptr<OneShotConnection> SpareConnectionClient::Impl::TakeSpare(EndpointState& state) {
  std::shared_ptr<OneShotConnection> spare = std::move(state.spare);
  state.spare.reset();
  if (spare == nullptr) return nullptr;
  if (!Usable(*spare, Clock::now())) {
    spare->Close();
    ++spares_discarded_;
    return nullptr;
  }
  return spare;
}

void SpareConnectionClient::Impl::OpenSpare(const std::string& key) {
  auto it = endpoints_.find(key);
  if (!options_.keep_spares || it == endpoints_.end()) return;
  EndpointState& state = it->second;
  const Clock::time_point now = Clock::now();
  if (state.opening || state.spare != nullptr || now < state.next_open) return;
  state.opening = true;
  auto connection = std::make_shared<OneShotConnection>(io_, ssl_, tls_, state.endpoint);
  connection->AsyncOpen(now + options_.open_timeout, [this, key, connection](absl::Status opened) {
    SpareOpened(key, connection, opened);
  });
}

void SpareConnectionClient::Impl::SpareOpened(const std::string& key,
                                              const std::shared_ptr<OneShotConnection>& connection,
                                              const absl::Status& status) {
  auto it = endpoints_.find(key);
  if (it == endpoints_.end()) {  // the endpoint went idle meanwhile
    connection->Close();
    return;
  }
  EndpointState& state = it->second;
  state.opening = false;
  if (!status.ok()) {
    ++state.failures;
    const auto backoff = std::min<std::chrono::milliseconds>(
        kMaxOpenBackoff, std::chrono::milliseconds(250 << std::min(state.failures, 8)));
    state.next_open = Clock::now() + backoff;
    VLOG(1) << "cannot open a spare connection to " << key << ": " << status.message();
    return;
  }
  state.failures = 0;
  if (state.spare != nullptr) state.spare->Close();
  state.spare = connection;
  ++spares_opened_;
}

void SpareConnectionClient::Impl::ScheduleSweep() {
  const auto interval = std::clamp<std::chrono::milliseconds>(
      options_.spare_max_age / 2, std::chrono::milliseconds(10), kMaxSweepInterval);
  sweep_.expires_after(interval);
  sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: shutting down
    Sweep();
    ScheduleSweep();
  });
}

// Closes spares that aged or were closed by the peer, forgets endpoints idle
// for longer than keep_spares_for, and reopens spares for the others.
void SpareConnectionClient::Impl::Sweep() {
  const Clock::time_point now = Clock::now();
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    EndpointState& state = it->second;
    if (state.spare != nullptr && !Usable(*state.spare, now)) {
      state.spare->Close();
      state.spare.reset();
      ++spares_discarded_;
    }
    if (now - state.last_request > options_.keep_spares_for) {
      if (state.spare != nullptr) state.spare->Close();
      it = endpoints_.erase(it);
      continue;
    }
    OpenSpare(it->first);
    ++it;
  }
}

absl::StatusOr<std::unique_ptr<SpareConnectionClient>> SpareConnectionClient::Create(
    const SpareConnectionOptions& options) {
  absl::StatusOr<TlsMaterial> tls = LoadTlsMaterial(options.tls);
  if (!tls.ok()) return tls.status();
  auto impl = std::make_unique<Impl>(*std::move(tls), options);
  if (absl::Status started = impl->Start(); !started.ok()) return started;
  return std::unique_ptr<SpareConnectionClient>(new SpareConnectionClient(std::move(impl)));
}

SpareConnectionClient::SpareConnectionClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpareConnectionClient::~SpareConnectionClient() = default;

absl::StatusOr<Response> SpareConnectionClient::Send(const Request& request) {
  return impl_->Send(request);
}

void SpareConnectionClient::Prepare(const std::string& url) { impl_->Prepare(url); }

SpareConnectionClient::Stats SpareConnectionClient::stats() const { return impl_->stats(); }

}  // namespace slurmop::http
