// File: controller/reconcile/protection_problems.cc

#include "controller/reconcile/protection_problems.h"

#include <utility>

namespace slurmop::reconcile {

void ProtectionProblems::Set(const std::string& key, std::string problem) {
  std::lock_guard<std::mutex> lock(mu_);
  problems_[key] = std::move(problem);
}

void ProtectionProblems::Clear(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  problems_.erase(key);
}

std::string ProtectionProblems::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = problems_.find(key);
  return it == problems_.end() ? std::string() : it->second;
}

}  // namespace slurmop::reconcile
