// File: controller/common/bounded_json.h
//
// JSON parsing of outside input with a nesting limit. Everything a remote
// answers (Agent Platform, token endpoints, the metadata server, the
// Kubernetes API) and every credentials file a tenant writes is untrusted:
// nlohmann's parser itself is iterative, but the trees it builds are walked
// recursively (dump(), copies, comparisons), so a text nested a million
// levels deep would exhaust a thread's stack later. Parse such input here.
//
// Contract:
//  * NestsDeeperThan(text, n): true when arrays/objects in `text` open more
//    than n levels deep (brackets inside strings do not count). One pass, no
//    allocation; any text is accepted (invalid JSON is the parser's job).
//  * ParseBoundedJson(text, n): nlohmann::json::parse(text, nullptr, false),
//    except that a text nested deeper than n gives a discarded value without
//    being parsed. Never throws.

#ifndef SLURMOP_CONTROLLER_COMMON_BOUNDED_JSON_H_
#define SLURMOP_CONTROLLER_COMMON_BOUNDED_JSON_H_

#include <string_view>

#include "nlohmann/json.hpp"

namespace slurmop {

// Agent Platform envelopes and Slurm bodies, Google error bodies, token
// endpoint and metadata answers, credentials files: 100, the limit of
// protobuf's JSON parser (which Google's own front ends use).
inline constexpr int kMaxRemoteJsonDepth = 100;
// Kubernetes API answers: 10,000, the limit of Go's encoding/json that the
// API server decodes with, so nothing the API server stores is refused (a
// refusal would break a whole list for every tenant). Measured with g++ 12
// -O2: a 50,000-level tree is copied, compared and dumped on a std::thread's
// default 8 MiB stack (100,000 is not); at -O0, 10,000 levels pass.
inline constexpr int kMaxKubeJsonDepth = 10000;
// The answers that carry such objects: a watch event ({"object": ...}) adds one level, a list
// ({"items": [...]}) two. Read with kMaxKubeJsonDepth itself, an object stored at the API
// server's limit broke every relist (or re-watched for ever) for every tenant.
inline constexpr int kMaxKubeAnswerJsonDepth = kMaxKubeJsonDepth + 2;

bool NestsDeeperThan(std::string_view text, int max_depth);

nlohmann::json ParseBoundedJson(std::string_view text, int max_depth);

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_BOUNDED_JSON_H_
