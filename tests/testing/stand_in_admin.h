// File: tests/testing/stand_in_admin.h
//
// The stand-ins' admin API (/__admin/...) as the end-to-end suites call it.
// Link slurmop_http.

#ifndef SLURMOP_TESTS_TESTING_STAND_IN_ADMIN_H_
#define SLURMOP_TESTS_TESTING_STAND_IN_ADMIN_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "controller/http/cpprest_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::testing {

// `method` `path` on the stand-in at 127.0.0.1:`port`, with `body` as JSON
// unless null; its JSON answer, or null when it did not answer 200.
inline nlohmann::json StandInAdmin(int port, const std::string& method, const std::string& path,
                                   const nlohmann::json& body = nullptr) {
  static auto transport = http::CpprestTransport::Create({});
  http::Request req;
  req.method = method;
  req.url = absl::StrCat("http://127.0.0.1:", port, path);
  if (!body.is_null()) {
    req.headers["Content-Type"] = "application/json";
    req.body = body.dump();
  }
  absl::StatusOr<http::Response> r = (*transport)->Send(req);
  if (!r.ok() || r->status != 200) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, false);
}

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_STAND_IN_ADMIN_H_
