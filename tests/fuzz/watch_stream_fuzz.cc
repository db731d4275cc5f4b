// File: tests/fuzz/watch_stream_fuzz.cc
//
// Fuzz target: a Kubernetes watch stream as the API server sends it, bytes
// split into lines by http::LineSplitter, each line through
// kube::ParseWatchLine(), then what the informer does with an event: the
// Status of an ERROR event, IsGone(), the object's key, and the SlurmJob /
// SlurmCluster decoding of the object.
//
// Checked: the same bytes fed whole and fed in 1-, 7- and 4096-byte pieces
// give the same lines (line_splitter.h: pieces are arbitrary); no line is
// empty or ends in '\r' or '\n'; a parsed event has one of the five types
// and an object; only ERROR events carry a non-OK Status; nothing crashes
// or throws.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/api/types.h"
#include "controller/http/line_splitter.h"
#include "controller/kube/errors.h"
#include "controller/kube/watch_event.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

std::vector<std::string> Split(std::string_view bytes, size_t piece) {
  std::vector<std::string> lines;
  const slurmop::http::LineCallback on_line = [&lines](const std::string& line) {
    lines.push_back(line);
    return true;
  };
  slurmop::http::LineSplitter splitter(on_line);
  for (size_t at = 0; at < bytes.size(); at += piece) {
    FUZZ_CHECK(splitter.Feed(bytes.substr(at, piece)));
  }
  FUZZ_CHECK(splitter.Finish());
  return lines;
}

void HandleLine(const std::string& line) {
  FUZZ_CHECK(!line.empty());
  FUZZ_CHECK(line.back() != '\n' && line.back() != '\r');
  absl::StatusOr<slurmop::kube::WatchEvent> event = slurmop::kube::ParseWatchLine(line);
  if (!event.ok()) {
    FUZZ_CHECK(event.status().code() == absl::StatusCode::kInternal);
    return;
  }
  const std::string& type = event->type;
  FUZZ_CHECK(type == slurmop::kube::kAdded || type == slurmop::kube::kModified ||
             type == slurmop::kube::kDeleted || type == slurmop::kube::kBookmark ||
             type == slurmop::kube::kError);
  FUZZ_CHECK(event->object.is_object());
  const absl::Status status = slurmop::kube::StatusFromErrorEvent(*event);
  FUZZ_CHECK(status.ok() == (type != slurmop::kube::kError));
  (void)slurmop::kube::IsGone(*event);
  (void)slurmop::kube::RetryAfter(status);
  (void)slurmop::kube::StatusReason(status);
  if (type == slurmop::kube::kError) return;
  const std::string key = slurmop::kube::KeyOf(event->object);
  (void)slurmop::kube::SplitKey(key);
  (void)slurmop::api::SlurmJobFromObject(event->object);
  (void)slurmop::api::SlurmClusterFromObject(event->object);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = slurmop::fuzz::Input(data, size);
  const std::vector<std::string> lines = Split(bytes, bytes.size() + 1);
  FUZZ_CHECK(Split(bytes, 1) == lines);
  FUZZ_CHECK(Split(bytes, 7) == lines);
  FUZZ_CHECK(Split(bytes, 4096) == lines);
  for (const std::string& line : lines) HandleLine(line);
  return 0;
}
