// File: controller/common/log_context.cc
//
// See log_context.h for the contract.

#include "controller/common/log_context.h"

namespace slurmop {
namespace {

thread_local ScopedLogContext* current = nullptr;

void Put(LogFields& fields, std::string_view key, std::string value) {
  for (auto& [k, v] : fields) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  fields.emplace_back(std::string(key), std::move(value));
}

}  // namespace

ScopedLogContext::ScopedLogContext(LogFields fields) : enclosing_(current) {
  if (enclosing_) fields_ = enclosing_->fields_;
  for (auto& [k, v] : fields) Put(fields_, k, std::move(v));
  current = this;
}

ScopedLogContext::~ScopedLogContext() { current = enclosing_; }

void SetLogField(std::string_view key, std::string value) {
  if (current) Put(current->fields_, key, std::move(value));
}

const LogFields* CurrentLogFields() { return current ? &current->fields_ : nullptr; }

}  // namespace slurmop
