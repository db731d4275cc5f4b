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
//  * DecodeResponseStream() decodes the same answer as it is read from
//    `source`, never holding its text: one SAX pass over the transport's
//    chunks (body_stream.h; a `body` string is unescaped as it streams and
//    read as the JSON it holds, never held as a string). With
//    options.job_sink, each element of the effective body's top-level `jobs`
//    array goes to the sink as soon as it closes and is not kept (the array
//    stays, empty); each such record may span at most kMaxJobRecordBytes
//    (kInternal "... over the N-byte limit of one record" beyond), and the
//    whole answer keeps the transport's byte limit and the 100-level
//    nesting limit (a `body` string's JSON nested from its own root, as
//    above). The result equals DecodeResponse's on the same text, with
//    these differences: an answer the streaming pass refuses is decoded
//    again whole when it is at most kMaxWholeDecodeBytes (kept while
//    reading), so a small `body` string that is not JSON is kept as a
//    string as above; a larger one is kInternal ("its body string does not
//    hold one JSON value"). A transport failure while reading is returned
//    as the transport's status (http::MayHaveBeenDelivered applies); a
//    sink's refusal as the sink's status.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "controller/agentplatform/client.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

absl::StatusOr<std::string> EncodeRequest(HttpMethod method, std::string_view path,
                                          const nlohmann::json* body);

absl::StatusOr<SlurmResponse> DecodeResponse(std::string_view json,
                                             const CallOptions& options = CallOptions());

// The bound on one record of a streamed jobs list: 2 MiB. A record is
// 2.5-4.5 KB; everything a user gives a job travels in a submit, which
// callSlurmRestApi caps at 1 MB, so a record past twice that is not a job.
inline constexpr size_t kMaxJobRecordBytes = size_t{2} << 20;
// An answer the streaming pass refuses is decoded again whole up to this
// size (1 MiB): only what is this small is kept while reading.
inline constexpr size_t kMaxWholeDecodeBytes = size_t{1} << 20;

absl::StatusOr<SlurmResponse> DecodeResponseStream(http::BodySource& source,
                                                   const CallOptions& options);

// "HTTP_METHOD_GET", "HTTP_METHOD_POST", "HTTP_METHOD_DELETE".
std::string_view ProtoMethodName(HttpMethod method);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_ENVELOPE_H_
