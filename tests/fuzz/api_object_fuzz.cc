// File: tests/fuzz/api_object_fuzz.cc
//
// Fuzz target: SlurmJob and SlurmCluster objects as the API server returns
// them (a list item, a watch event's object, a GET), through
// api::SlurmJobFromObject() / SlurmClusterFromObject() and the reflective
// codec (controller/api/json_codec.h) behind them.
//
// Input: any bytes; those that are not JSON are skipped (the watch stream
// and the REST client reject them before decoding).
//
// Checked: no crash, no exception, errors are InvalidArgument (types.h);
// for an object that decodes, the codec's own output decodes again and
// encodes to the same JSON (ToJson -> FromJson -> ToJson is stable), which
// is what a status write followed by a re-read relies on.

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "controller/api/json_codec.h"
#include "controller/api/types.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_check.h"

namespace {

template <typename Message>
void CheckStable(const Message& decoded) {
  const nlohmann::json once = slurmop::api::ToJson(decoded);
  Message again;
  const absl::Status status = slurmop::api::FromJson(once, &again);
  if (!status.ok()) {
    std::fprintf(stderr, "re-decoding %s: %s\n", once.dump().c_str(),
                 std::string(status.message()).c_str());
  }
  FUZZ_CHECK(status.ok());
  FUZZ_CHECK(slurmop::api::ToJson(again) == once);
}

template <typename Message, typename Decode>
void Run(const nlohmann::json& object, Decode decode) {
  absl::StatusOr<Message> decoded = decode(object);
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  CheckStable(*decoded);
  (void)slurmop::api::StatusToJson(decoded->status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json object =
      nlohmann::json::parse(slurmop::fuzz::Input(data, size), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  Run<slurmop::api::v1alpha1::SlurmJob>(
      object, [](const nlohmann::json& o) { return slurmop::api::SlurmJobFromObject(o); });
  Run<slurmop::api::v1alpha1::SlurmCluster>(
      object, [](const nlohmann::json& o) { return slurmop::api::SlurmClusterFromObject(o); });
  return 0;
}
