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

// The operator flag that lets it call the Agent Platform stand-in on
// 127.0.0.1:`agent_platform_port` (the operator sends requests only to
// Google's hosts and to hosts its installer lists; loopback is not special).
inline std::string AllowStandInFlag(int agent_platform_port) {
  return "--allowed-endpoint-hosts=127.0.0.1:" + std::to_string(agent_platform_port);
}

// The uid in the operator's tag "slurmjob-operator:<namespace>/<uid>/<run>"
// (the Slurm job's comment; "@<installation>" may follow); "" for any other comment.
inline std::string TagUid(const std::string& comment) {
  const std::string prefix = "slurmjob-operator:";
  if (comment.rfind(prefix, 0) != 0) return "";
  const std::string rest = comment.substr(prefix.size());
  const size_t a = rest.find('/'), b = rest.rfind('/');
  return a != std::string::npos && b > a ? rest.substr(a + 1, b - a - 1) : "";
}

// True when `comment` is the tag of run `run` of SlurmJob `uid` in `ns`, with
// any installation (or none, as the previous version wrote it).
inline bool IsRunTag(const std::string& comment, const std::string& ns, const std::string& uid,
                     int run) {
  const std::string legacy = "slurmjob-operator:" + ns + "/" + uid + "/" + std::to_string(run);
  return comment == legacy || comment.rfind(legacy + "@", 0) == 0;
}

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_MANIFESTS_H_
