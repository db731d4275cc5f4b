// File: controller/reconcile/secret_env.cc

#include "controller/reconcile/secret_env.h"

#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/resource_types.h"

namespace slurmop::reconcile {

absl::StatusOr<SecretEnv> LoadSecretEnv(kube::Client& kube, const std::string& ns,
                                        const v1alpha1::SlurmJobSpec& spec) {
  SecretEnv values;
  std::map<std::string, nlohmann::json> secrets;  // each Secret read once
  for (int i = 0; i < spec.environment_size(); ++i) {
    const v1alpha1::JobEnvVar& e = spec.environment(i);
    if (!e.has_value_from()) continue;
    const v1alpha1::SecretKeyRef& ref = e.value_from().secret_key_ref();
    const std::string where = absl::StrCat("Secret \"", ref.name(), "\" (spec.environment[", i,
                                           "].valueFrom.secretKeyRef, variable ", e.name(), ")");
    auto cached = secrets.find(ref.name());
    if (cached == secrets.end()) {
      absl::StatusOr<nlohmann::json> secret = kube.Get(kube::Secrets(), ns, ref.name());
      if (!secret.ok()) {
        if (kube::IsNotFound(secret.status())) {
          return absl::NotFoundError(
              absl::StrCat(where, " does not exist in namespace \"", ns, "\""));
        }
        return absl::Status(secret.status().code(),
                            absl::StrCat("reading ", where, ": ", secret.status().message()));
      }
      cached = secrets.emplace(ref.name(), std::move(*secret)).first;
    }
    const nlohmann::json data = cached->second.value("data", nlohmann::json::object());
    auto it = data.find(ref.key());
    std::string value;
    if (it == data.end() || !it->is_string() ||
        !absl::Base64Unescape(it->get<std::string>(), &value)) {
      return absl::FailedPreconditionError(absl::StrCat(where, " has no key \"", ref.key(), "\""));
    }
    values[e.name()] = std::move(value);
  }
  return values;
}

}  // namespace slurmop::reconcile
