// File: controller/kube/resource_types.h
//
// ResourceType names one Kubernetes API resource (group/version/plural) and
// builds its REST paths. Well-known types used by the operator live here too.
//
// Contract:
//  * The core group is the empty group: ApiVersion() "v1", paths /api/v1/...;
//    every other group: ApiVersion() "group/version", paths /apis/group/version/...
//  * CollectionPath(ns) of a namespaced type with an empty `ns` is the
//    all-namespaces collection (list/watch across the cluster).
//  * Cluster-scoped types ignore `ns`.
//  * Names and namespaces are inserted percent-encoded, one path segment
//    each (everything but RFC 3986 unreserved characters; "." and ".." as
//    %2E): a name a tenant wrote without a CRD pattern to hold it (a
//    credentialsSecretRef or configMapKeyRef name) cannot add a query
//    ("?" would turn a Get into a List) or another path segment.

#ifndef SLURMOP_CONTROLLER_KUBE_RESOURCE_TYPES_H_
#define SLURMOP_CONTROLLER_KUBE_RESOURCE_TYPES_H_

#include <string>
#include <string_view>

namespace slurmop::kube {

struct ResourceType {
  std::string group;
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;

  // "group/version", or just "version" for the core group.
  std::string ApiVersion() const;
  // /apis/g/v/namespaces/ns/plural ; empty ns (or cluster-scoped) -> /apis/g/v/plural
  std::string CollectionPath(std::string_view ns) const;
  // CollectionPath(ns) + "/" + name
  std::string ObjectPath(std::string_view ns, std::string_view name) const;
  // "<Kind>List"
  std::string ListKind() const { return kind + "List"; }
};

bool operator==(const ResourceType& a, const ResourceType& b);

// core/v1 configmaps
ResourceType ConfigMaps();
// core/v1 secrets
ResourceType Secrets();
// core/v1 events
ResourceType CoreEvents();
// events.k8s.io/v1 events
ResourceType EventsV1();
// coordination.k8s.io/v1 leases
ResourceType Leases();
// core/v1 namespaces (cluster-scoped)
ResourceType Namespaces();

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_RESOURCE_TYPES_H_
