// File: controller/agentplatform/envelope.h
//
// The callSlurmRestApi envelope in JSON, built and read through the proto
// slurmop.agentplatform.v1beta1.CallSlurmRestApi{Request,Response} and
// protobuf's JSON mapping, with conversions between google.protobuf.Struct
// and nlohmann::json.
//
// Contract:
//  * EncodeRequest() writes {"method":"HTTP_METHOD_*","path":...,"body":{...}}
//    (body omitted when null). The body must be a JSON object; integers
//    beyond +-2^53 are rejected (kInvalidArgument), because Struct carries
//    numbers as doubles and would change them.
//  * DecodeResponse() ignores unknown fields; body = structuredBody if
//    present, else `body` parsed when it is a string holding JSON (kept as
//    a JSON string otherwise), else `body` as is; null when neither is set.
//    A body that is not an envelope is kInternal.
//  * Integral numbers within +-2^53 come back as JSON integers (job ids
//    stay integers); other numbers stay doubles.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agentplatform/v1beta1/slurm_rest.pb.h"
#include "controller/agentplatform/client.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

absl::StatusOr<std::string> EncodeRequest(HttpMethod method, std::string_view path,
                                          const nlohmann::json* body);

absl::StatusOr<SlurmResponse> DecodeResponse(std::string_view json);

// nlohmann::json <-> google.protobuf.Value (see the contract above).
absl::StatusOr<google::protobuf::Value> ToProtoValue(const nlohmann::json& j);
nlohmann::json FromProtoValue(const google::protobuf::Value& v);
nlohmann::json FromProtoStruct(const google::protobuf::Struct& s);

v1beta1::HttpMethod ToProtoMethod(HttpMethod method);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
