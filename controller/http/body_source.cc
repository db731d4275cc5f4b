// File: controller/http/body_source.cc
//
// The default Transport::SendReading (http_transport.h): Send(), then the
// whole 2xx body handed to the reader as one chunk.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "controller/http/http_transport.h"

namespace slurmop::http {
namespace {

// A body already held whole.
class StringSource final : public BodySource {
 public:
  explicit StringSource(const std::string& text) : text_(text) {}
  absl::StatusOr<size_t> Read(char* buffer, size_t capacity) override {
    const size_t n = std::min(capacity, text_.size() - offset_);
    if (n > 0) std::memcpy(buffer, text_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  const std::string& text_;
  size_t offset_ = 0;
};

}  // namespace

absl::StatusOr<Response> Transport::SendReading(const Request& request,
                                                const BodyReader& read_body) {
  absl::StatusOr<Response> response = Send(request);
  if (!response.ok() || response->status < 200 || response->status >= 300) return response;
  std::string body = std::move(response->body);
  response->body.clear();
  StringSource source(body);
  (void)read_body(source);  // its status is the caller's
  return response;
}

}  // namespace slurmop::http
