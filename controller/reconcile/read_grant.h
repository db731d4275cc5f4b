// File: controller/reconcile/read_grant.h
//
// The message for an object of a tenant's namespace (a Secret, a ConfigMap) that the operator
// may not read: the read grant is per namespace (deploy/tenant-namespace-rolebinding.yaml), and a
// 403 does not pass by itself, so the message says which grant to make.
//
// Contract: MayNotRead(what, ns) is "the operator may not read <what> in namespace \"<ns>\"; bind
// the ClusterRole slurmjob-operator-namespace-reader there (...)".

#ifndef SLURMOP_CONTROLLER_RECONCILE_READ_GRANT_H_
#define SLURMOP_CONTROLLER_RECONCILE_READ_GRANT_H_

#include <string>
#include <string_view>

namespace slurmop::reconcile {

std::string MayNotRead(std::string_view what, std::string_view ns);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_READ_GRANT_H_
