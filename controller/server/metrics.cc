// File: controller/server/metrics.cc

#include "controller/server/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cpprest/http_listener.h"

namespace slurmop::server {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const Labels& labels, const std::string& extra_key = "",
                      const std::string& extra_value = "") {
  std::vector<std::string> parts;
  for (const auto& [k, v] : labels) parts.push_back(k + "=\"" + Escape(v) + "\"");
  if (!extra_key.empty()) parts.push_back(extra_key + "=\"" + extra_value + "\"");
  if (parts.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += ",";
    out += parts[i];
  }
  return out + "}";
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest text that reads back as the same double.
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

const char* TypeName(Metrics::Type t) {
  switch (t) {
    case Metrics::Type::kCounter:
      return "counter";
    case Metrics::Type::kGauge:
      return "gauge";
    case Metrics::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void Metrics::Declare(const std::string& name, Type type, const std::string& help,
                      std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  if (type == Type::kHistogram) f.buckets = std::move(buckets);
}

Metrics::Family& Metrics::FamilyLocked(const std::string& name, Type type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    if (type == Type::kHistogram) it->second.buckets = LatencyBuckets();
  }
  return it->second;
}

template <typename Series>
bool Metrics::RoomLocked(const std::string& name, const Series& series, const Labels& labels) {
  if (series.size() < kMaxSeriesPerFamily || series.count(labels) > 0) return true;
  Family& dropped = FamilyLocked(kSeriesDroppedTotal, Type::kCounter);
  if (dropped.help.empty()) {
    dropped.help =
        "Updates dropped because their metric already had its most series (label sets), by "
        "metric.";
  }
  dropped.values[{{"metric", name}}] += 1;
  return false;
}

void Metrics::Add(const std::string& name, const Labels& labels, double delta) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyLocked(name, Type::kCounter);
  if (RoomLocked(name, f.values, labels)) f.values[labels] += delta;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyLocked(name, Type::kGauge);
  if (RoomLocked(name, f.values, labels)) f.values[labels] = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyLocked(name, Type::kHistogram);
  if (!RoomLocked(name, f.histograms, labels)) return;
  Histogram& h = f.histograms[labels];
  if (h.counts.size() != f.buckets.size()) h.counts.assign(f.buckets.size(), 0);
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) {
      ++h.counts[i];
      break;
    }
  }
  ++h.count;
  h.sum += value;
}

void Metrics::SetCallback(const std::string& name,
                          std::function<std::vector<std::pair<Labels, double>>()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  FamilyLocked(name, Type::kGauge).callback = std::move(callback);
}

double Metrics::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto v = f->second.values.find(labels);
  return v == f->second.values.end() ? 0 : v->second;
}

std::string Metrics::Render() const {
  // Callbacks run outside the lock: they may read other locked state.
  std::map<std::string, std::function<std::vector<std::pair<Labels, double>>()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, f] : families_) {
      if (f.callback) callbacks[name] = f.callback;
    }
  }
  std::map<std::string, std::vector<std::pair<Labels, double>>> computed;
  for (const auto& [name, cb] : callbacks) computed[name] = cb();

  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : families_) {
    out << "# HELP " << name << " " << (f.help.empty() ? name : f.help) << "\n";
    out << "# TYPE " << name << " " << TypeName(f.type) << "\n";
    if (f.type == Type::kHistogram) {
      for (const auto& [labels, h] : f.histograms) {
        uint64_t cumulative = 0;
        for (size_t i = 0; i < f.buckets.size(); ++i) {
          cumulative += i < h.counts.size() ? h.counts[i] : 0;
          out << name << "_bucket" << LabelText(labels, "le", Number(f.buckets[i])) << " "
              << cumulative << "\n";
        }
        out << name << "_bucket" << LabelText(labels, "le", "+Inf") << " " << h.count << "\n";
        out << name << "_sum" << LabelText(labels) << " " << Number(h.sum) << "\n";
        out << name << "_count" << LabelText(labels) << " " << h.count << "\n";
      }
      continue;
    }
    for (const auto& [labels, v] : f.values) {
      out << name << LabelText(labels) << " " << Number(v) << "\n";
    }
    if (auto c = computed.find(name); c != computed.end()) {
      for (const auto& [labels, v] : c->second) {
        out << name << LabelText(labels) << " " << Number(v) << "\n";
      }
    }
  }
  return out.str();
}

Metrics& GlobalMetrics() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

std::vector<double> LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> JobDurationBuckets() {
  return {1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800};
}

class MetricsServer::Impl {
 public:
  explicit Impl(const Metrics& metrics) : metrics_(metrics) {}
  absl::Status Start(const std::string& address, int port) {
    try {
      listener_ = std::make_unique<web::http::experimental::listener::http_listener>(
          web::uri(absl::StrCat("http://", address, ":", port, "/")));
      listener_->support(web::http::methods::GET, [this](web::http::http_request request) {
        if (request.relative_uri().path() != "/metrics") {
          request.reply(web::http::status_codes::NotFound, "not found\n");
          return;
        }
        web::http::http_response response(web::http::status_codes::OK);
        response.set_body(metrics_.Render(), "text/plain; version=0.0.4; charset=utf-8");
        request.reply(response);
      });
      listener_->open().wait();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      listener_.reset();
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", address, ":", port, ": ", e.what()));
    }
  }
  void Stop() {
    if (!listener_) return;
    try {
      listener_->close().wait();
    } catch (...) {
    }
    listener_.reset();
  }

 private:
  const Metrics& metrics_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

MetricsServer::MetricsServer(const Metrics& metrics) : impl_(std::make_unique<Impl>(metrics)) {}
MetricsServer::~MetricsServer() { Stop(); }
absl::Status MetricsServer::Start(const std::string& address, int port) {
  return impl_->Start(address, port);
}
void MetricsServer::Stop() { impl_->Stop(); }

}  // namespace slurmop::server
