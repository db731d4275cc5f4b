// File: controller/common/log_context.h
//
// The fields a log line carries about what the thread is doing (namespace, name, uid, run,
// jobId, cluster, reconcileID), for the JSON log format (server/log_format.h). Thread-local:
// ScopedLogContext opens a scope on the current thread (inheriting the enclosing scope's fields)
// and restores the enclosing one when it ends; SetLogField adds or replaces a field of the
// innermost scope (a no-op outside any scope). The text format ignores them.
//
// Never put a secret in a field: fields are written verbatim into every line of the scope.

#ifndef SLURMOP_CONTROLLER_COMMON_LOG_CONTEXT_H_
#define SLURMOP_CONTROLLER_COMMON_LOG_CONTEXT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slurmop {

using LogFields = std::vector<std::pair<std::string, std::string>>;

class ScopedLogContext {
 public:
  explicit ScopedLogContext(LogFields fields);
  ~ScopedLogContext();
  ScopedLogContext(const ScopedLogContext&) = delete;
  ScopedLogContext& operator=(const ScopedLogContext&) = delete;

 private:
  friend void SetLogField(std::string_view key, std::string value);
  friend const LogFields* CurrentLogFields();
  LogFields fields_;
  ScopedLogContext* enclosing_;
};

void SetLogField(std::string_view key, std::string value);
// The innermost scope's fields on this thread, or nullptr.
const LogFields* CurrentLogFields();

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_LOG_CONTEXT_H_
