// File: controller/server/log_format.h
//
// --log-format: "text" (glog's own lines on stderr, the default) or "json": one JSON object per
// line on stderr, for log pipelines that expect newline-delimited JSON:
//
//   {"time":"2026-12-01T21:40:00.123456Z","severity":"INFO","message":"...",
//    "caller":"executor.cc:120", "namespace":"ns","name":"job","uid":"...","run":"1",
//    "jobId":"1001","cluster":"local","reconcileID":"...","controller":"slurmjob"}
//
// The contextual fields are those of the logging thread's ScopedLogContext
// (common/log_context.h), present only where they apply. Invalid UTF-8 in a message is replaced,
// never passed through, so every line parses.

#ifndef SLURMOP_CONTROLLER_SERVER_LOG_FORMAT_H_
#define SLURMOP_CONTROLLER_SERVER_LOG_FORMAT_H_

#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace slurmop::server {

// Applies the format; call after google::InitGoogleLogging. InvalidArgument for an unknown name.
absl::Status SetLogFormat(std::string_view format);

// One JSON log line (with its '\n') from a glog message; fields from CurrentLogFields(). For the
// sink and its tests.
std::string JsonLogLine(int severity, const char* base_filename, int line, std::time_t seconds,
                        int micros, std::string_view message);

}  // namespace slurmop::server

#endif  // SLURMOP_CONTROLLER_SERVER_LOG_FORMAT_H_
