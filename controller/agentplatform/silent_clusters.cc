// File: controller/agentplatform/silent_clusters.cc
//
// See silent_clusters.h for the contract.

#include "controller/agentplatform/silent_clusters.h"

#include <algorithm>
#include <utility>

namespace slurmop::agentplatform {

SilentClusters::Ticket& SilentClusters::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Finish(Outcome::kOther);
    owner_ = std::exchange(other.owner_, nullptr);
    key_ = std::move(other.key_);
    trial_ = other.trial_;
    admitted_ = other.admitted_;
  }
  return *this;
}

SilentClusters::Ticket::~Ticket() { Finish(Outcome::kOther); }

void SilentClusters::Ticket::Finish(Outcome outcome) {
  if (owner_ == nullptr) return;
  std::exchange(owner_, nullptr)->Finished(key_, trial_, admitted_, outcome);
}

SilentClusters::SilentClusters(const Clock* clock, SilentClustersOptions options)
    : clock_(clock), options_(options) {}

std::chrono::nanoseconds SilentClusters::HoldFor(int silences) const {
  if (silences < options_.silences_before_hold) return std::chrono::nanoseconds::zero();
  std::chrono::nanoseconds hold = options_.first_hold;
  for (int i = options_.silences_before_hold; i < silences && hold < options_.max_hold; ++i) {
    hold *= 2;
  }
  return std::min<std::chrono::nanoseconds>(hold, options_.max_hold);
}

std::optional<SilentClusters::Refusal> SilentClusters::Admit(const std::string& key,
                                                             Ticket* ticket) {
  *ticket = Ticket();
  const Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  PruneLocked(now);
  bool trial = false;
  if (auto it = states_.find(key); it != states_.end()) {
    State& s = it->second;
    if (now < s.held_until) return Refusal{s.silences, HoldFor(s.silences), s.held_until - now};
    if (s.silences >= options_.silences_before_hold) {
      // The hold has passed: one call finds out whether the cluster answers
      // again. The others wait for it, at most a first hold's length.
      if (s.trial_in_flight) return Refusal{s.silences, HoldFor(s.silences), options_.first_hold};
      s.trial_in_flight = true;
      trial = true;
    }
  }
  ticket->owner_ = this;
  ticket->key_ = key;
  ticket->trial_ = trial;
  ticket->admitted_ = now;
  return std::nullopt;
}

void SilentClusters::Finished(const std::string& key, bool trial, Time admitted, Outcome outcome) {
  const Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(key);
  if (outcome == Outcome::kAnswered) {
    if (it != states_.end()) states_.erase(it);
    return;
  }
  if (outcome == Outcome::kOther) {
    if (it != states_.end() && trial) it->second.trial_in_flight = false;
    return;
  }
  // kSilent.
  if (it == states_.end()) it = states_.emplace(key, State{}).first;
  State& s = it->second;
  if (trial) s.trial_in_flight = false;
  // A call that left before the last silence was counted is part of it.
  if (!trial && s.silences > 0 && admitted < s.last_silence) return;
  ++s.silences;
  s.last_silence = now;
  s.held_until = now + HoldFor(s.silences);  // now itself below the threshold
}

void SilentClusters::PruneLocked(Time now) {
  if (now - last_prune_ < std::chrono::minutes(1)) return;
  last_prune_ = now;
  for (auto it = states_.begin(); it != states_.end();) {
    const State& s = it->second;
    if (!s.trial_in_flight && now - s.last_silence > options_.forget_after) {
      it = states_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t SilentClusters::Tracked() {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

}  // namespace slurmop::agentplatform
