// File: controller/server/log_format.cc
//
// See log_format.h for the contract.

#include "controller/server/log_format.h"

#include <glog/logging.h>

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/common/log_context.h"

namespace slurmop::server {
namespace {

const char* SeverityName(int severity) {
  switch (severity) {
    case google::GLOG_INFO:
      return "INFO";
    case google::GLOG_WARNING:
      return "WARNING";
    case google::GLOG_ERROR:
      return "ERROR";
    default:
      return "FATAL";
  }
}

// Writes each message as one JSON line on stderr, whole (one write per line, under a lock).
class JsonSink : public google::LogSink {
 public:
  void send(google::LogSeverity severity, const char* /*full_filename*/, const char* base_filename,
            int line, const google::LogMessageTime& time, const char* message,
            size_t message_len) override {
    const std::string out = JsonLogLine(severity, base_filename, line, time.timestamp(),
                                        time.usec(), std::string_view(message, message_len));
    std::lock_guard<std::mutex> lock(mu_);
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
  }

 private:
  std::mutex mu_;
};

}  // namespace

std::string JsonLogLine(int severity, const char* base_filename, int line, std::time_t seconds,
                        int micros, std::string_view message) {
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  nlohmann::ordered_json j;
  j["time"] =
      absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                      utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, micros);
  j["severity"] = SeverityName(severity);
  j["message"] = std::string(message);
  j["caller"] = absl::StrCat(base_filename ? base_filename : "", ":", line);
  if (const LogFields* fields = CurrentLogFields()) {
    for (const auto& [k, v] : *fields) {
      if (!j.contains(k)) j[k] = v;
    }
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

absl::Status SetLogFormat(std::string_view format) {
  if (format == "text") return absl::OkStatus();
  if (format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format must be text or json, not \"", std::string(format), "\""));
  }
  static JsonSink* sink = new JsonSink();  // lives as long as the process logs
  // glog itself writes nothing: no stderr copy and no log files; the sink sees every message.
  FLAGS_logtostderr = false;
  FLAGS_alsologtostderr = false;
  FLAGS_stderrthreshold = google::NUM_SEVERITIES;
  for (int s = google::GLOG_INFO; s < google::NUM_SEVERITIES; ++s) {
    google::SetLogDestination(s, "");
  }
  google::AddLogSink(sink);
  return absl::OkStatus();
}

}  // namespace slurmop::server
