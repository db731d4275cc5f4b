// File: tests/http/counting_transport.h
//
// CountingTransport: a Transport that counts what it is asked and answers 204
// without any I/O. The routing transports' tests (KeepAliveWritesTransport,
// SpareConnectionTransport) put it behind the requests they pass on, to see
// which requests they kept and which they passed.

#ifndef SLURMOP_TESTS_HTTP_COUNTING_TRANSPORT_H_
#define SLURMOP_TESTS_HTTP_COUNTING_TRANSPORT_H_

#include <memory>

#include "controller/http/http_transport.h"

namespace slurmop::testing {

class CountingTransport final : public http::Transport {
 public:
  absl::StatusOr<http::Response> Send(const http::Request&) override {
    ++sends;
    return http::Response{204, {}, ""};
  }
  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    ++streams;
    return http::Response{204, {}, ""};
  }
  int sends = 0;
  int streams = 0;
};

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_HTTP_COUNTING_TRANSPORT_H_
