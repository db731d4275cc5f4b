// File: controller/api/types.cc

#include "controller/api/types.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "controller/api/json_codec.h"
#include "controller/api/resources.h"

namespace slurmop::api {
namespace {

// Checks the envelope of an object; absent `kind`/`apiVersion` are fine (callers often pass
// objects taken out of a list, which lack them).
absl::Status CheckEnvelope(const nlohmann::json& object, const std::string& kind) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", kind, " must be a JSON object, got ", object.type_name()));
  }
  auto check = [&](const char* key, const std::string& expected) -> absl::Status {
    auto it = object.find(key);
    if (it == object.end() || (it->is_string() && it->get<std::string>() == expected)) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": expected \"", expected, "\", got ", it->dump()));
  };
  if (absl::Status status = check("kind", kind); !status.ok()) return status;
  return check("apiVersion", std::string(kApiVersion));
}

template <typename Resource>
absl::StatusOr<Resource> FromObject(const nlohmann::json& object, const std::string& kind) {
  if (absl::Status status = CheckEnvelope(object, kind); !status.ok()) return status;
  // The kind messages have exactly the fields `spec` and `status`; the codec ignores the other
  // keys of the object (apiVersion, kind, metadata).
  Resource resource;
  if (absl::Status status = FromJson(object, &resource); !status.ok()) return status;
  return resource;
}

}  // namespace

absl::StatusOr<v1alpha1::SlurmJob> SlurmJobFromObject(const nlohmann::json& object) {
  return FromObject<v1alpha1::SlurmJob>(object, std::string(kSlurmJobKind));
}

absl::StatusOr<v1alpha1::SlurmCluster> SlurmClusterFromObject(const nlohmann::json& object) {
  return FromObject<v1alpha1::SlurmCluster>(object, std::string(kSlurmClusterKind));
}

v1alpha1::SlurmClusterSpec SlurmClusterSpecOf(const v1alpha1::ClusterSlurmClusterSpec& spec) {
  // Same field numbers and types (tests/api/types_test.cc keeps them so): the wire form of one is
  // the other's, once namespaceSelector is left out.
  v1alpha1::ClusterSlurmClusterSpec copy = spec;
  copy.clear_namespace_selector();
  v1alpha1::SlurmClusterSpec out;
  if (!out.ParseFromString(copy.SerializeAsString())) out.Clear();
  return out;
}

absl::StatusOr<ClusterScopedCluster> ClusterSlurmClusterFromObject(const nlohmann::json& object) {
  absl::StatusOr<v1alpha1::ClusterSlurmCluster> read =
      FromObject<v1alpha1::ClusterSlurmCluster>(object, std::string(kClusterSlurmClusterKind));
  if (!read.ok()) return read.status();
  ClusterScopedCluster out;
  *out.cluster.mutable_spec() = SlurmClusterSpecOf(read->spec());
  *out.cluster.mutable_status() = read->status();
  if (read->spec().has_namespace_selector()) {
    out.namespace_selector = read->spec().namespace_selector();
  }
  return out;
}

nlohmann::json StatusToJson(const v1alpha1::SlurmJobStatus& status) { return ToJson(status); }

nlohmann::json StatusToJson(const v1alpha1::SlurmClusterStatus& status) { return ToJson(status); }

std::string MetadataString(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(field);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace slurmop::api
