// File: controller/api/types.h
//
// Typed access to SlurmJob, SlurmCluster and ClusterSlurmCluster objects as the API server returns
// them. Only `.spec` and `.status` are decoded into the proto; `metadata` (name, resourceVersion,
// finalizers, ...) stays in the JSON object, which callers keep for writes.

#ifndef SLURMOP_CONTROLLER_API_TYPES_H_
#define SLURMOP_CONTROLLER_API_TYPES_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::api {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// Decodes `.spec` and `.status` of a full SlurmJob object. Errors (InvalidArgument) name the field
// path from the object root, e.g. `spec.nodes: expected an integer, got "abc"`. An object whose
// `kind` or `apiVersion` is present but different is rejected.
absl::StatusOr<v1alpha1::SlurmJob> SlurmJobFromObject(const nlohmann::json& object);

// Same for a SlurmCluster object.
absl::StatusOr<v1alpha1::SlurmCluster> SlurmClusterFromObject(const nlohmann::json& object);

// A ClusterSlurmCluster object, read as the SlurmCluster it describes (its spec without
// namespaceSelector, which has the same fields as SlurmClusterSpec, and its status) plus the
// namespaces allowed to use it.
struct ClusterScopedCluster {
  v1alpha1::SlurmCluster cluster;
  // Unset: no namespace may use the cluster.
  std::optional<v1alpha1::LabelSelector> namespace_selector;
};
absl::StatusOr<ClusterScopedCluster> ClusterSlurmClusterFromObject(const nlohmann::json& object);

// The SlurmClusterSpec that a ClusterSlurmClusterSpec describes (every field but
// namespaceSelector).
v1alpha1::SlurmClusterSpec SlurmClusterSpecOf(const v1alpha1::ClusterSlurmClusterSpec& spec);

// The JSON of a status, as the value of `.status` in a write to the status subresource.
nlohmann::json StatusToJson(const v1alpha1::SlurmJobStatus& status);
nlohmann::json StatusToJson(const v1alpha1::SlurmClusterStatus& status);

// `metadata.<field>` of an object when it is a string (name, namespace, uid, resourceVersion,
// ...), else "".
std::string MetadataString(const nlohmann::json& object, const char* field);

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_TYPES_H_
