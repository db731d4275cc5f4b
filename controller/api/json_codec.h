// File: controller/api/json_codec.h
//
// Reflective JSON <-> proto mapping for the API types, following Kubernetes JSON conventions
// rather than protobuf's canonical JSON mapping:
//   - keys are the proto JSON names (camelCase, `json_name` honoured);
//   - int64/uint64 are JSON numbers (protobuf's mapping writes strings);
//   - google.protobuf.Timestamp is metav1.Time: RFC 3339 UTC with seconds ("2006-01-02T15:04:05Z");
//   - google.protobuf.Struct/Value/ListValue are plain JSON objects/values/arrays;
//   - google.protobuf.Duration is a string like "1.5s"; wrapper types are their bare scalar;
//   - enums are their value names.
//
// FromJson is lenient where the API server is (unknown keys are ignored, because the server prunes
// them anyway; numeric strings are accepted for integers; null means "unset") and strict about
// types: a wrong type is an InvalidArgument error naming the field path, e.g.
//   spec.nodes: expected an integer, got "abc"
//   spec.environment[1].name: expected a string, got 5
// ToJson omits proto3 scalars that hold their default value unless the field has explicit presence
// (`optional`), empty repeated fields and unset messages. Output key order is that of
// nlohmann::json (sorted), so the same message always gives the same bytes.

#ifndef SLURMOP_CONTROLLER_API_JSON_CODEC_H_
#define SLURMOP_CONTROLLER_API_JSON_CODEC_H_

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace slurmop::api {

// Clears *msg, then fills it from `j`: a JSON object (or, when *msg is a well-known type, that
// type's JSON form, e.g. a string for a Timestamp); null leaves *msg empty. On error *msg holds
// whatever was decoded before the error and must not be used. Struct numbers are doubles, so
// integers beyond 2^53 inside a Struct lose precision (as with protobuf's own mapping).
absl::Status FromJson(const nlohmann::json& j, google::protobuf::Message* msg);

// The Kubernetes-style JSON object of `msg`.
nlohmann::json ToJson(const google::protobuf::Message& msg);

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_JSON_CODEC_H_
