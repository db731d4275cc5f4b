// File: tests/reconcile/metered_slurm_test.cc
//
// What MeteredSlurm adds around SlurmApi::Call: where a cluster's calls go and
// what its spec.callBudget asks of the budget (ClusterNameOf), the count of
// calls the budget held back, and the budget's gauges read at scrape time.

#include "controller/reconcile/metered_slurm.h"

#include <string>
#include <vector>

#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;

::slurmoperator::v1alpha1::SlurmClusterSpec SpecWithBudget(int per_minute) {
  ::slurmoperator::v1alpha1::SlurmClusterSpec spec;
  spec.set_project_id("proj");
  spec.set_region("us-central1");
  spec.set_cluster_id("train");
  if (per_minute > 0) spec.mutable_call_budget()->set_requests_per_minute(per_minute);
  return spec;
}

TEST(ClusterNameOf, ASlurmClustersCallBudgetCapsOnlyItsOwnCalls) {
  const agentplatform::ClusterName n = ClusterNameOf(SpecWithBudget(30), "team-a/train");
  EXPECT_EQ(n.project_id, "proj");
  EXPECT_EQ(n.budget.owner, "team-a/train");
  EXPECT_EQ(n.budget.own_requests_per_minute, 30);
  EXPECT_EQ(n.budget.project_requests_per_minute, 0);
}

TEST(ClusterNameOf, AClusterSlurmClustersCallBudgetIsItsProjects) {
  const agentplatform::ClusterName n = ClusterNameOf(SpecWithBudget(900), "/shared");
  EXPECT_EQ(n.budget.owner, "/shared");
  EXPECT_EQ(n.budget.project_requests_per_minute, 900);
  EXPECT_EQ(n.budget.own_requests_per_minute, 0);
}

TEST(ClusterNameOf, WithoutACallBudgetTheOwnerStillSaysItSetsNone) {
  // The owner is carried so that a setting removed from the resource is
  // forgotten at its next call (quota_budget.h).
  const agentplatform::ClusterName n = ClusterNameOf(SpecWithBudget(0), "/shared");
  EXPECT_EQ(n.budget.owner, "/shared");
  EXPECT_EQ(n.budget.project_requests_per_minute, 0);
  EXPECT_EQ(n.budget.own_requests_per_minute, 0);
}

// A SlurmApi whose every call the budget holds back, and whose budget is
// known.
class HeldBackApi : public agentplatform::SlurmApi {
 public:
  using SlurmApi::Call;
  absl::StatusOr<agentplatform::SlurmResponse> Call(const agentplatform::ClusterName&,
                                                    agentplatform::TokenSource&,
                                                    agentplatform::HttpMethod, std::string_view,
                                                    const nlohmann::json*,
                                                    const agentplatform::CallOptions&) override {
    return agentplatform::MarkHeldBackByBudget(absl::UnavailableError("spent"));
  }
  std::vector<agentplatform::BudgetState> Budgets() override {
    return {{agentplatform::QuotaKey("", "proj", "us-central1"), 210, true}};
  }
};

class NoToken : public agentplatform::TokenSource {
 public:
  absl::StatusOr<std::string> Token() override { return std::string("t"); }
  void Invalidate() override {}
  std::string Describe() const override { return "test"; }
};

TEST(MeteredSlurm, CountsHeldBackCallsByPriorityAndShowsTheBudget) {
  HeldBackApi api;
  NoToken token;
  MeteredSlurm metered(api);
  RegisterCallBudgetMetrics(api);
  const server::Labels track = {
      {"project", "proj"}, {"region", "us-central1"}, {"priority", "track"}};
  const double before =
      server::GlobalMetrics().Value(server::metric::kCallBudgetHeldBackTotal, track);
  const agentplatform::ClusterName where = ClusterNameOf(SpecWithBudget(0), "ns/c");
  EXPECT_FALSE(
      metered.Call(where, token, agentplatform::HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr)
          .ok());
  EXPECT_EQ(server::GlobalMetrics().Value(server::metric::kCallBudgetHeldBackTotal, track),
            before + 1);
  const std::string text = server::GlobalMetrics().Render();
  EXPECT_THAT(text, HasSubstr("slurmjob_operator_call_budget_requests_per_minute{endpoint=\"\","
                              "project=\"proj\",region=\"us-central1\"} 210"));
  EXPECT_THAT(text, HasSubstr("slurmjob_operator_call_budget_paused{endpoint=\"\","
                              "project=\"proj\",region=\"us-central1\"} 1"));
}

}  // namespace
}  // namespace slurmop::reconcile
