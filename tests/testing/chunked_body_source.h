// File: tests/testing/chunked_body_source.h
//
// Test helpers for streamed answers (http::BodySource, agentplatform::JobSink):
// ChunkedBodySource hands a text over in chunks of the sizes given (cycled;
// {1} = one byte at a time), optionally failing once `fail_after` bytes
// were read; CollectingSink keeps the records a decoder streams.

#ifndef SLURMOP_TESTS_TESTING_CHUNKED_BODY_SOURCE_H_
#define SLURMOP_TESTS_TESTING_CHUNKED_BODY_SOURCE_H_

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "controller/agentplatform/client.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::testing {

class ChunkedBodySource final : public http::BodySource {
 public:
  ChunkedBodySource(std::string text, std::vector<size_t> chunks,
                    std::optional<size_t> fail_after = std::nullopt)
      : text_(std::move(text)), chunks_(std::move(chunks)), fail_after_(fail_after) {}

  absl::StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    size_t n = std::min({capacity, text_.size() - offset_, chunks_[next_ % chunks_.size()]});
    if (fail_after_ && offset_ + n > *fail_after_) n = *fail_after_ - offset_;
    if (n == 0 && fail_after_ && offset_ == *fail_after_) {
      return absl::UnavailableError("connection reset by peer");
    }
    ++next_;
    std::memcpy(buffer, text_.data() + offset_, n);
    offset_ += n;
    return n;
  }
  size_t offset() const { return offset_; }

 private:
  const std::string text_;
  const std::vector<size_t> chunks_;
  const std::optional<size_t> fail_after_;
  size_t offset_ = 0;
  size_t next_ = 0;
};

class CollectingSink final : public agentplatform::JobSink {
 public:
  absl::Status Job(nlohmann::json record) override {
    if (refuse_at && records.size() == *refuse_at) return absl::InternalError("refused here");
    records.push_back(std::move(record));
    return absl::OkStatus();
  }
  void Restart() override {
    records.clear();
    ++restarts;
  }
  std::vector<nlohmann::json> records;
  int restarts = 0;
  std::optional<size_t> refuse_at;
};

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_CHUNKED_BODY_SOURCE_H_
