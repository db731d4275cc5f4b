// File: tests/testing/manifests.h
//
// Manifests the end-to-end suites apply with kubectl.

#ifndef SLURMOP_TESTS_TESTING_MANIFESTS_H_
#define SLURMOP_TESTS_TESTING_MANIFESTS_H_

#include <string>

namespace slurmop::testing {

// The SlurmCluster `local` in `ns`, pointing at the Agent Platform stand-in
// on 127.0.0.1:`agent_platform_port` (project demo-project, region
// us-central1, cluster demo-cluster, partition debug).
inline std::string LocalSlurmClusterManifest(const std::string& ns, int agent_platform_port,
                                             const std::string& slurm_api_version) {
  return "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
         "kind: SlurmCluster\n"
         "metadata: {name: local, namespace: " +
         ns +
         "}\n"
         "spec:\n"
         "  projectId: demo-project\n"
         "  region: us-central1\n"
         "  clusterId: demo-cluster\n"
         "  slurmApiVersion: " +
         slurm_api_version +
         "\n"
         "  defaultPartition: debug\n"
         "  endpoint: http://127.0.0.1:" +
         std::to_string(agent_platform_port) + "\n";
}

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_MANIFESTS_H_
