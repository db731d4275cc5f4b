// File: controller/slurm/array_indexes.cc

#include "controller/slurm/array_indexes.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace slurmop::slurm {
namespace {

// `text` split at each `sep` (an empty text is one empty part).
std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

// Decimal digits only (absl::SimpleAtoi would take a sign or blanks).
std::optional<int64_t> Digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

absl::Status TokenError(std::string_view token, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("spec.array.indexes: \"", std::string(token), "\" ", std::string(why)));
}

// `N`, `N-M` or `N-M:S` into `out`, taking one of `visits_left` per index it names.
absl::Status AddToken(std::string_view token, IndexSet& out, int64_t& visits_left) {
  if (token.empty()) {
    return absl::InvalidArgumentError(
        "spec.array.indexes: an empty element (two commas in a row, or a comma at an end)");
  }
  std::string_view range = token;
  int64_t step = 1;
  if (size_t colon = token.find(':'); colon != std::string_view::npos) {
    std::optional<int64_t> s = Digits(token.substr(colon + 1));
    if (!s || *s < 1) return TokenError(token, "has a step that is not a positive integer");
    step = *s;
    range = token.substr(0, colon);
    if (range.find('-') == std::string_view::npos) {
      return TokenError(token, "has a step but no range (write N-M:S)");
    }
  }
  std::optional<int64_t> first, last;
  if (size_t dash = range.find('-'); dash != std::string_view::npos) {
    first = Digits(range.substr(0, dash));
    last = Digits(range.substr(dash + 1));
  } else {
    first = last = Digits(range);
  }
  if (!first || !last) {
    return TokenError(token, "is not N, N-M or N-M:S with non-negative integers");
  }
  if (*first > *last) return TokenError(token, "is a range whose start is after its end");
  if (*last > kMaxArrayIndexValue) {
    return TokenError(token, absl::StrCat("has an index above ", kMaxArrayIndexValue,
                                          " (Slurm's largest MaxArraySize is 4000001)"));
  }
  for (int64_t i = *first; i <= *last; i += step) {
    if (--visits_left < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.array.indexes names indexes more than ", kMaxArrayIndexVisits,
                       " times in all (its ranges overlap); name each index once"));
    }
    out.insert(static_cast<int32_t>(i));
    if (out.size() > static_cast<size_t>(kMaxArrayIndexes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.array.indexes names more than ", kMaxArrayIndexes,
                       " indexes (Slurm's default MaxArraySize allows 1001, 0-1000); split the "
                       "work into several SlurmJobs"));
    }
  }
  return absl::OkStatus();
}

std::string Join(const IndexSet& indexes, bool pairs_as_list) {
  std::string out;
  auto it = indexes.begin();
  while (it != indexes.end()) {
    int32_t first = *it, last = *it;
    ++it;
    while (it != indexes.end() && *it == last + 1) last = *it++;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, first);
    if (last > first) absl::StrAppend(&out, (last == first + 1 && pairs_as_list) ? "," : "-", last);
  }
  return out;
}

}  // namespace

absl::StatusOr<ArrayExpression> ParseArrayExpression(std::string_view text) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "spec.array.indexes is empty; give Slurm's --array expression, e.g. \"0-31%4\"");
  }
  if (text.size() > kMaxArrayExpressionBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.array.indexes is longer than ", kMaxArrayExpressionBytes, " bytes"));
  }
  ArrayExpression out;
  std::string_view list = text;
  if (size_t pct = text.find('%'); pct != std::string_view::npos) {
    std::optional<int64_t> t = Digits(text.substr(pct + 1));
    if (!t || *t < 1 || *t > kMaxArrayIndexes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.array.indexes: the throttle \"", std::string(text.substr(pct)),
          "\" must be % followed by how many tasks may run at once (1 to ", kMaxArrayIndexes, ")"));
    }
    out.max_running = static_cast<int32_t>(*t);
    list = text.substr(0, pct);
  }
  int64_t visits_left = kMaxArrayIndexVisits;
  for (std::string_view token : Split(list, ',')) {
    if (absl::Status s = AddToken(token, out.indexes, visits_left); !s.ok()) return s;
  }
  return out;
}

std::string ArrayExpressionText(const IndexSet& indexes, std::optional<int32_t> max_running) {
  std::string out = Join(indexes, /*pairs_as_list=*/false);
  if (max_running) absl::StrAppend(&out, "%", *max_running);
  return out;
}

std::string FormatIndexList(const IndexSet& indexes) { return Join(indexes, true); }

absl::StatusOr<IndexSet> ParseIndexList(std::string_view text) {
  IndexSet out;
  if (text.empty()) return out;
  int64_t visits_left = kMaxArrayIndexVisits;
  for (std::string_view token : Split(text, ',')) {
    if (token.find(':') != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("index list element \"", std::string(token), "\" is not N or N-M"));
    }
    if (absl::Status s = AddToken(token, out, visits_left); !s.ok()) return s;
  }
  return out;
}

}  // namespace slurmop::slurm
