// File: controller/slurm/array_indexes.h
//
// Array job indexes: Slurm's `--array` expression (spec.array.indexes) and
// batch/v1 Job's compressed index lists (status.array.completedIndexes).
//
// Contract:
//  * ParseArrayExpression accepts exactly what slurmctld's _valid_array_inx /
//    _parse_array_tok (src/slurmctld/job_mgr.c) and sbatch's `%` throttle
//    accept, made stricter: comma-separated `N`, `N-M` or `N-M:S` (N <= M,
//    S >= 1, no blanks, no sign), then an optional `%T` (T >= 1); at most
//    kMaxArrayIndexes distinct indexes, each at most kMaxArrayIndexValue.
//    Errors name the offending token. Bounded work whatever the text (it also
//    reads Slurm's array_task_string, a remote's): at most
//    kMaxArrayExpressionBytes of text and kMaxArrayIndexVisits indexes named
//    in all, counting an index once per range that names it.
//  * FormatIndexList writes batch/v1 Job's format: ascending, runs of three
//    or more as `a-b`, a pair as `a,b` (Kubernetes' orderedIntervals.String),
//    "" for none. ParseIndexList reads it back (and `a-b` for any run);
//    ParseIndexList(FormatIndexList(s)) == s.
//  * An expression for Slurm built from an index set (ArrayExpression) is
//    FormatIndexList with every run written `a-b`, plus the throttle.

#ifndef SLURMOP_CONTROLLER_SLURM_ARRAY_INDEXES_H_
#define SLURMOP_CONTROLLER_SLURM_ARRAY_INDEXES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace slurmop::slurm {

// Slurm's default MaxArraySize is 1001 (indexes 0..1000); the operator
// submits at most this many tasks per SlurmJob and lets a cluster with a
// larger MaxArraySize use larger index values, up to Slurm's own ceiling
// (MaxArraySize <= 4000001).
inline constexpr int32_t kMaxArrayIndexes = 1000;
inline constexpr int32_t kMaxArrayIndexValue = 4000000;
// 1,000 seven-digit indexes, each with its comma, fit twice over.
inline constexpr size_t kMaxArrayExpressionBytes = 16384;
// Overlapping ranges may name an index more than once; repeating "0-999," must not cost a
// thousand steps per six bytes.
inline constexpr int64_t kMaxArrayIndexVisits = 4 * int64_t{kMaxArrayIndexes};

using IndexSet = std::set<int32_t>;

struct ArrayExpression {
  IndexSet indexes;
  std::optional<int32_t> max_running;  // the `%T` throttle
};

absl::StatusOr<ArrayExpression> ParseArrayExpression(std::string_view text);
// `indexes` as Slurm's --array text, e.g. {1,2,3,7} + 2 -> "1-3,7%2".
std::string ArrayExpressionText(const IndexSet& indexes, std::optional<int32_t> max_running);

std::string FormatIndexList(const IndexSet& indexes);
absl::StatusOr<IndexSet> ParseIndexList(std::string_view text);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_ARRAY_INDEXES_H_
