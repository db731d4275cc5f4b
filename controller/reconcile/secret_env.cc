// File: controller/reconcile/secret_env.cc

#include "controller/reconcile/secret_env.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/read_grant.h"

namespace slurmop::reconcile {
namespace {

// The Secrets spec.environment reads, in order of first mention, each with its entries.
std::vector<std::pair<std::string, std::vector<int>>> EntriesBySecret(
    const v1alpha1::SlurmJobSpec& spec) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (int i = 0; i < spec.environment_size(); ++i) {
    const v1alpha1::JobEnvVar& e = spec.environment(i);
    if (!e.has_value_from()) continue;
    const std::string& name = e.value_from().secret_key_ref().name();
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.first == name; });
    if (it == out.end()) it = out.insert(out.end(), {name, {}});
    it->second.push_back(i);
  }
  return out;
}

std::string Where(const v1alpha1::JobEnvVar& e, int i) {
  return absl::StrCat("Secret \"", e.value_from().secret_key_ref().name(), "\" (spec.environment[",
                      i, "].valueFrom.secretKeyRef, variable ", e.name(), ")");
}

}  // namespace

absl::StatusOr<SecretEnv> LoadSecretEnv(kube::Client& kube, const std::string& ns,
                                        const v1alpha1::SlurmJobSpec& spec) {
  SecretEnv values;
  size_t total = 0;
  // One Secret at a time, each read once and dropped once its values are taken: a SlurmJob
  // naming many large Secrets holds no more than one of them and the capped values.
  for (const auto& [name, entries] : EntriesBySecret(spec)) {
    const std::string first = Where(spec.environment(entries.front()), entries.front());
    absl::StatusOr<nlohmann::json> secret = kube.Get(kube::Secrets(), ns, name);
    if (!secret.ok()) {
      if (kube::IsNotFound(secret.status())) {
        return absl::NotFoundError(
            absl::StrCat(first, " does not exist in namespace \"", ns, "\""));
      }
      if (secret.status().code() == absl::StatusCode::kPermissionDenied) {
        return absl::PermissionDeniedError(MayNotRead(first, ns));
      }
      return absl::Status(secret.status().code(),
                          absl::StrCat("reading ", first, ": ", secret.status().message()));
    }
    const nlohmann::json* data = nullptr;
    if (auto d = secret->find("data"); d != secret->end() && d->is_object()) data = &*d;
    for (int i : entries) {
      const v1alpha1::JobEnvVar& e = spec.environment(i);
      const std::string& key = e.value_from().secret_key_ref().key();
      std::string value;
      auto it = data == nullptr ? nlohmann::json::const_iterator() : data->find(key);
      if (data == nullptr || it == data->end() || !it->is_string() ||
          !absl::Base64Unescape(it->get<std::string>(), &value)) {
        return absl::FailedPreconditionError(
            absl::StrCat(Where(e, i), " has no key \"", key, "\""));
      }
      total += e.name().size() + value.size();
      if (total > kMaxSecretEnvBytes) {
        return absl::OutOfRangeError(
            absl::StrCat("the values spec.environment reads from Secrets come to more than ",
                         kMaxSecretEnvBytes, " bytes by ", Where(e, i),
                         "; a submit to callSlurmRestApi carries at most 1 MB in all"));
      }
      values[e.name()] = std::move(value);
    }
  }
  return values;
}

}  // namespace slurmop::reconcile
