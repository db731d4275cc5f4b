// File: tests/http/transport_error_test.cc
//
// TransportError() / MayHaveBeenDelivered().

#include "absl/status/status.h"
#include "controller/http/http_transport.h"
#include "gtest/gtest.h"

namespace slurmop::http {
namespace {

TEST(TransportErrorTest, CarriesCodeMessageAndDeliveryFlag) {
  absl::Status not_sent = TransportError(absl::StatusCode::kUnavailable, "refused", false);
  EXPECT_EQ(not_sent.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(not_sent.message(), "refused");
  EXPECT_FALSE(MayHaveBeenDelivered(not_sent));

  absl::Status sent = TransportError(absl::StatusCode::kDeadlineExceeded, "timeout", true);
  EXPECT_EQ(sent.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(MayHaveBeenDelivered(sent));
}

TEST(TransportErrorTest, UnknownOrOkIsConservativelyDelivered) {
  EXPECT_TRUE(MayHaveBeenDelivered(absl::OkStatus()));
  EXPECT_TRUE(MayHaveBeenDelivered(absl::UnavailableError("no payload")));
}

}  // namespace
}  // namespace slurmop::http
