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
    single_ = other.single_;
    trial_ = other.trial_;
    epoch_ = other.epoch_;
    trial_timeout_ = other.trial_timeout_;
    admitted_ = other.admitted_;
  }
  return *this;
}

SilentClusters::Ticket::~Ticket() { Finish(Outcome::kOther); }

std::chrono::milliseconds SilentClusters::Ticket::Timeout(std::chrono::milliseconds usual) const {
  return trial_ ? std::min(usual, trial_timeout_) : usual;
}

void SilentClusters::Ticket::Finish(Outcome outcome) {
  if (owner_ == nullptr) return;
  std::exchange(owner_, nullptr)->Finished(*this, outcome);
}

namespace {

SilentClustersOptions Sane(SilentClustersOptions o) {
  o.silences_before_hold = std::max(o.silences_before_hold, 1);
  o.max_trials = std::max(o.max_trials, 1);
  return o;
}

}  // namespace

SilentClusters::SilentClusters(const Clock* clock, SilentClustersOptions options)
    : clock_(clock), options_(Sane(options)) {}

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
  bool single = false;
  bool trial = false;
  uint64_t epoch = 0;
  if (auto it = states_.find(key); it != states_.end()) {
    State& s = it->second;
    epoch = s.epoch;
    const std::chrono::nanoseconds hold = HoldFor(s.silences);
    if (now < s.held_until) return Refusal{Refusal::kHeld, s.silences, hold, s.held_until - now};
    const bool held = s.silences >= options_.silences_before_hold;
    // One call at a time; after a hold, only as one of the few trials.
    const std::chrono::nanoseconds busy_wait = held ? options_.trial_timeout : options_.first_hold;
    if (s.single_in_flight || (held && trials_in_flight_ >= options_.max_trials)) {
      return Refusal{Refusal::kOneAtATime, s.silences, hold, busy_wait};
    }
    s.single_in_flight = single = true;
    if (held) {
      ++trials_in_flight_;
      trial = true;
    }
  }
  ticket->owner_ = this;
  ticket->key_ = key;
  ticket->single_ = single;
  ticket->trial_ = trial;
  ticket->epoch_ = epoch;
  ticket->trial_timeout_ = options_.trial_timeout;
  ticket->admitted_ = now;
  return std::nullopt;
}

void SilentClusters::Finished(const Ticket& ticket, Outcome outcome) {
  const Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (ticket.trial_) --trials_in_flight_;
  auto it = states_.find(ticket.key_);
  if (it != states_.end() && ticket.single_ && it->second.epoch == ticket.epoch_) {
    it->second.single_in_flight = false;
  }
  if (outcome == Outcome::kAnswered) {
    if (it != states_.end()) states_.erase(it);
    return;
  }
  if (outcome == Outcome::kOther) return;
  // kSilent.
  if (it == states_.end()) {
    State fresh;
    fresh.epoch = next_epoch_++;
    it = states_.emplace(ticket.key_, fresh).first;
  }
  State& s = it->second;
  // A call that left before the last silence was counted is part of it.
  if ((!ticket.single_ || ticket.epoch_ != s.epoch) && s.silences > 0 &&
      ticket.admitted_ < s.last_silence)
    return;
  ++s.silences;
  s.last_silence = now;
  s.held_until = now + HoldFor(s.silences);  // now itself below the threshold
}

void SilentClusters::PruneLocked(Time now) {
  if (now - last_prune_ < std::chrono::minutes(1)) return;
  last_prune_ = now;
  for (auto it = states_.begin(); it != states_.end();) {
    const State& s = it->second;
    if (!s.single_in_flight && now - s.last_silence > options_.forget_after) {
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
