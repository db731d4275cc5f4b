// File: controller/api/resources.h
//
// Names of the operator's Kubernetes resources. They must match the `(slurmoperator.crd.resource)`
// options in proto/slurmoperator/v1alpha1/*.proto, from which crds/ is generated; a test in
// tests/api checks that they do.

#ifndef SLURMOP_CONTROLLER_API_RESOURCES_H_
#define SLURMOP_CONTROLLER_API_RESOURCES_H_

#include <string_view>

namespace slurmop::api {

inline constexpr std::string_view kGroup = "hpc.slurmoperator.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
// The `apiVersion` of every object of this API.
inline constexpr std::string_view kApiVersion = "hpc.slurmoperator.dev/v1alpha1";

inline constexpr std::string_view kSlurmJobKind = "SlurmJob";
inline constexpr std::string_view kSlurmJobPlural = "slurmjobs";
inline constexpr std::string_view kSlurmJobSingular = "slurmjob";

inline constexpr std::string_view kSlurmClusterKind = "SlurmCluster";
inline constexpr std::string_view kSlurmClusterPlural = "slurmclusters";
inline constexpr std::string_view kSlurmClusterSingular = "slurmcluster";

inline constexpr std::string_view kClusterSlurmClusterKind = "ClusterSlurmCluster";
inline constexpr std::string_view kClusterSlurmClusterPlural = "clusterslurmclusters";
inline constexpr std::string_view kClusterSlurmClusterSingular = "clusterslurmcluster";

// Put on every SlurmJob the operator has submitted; removed once the Slurm job was cancelled (or
// orphaned, per `deletionPolicy`) so the SlurmJob can go away.
inline constexpr std::string_view kSlurmJobFinalizer = "hpc.slurmoperator.dev/slurm-job";

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_RESOURCES_H_
