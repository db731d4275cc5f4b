// File: controller/reconcile/conditions.cc

#include "controller/reconcile/conditions.h"

#include <chrono>

#include "controller/common/bounded_text.h"

namespace slurmop::reconcile {
namespace {

std::string_view StatusString(ConditionStatus s) {
  switch (s) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

}  // namespace

void SetCondition(Conditions* conditions, std::string_view type, ConditionStatus status,
                  std::string_view reason, std::string_view message, int64_t generation, Time now) {
  v1alpha1::Condition* c = nullptr;
  for (auto& existing : *conditions) {
    if (existing.type() == type) {
      c = &existing;
      break;
    }
  }
  if (c == nullptr) {
    c = conditions->Add();
    c->set_type(std::string(type));
  }
  std::string_view status_str = StatusString(status);
  if (c->status() != status_str || !c->has_last_transition_time()) {
    c->set_status(std::string(status_str));
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    c->mutable_last_transition_time()->set_seconds(secs);
    c->mutable_last_transition_time()->set_nanos(0);
  }
  c->set_reason(std::string(reason));
  c->set_message(CutText(message, kMaxConditionMessageBytes));
  c->set_observed_generation(generation);
}

void RemoveCondition(Conditions* conditions, std::string_view type) {
  for (int i = 0; i < conditions->size(); ++i) {
    if (conditions->Get(i).type() == type) {
      conditions->DeleteSubrange(i, 1);
      return;
    }
  }
}

const v1alpha1::Condition* FindCondition(const Conditions& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const Conditions& conditions, std::string_view type) {
  const v1alpha1::Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status() == "True";
}

}  // namespace slurmop::reconcile
