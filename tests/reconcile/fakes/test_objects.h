// File: tests/reconcile/fakes/test_objects.h
//
// Kubernetes objects the executor tests and the simulation create as a
// user would.

#ifndef SLURMOP_TESTS_RECONCILE_FAKES_TEST_OBJECTS_H_
#define SLURMOP_TESTS_RECONCILE_FAKES_TEST_OBJECTS_H_

#include <string>

#include "controller/api/resources.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile::testing {

// SlurmCluster `name` in `ns` for Agent Platform cluster proj/us-central1/c1,
// Slurm REST `version`, default partition "gpu", no credentials Secret, kept
// by the cluster protector already (its cluster-in-use finalizer).
inline nlohmann::json SlurmClusterObject(const std::string& ns, const std::string& name,
                                         const std::string& version) {
  return {{"apiVersion", std::string(api::kApiVersion)},
          {"kind", "SlurmCluster"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"finalizers", {"hpc.slurmoperator.dev/cluster-in-use"}}}},
          {"spec",
           {{"projectId", "proj"},
            {"region", "us-central1"},
            {"clusterId", "c1"},
            {"slurmApiVersion", version},
            {"defaultPartition", "gpu"}}}};
}

}  // namespace slurmop::reconcile::testing

#endif  // SLURMOP_TESTS_RECONCILE_FAKES_TEST_OBJECTS_H_
