// File: controller/agentplatform/envelope.h
//
// The callSlurmRestApi envelope in JSON, written and read directly with
// nlohmann::json, following protobuf's JSON mapping of
// slurmop.agentplatform.v1beta1.CallSlurmRestApi{Request,Response}
// (proto/agentplatform/v1beta1/slurm_rest.proto) without building the
// messages: a list of 10,000 jobs is tens of MB of JSON, and decoding it
// through google.protobuf.Struct held two full trees at once.
//
// Contract:
//  * EncodeRequest() writes {"method":"HTTP_METHOD_*","path":...,"body":{...}}
//    (body omitted when null). The body must be a JSON object; integers
//    beyond +-2^53 are rejected (kInvalidArgument), because Struct carries
//    numbers as doubles and would change them; so are non-finite numbers,
//    binary values, strings that are not UTF-8 and nesting deeper than 100.
//  * DecodeResponse() ignores unknown fields; body = structuredBody if
//    present, else `body` parsed when it is a string holding JSON (kept as
//    a JSON string otherwise; "" is null), else `body` as is; null when
//    neither is set. As protobuf's mapping: `structuredBody` may also be
//    spelled `structured_body`, and is null (= absent) or an object;
//    `status` is an int32 given as a number or a numeric string. A body that
//    is not an envelope (not JSON, not an object, a field of the wrong type,
//    a key repeated within an object of structuredBody or of a `body` object,
//    nesting deeper than 100, status missing or 0) is kInternal. An envelope
//    field given twice counts once, the later (a null structuredBody sets
//    nothing); protobuf merged two structured bodies instead.
//  * Integral numbers within +-2^53 of structuredBody and of a `body` object
//    come back as JSON integers (job ids stay integers), and every other
//    number as a double, as they would through google.protobuf.Value. A
//    `body` string is parsed as it is (exact integers of any size), nesting
//    up to 100 levels; a deeper one is kInternal too (never built, so no
//    recursion over it can exhaust the stack).
//  * options.job_fields (client.h), when not empty: each object of the Slurm
//    body's top-level `jobs` array keeps only those keys (and whatever is
//    under them); the others are dropped while parsing, so the full answer
//    never exists as a tree.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "controller/agentplatform/client.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

absl::StatusOr<std::string> EncodeRequest(HttpMethod method, std::string_view path,
                                          const nlohmann::json* body);

absl::StatusOr<SlurmResponse> DecodeResponse(std::string_view json,
                                             const CallOptions& options = CallOptions());

// "HTTP_METHOD_GET", "HTTP_METHOD_POST", "HTTP_METHOD_DELETE".
std::string_view ProtoMethodName(HttpMethod method);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
