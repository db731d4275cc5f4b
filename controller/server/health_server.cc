// File: controller/server/health_server.cc

#include "controller/server/health_server.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace slurmop::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// grpc.health.v1.Health over a map of service name -> serving.
class HealthService final : public grpc::health::v1::Health::Service {
 public:
  HealthService() {
    statuses_[""] = HealthCheckResponse::SERVING;
    statuses_[kLivenessService] = HealthCheckResponse::SERVING;
    statuses_[kReadinessService] = HealthCheckResponse::NOT_SERVING;
  }

  void Set(const std::string& service, bool serving) {
    std::lock_guard<std::mutex> lock(mu_);
    if (frozen_) return;
    auto want = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
    if (statuses_[service] != want) {
      statuses_[service] = want;
      ++version_;
      changed_.notify_all();
    }
  }

  void ShutdownAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, status] : statuses_) status = HealthCheckResponse::NOT_SERVING;
    frozen_ = true;
    ++version_;
    changed_.notify_all();
  }

  grpc::Status Check(grpc::ServerContext*, const HealthCheckRequest* request,
                     HealthCheckResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = statuses_.find(request->service());
    if (it == statuses_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
    }
    response->set_status(it->second);
    return grpc::Status::OK;
  }

  // Sends the current status at once, then every change, until the client
  // goes away or the server shuts down.
  grpc::Status Watch(grpc::ServerContext* context, const HealthCheckRequest* request,
                     grpc::ServerWriter<HealthCheckResponse>* writer) override {
    std::unique_lock<std::mutex> lock(mu_);
    int64_t seen = -1;
    HealthCheckResponse::ServingStatus last = HealthCheckResponse::UNKNOWN;
    while (!context->IsCancelled()) {
      if (seen != version_) {
        seen = version_;
        auto it = statuses_.find(request->service());
        auto now = it == statuses_.end() ? HealthCheckResponse::SERVICE_UNKNOWN : it->second;
        if (now != last || last == HealthCheckResponse::UNKNOWN) {
          last = now;
          HealthCheckResponse response;
          response.set_status(now);
          lock.unlock();
          bool ok = writer->Write(response);
          lock.lock();
          if (!ok) break;
        }
        if (frozen_) break;
      }
      changed_.wait_for(lock, std::chrono::milliseconds(500));
    }
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, HealthCheckResponse::ServingStatus> statuses_;
  int64_t version_ = 0;
  bool frozen_ = false;
};

HealthServer::HealthServer() = default;

HealthServer::~HealthServer() { Shutdown(); }

absl::Status HealthServer::Start(const std::string& address, int port) {
  service_ = std::make_unique<HealthService>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port), grpc::InsecureServerCredentials(),
                           &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen for gRPC health on ", address, ":", port));
  }
  return absl::OkStatus();
}

void HealthServer::SetLive(bool live) {
  if (service_) service_->Set(kLivenessService, live);
}

void HealthServer::SetReady(bool ready) {
  if (service_) service_->Set(kReadinessService, ready);
}

void HealthServer::Shutdown() {
  if (!server_) return;
  service_->ShutdownAll();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
}

}  // namespace slurmop::server
