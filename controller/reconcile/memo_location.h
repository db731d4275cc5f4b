// File: controller/reconcile/memo_location.h
//
// Where a Memo (decide.h) says a job went, kept shared (issue #16): the
// executor holds a memo per SlurmJob, thousands of them name the same few
// clusters, and a SlurmJobLocation message costs about 200 bytes of heap per
// copy. Equal locations share one immutable copy.
//
// Contract:
//  * Reads like std::optional<SlurmJobLocation>: empty by default; has_value,
//    operator bool, *, -> and value_or as there.
//  * Assigning a location never changes what other holders read (the shared
//    copy is immutable; a holder points at another one).
//  * Locations no holder names any more are dropped from the sharing pool.
//
// Thread-safety: a MemoLocation is a plain value; the pool behind it is
// locked, so MemoLocations may be made on any thread.

#ifndef SLURMOP_CONTROLLER_RECONCILE_MEMO_LOCATION_H_
#define SLURMOP_CONTROLLER_RECONCILE_MEMO_LOCATION_H_

#include <memory>
#include <optional>

#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

class MemoLocation {
 public:
  using Location = ::slurmoperator::v1alpha1::SlurmJobLocation;

  MemoLocation() = default;
  // Implicit, as std::optional's: `memo.submitted_to = LocationOf(spec)`.
  MemoLocation(const Location& where);  // NOLINT(google-explicit-constructor)

  bool has_value() const { return where_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  const Location& operator*() const { return *where_; }
  const Location* operator->() const { return where_.get(); }
  Location value_or(const Location& otherwise) const { return where_ ? *where_ : otherwise; }
  std::optional<Location> ToOptional() const;
  void reset() { where_.reset(); }

  // How many distinct locations the pool holds (tests).
  static size_t PoolSizeForTest();

 private:
  std::shared_ptr<const Location> where_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_MEMO_LOCATION_H_
