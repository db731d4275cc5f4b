// File: controller/kube/resource_types.cc
//
// See resource_types.h for the contract.

#include "controller/kube/resource_types.h"

#include "controller/http/percent_encoding.h"

namespace slurmop::kube {
namespace {

// One path segment, percent-encoded (RFC 3986), and "." / ".." spelled
// %2E so that no client or proxy on the way resolves them as dot-segments.
std::string PathSegment(std::string_view text) {
  if (text == "." || text == "..") {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) out += "%2E";
    return out;
  }
  return http::PercentEncode(text);
}

}  // namespace

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::CollectionPath(std::string_view ns) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += PathSegment(ns);
  }
  path += "/";
  path += plural;
  return path;
}

std::string ResourceType::ObjectPath(std::string_view ns, std::string_view name) const {
  std::string path = CollectionPath(ns);
  path += "/";
  path += PathSegment(name);
  return path;
}

bool operator==(const ResourceType& a, const ResourceType& b) {
  return a.group == b.group && a.version == b.version && a.plural == b.plural && a.kind == b.kind &&
         a.namespaced == b.namespaced;
}

ResourceType ConfigMaps() { return {"", "v1", "configmaps", "ConfigMap", true}; }
ResourceType Secrets() { return {"", "v1", "secrets", "Secret", true}; }
ResourceType CoreEvents() { return {"", "v1", "events", "Event", true}; }
ResourceType EventsV1() { return {"events.k8s.io", "v1", "events", "Event", true}; }
ResourceType Leases() { return {"coordination.k8s.io", "v1", "leases", "Lease", true}; }
ResourceType Namespaces() { return {"", "v1", "namespaces", "Namespace", false}; }

}  // namespace slurmop::kube
