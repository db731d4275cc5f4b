// File: tests/reconcile/accounting_search_test.cc
//
// AccountingSearchStart: the SlurmJob's creation minus the margin, never
// slurmdbd's default of midnight (#13 E5).

#include "controller/reconcile/accounting_search.h"

#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;

TEST(AccountingSearchStartTest, CreationMinusAnHourElseAWideWindow) {
  const Time now = Time(seconds(1800000000));
  nlohmann::json obj = {{"metadata", {{"creationTimestamp", "2023-11-14T22:13:20Z"}}}};
  EXPECT_EQ(AccountingSearchStart(obj, now), 1700000000 - 3600);
  obj["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20.5+01:00";
  EXPECT_EQ(AccountingSearchStart(obj, now), 1700000000 - 3600 - 3600);
  for (const nlohmann::json& bad :
       {nlohmann::json::object(), nlohmann::json{{"metadata", {{"creationTimestamp", 5}}}},
        nlohmann::json{{"metadata", {{"creationTimestamp", "yesterday"}}}}, nlohmann::json()}) {
    EXPECT_EQ(AccountingSearchStart(bad, now), 1800000000 - 400 * 24 * 3600) << bad.dump();
  }
}

}  // namespace
}  // namespace slurmop::reconcile
