// File: tests/reconcile/fakes/fake_kube.h
//
// InMemoryKube: an in-memory kube::Client with the API server semantics the
// executor relies on, and ObjectCache views over it (the informer caches).
//
// Contract:
//  * Objects are kept per (plural, namespace, name). Every write bumps one
//    global resourceVersion (a decimal string, like etcd's revision).
//  * Create: uid ("uid-<n>" unless given), generation 1, creationTimestamp;
//    409 kAlreadyExists when present.
//  * Update (PUT): metadata.resourceVersion must match (409 kAborted
//    otherwise, with the API server's "the object has been modified"
//    message); .status is kept from the stored object (status subresource);
//    generation bumps when .spec changes.
//  * UpdateStatus (PUT .../status): same precondition; only .status changes.
//  * Patch kMerge: RFC 7386 merge patch. A metadata.resourceVersion in the
//    patch is a precondition (409 on mismatch), as on a real server. Without
//    status_subresource, .status in the patch is ignored; with it, only
//    .status is taken.
//  * Delete: an object with finalizers gets metadata.deletionTimestamp (and
//    stays); one without is removed. A DeleteOptions precondition_uid that is
//    not the stored object's uid is a 409 (kAborted); the call's body records
//    the options as the API server would get them. A write that leaves a deleting object
//    without finalizers removes it (the answer is the last object).
//  * Watch: answers OK at once (not used by the executor).
//  * Every call is recorded (verb: get, list, create, update, update-status,
//    patch, delete, watch) unless record_calls is false; WriteCount() counts
//    the writes; Revision() moves with every write call.
//  * Faults: FailNext(verb, status) answers the next call of that verb with
//    `status` before touching the store; LoseNextReply(verb) applies the next
//    call of that verb and answers it with a transport error after the request
//    was sent (the connection broke after the commit). on_request runs first on every call
//    (outside the lock) so a test can play a concurrent writer.
//  * CacheView: ObjectCache over one plural. Live by default (an informer
//    that has caught up); Freeze() serves a snapshot until Thaw() (an
//    informer lagging behind the writes).
//  * Thread-safe.

#ifndef SLURMOP_TESTS_RECONCILE_FAKES_FAKE_KUBE_H_
#define SLURMOP_TESTS_RECONCILE_FAKES_FAKE_KUBE_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "controller/http/http_transport.h"
#include "controller/kube/client.h"
#include "controller/reconcile/ports.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile::testing {

struct KubeCall {
  std::string verb;  // get list create update update-status patch delete watch
  std::string plural;
  std::string ns;
  std::string name;
  nlohmann::json body;  // the object or patch sent (null for reads)
  bool status_subresource = false;
  absl::Status result;  // what the fake answered
};

inline std::string Meta(const nlohmann::json& obj, const char* field) {
  return obj.value("metadata", nlohmann::json::object()).value(field, "");
}

inline KubeCall MakeCall(std::string verb, std::string plural, std::string ns, std::string name,
                         nlohmann::json body = nullptr) {
  KubeCall c;
  c.verb = std::move(verb);
  c.plural = std::move(plural);
  c.ns = std::move(ns);
  c.name = std::move(name);
  c.body = std::move(body);
  return c;
}

class InMemoryKube : public kube::Client {
 public:
  // Runs before every call, outside the lock.
  std::function<void(const KubeCall&)> on_request;
  // false: calls are not kept for calls() / Count() (a long simulation).
  bool record_calls = true;

  // --- test helpers -------------------------------------------------------

  // The stored object, if any.
  std::optional<nlohmann::json> Object(const std::string& plural, const std::string& ns,
                                       const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find({plural, ns, name});
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }

  // Changes a stored object as another client would (bumps resourceVersion;
  // not recorded as a call).
  void MutateBehindTheBack(const std::string& plural, const std::string& ns,
                           const std::string& name,
                           const std::function<void(nlohmann::json&)>& mutate) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find({plural, ns, name});
    if (it == objects_.end()) return;
    mutate(it->second);
    it->second["metadata"]["resourceVersion"] = NextRv();
    ++writes_;
  }

  // Moves with every write call (and MutateBehindTheBack), whatever its
  // outcome, so a reader can tell that nothing changed since it looked.
  int64_t Revision() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

  void FailNext(const std::string& verb, absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_[verb].push_back(std::move(status));
  }
  void LoseNextReply(const std::string& verb) {
    std::lock_guard<std::mutex> lock(mu_);
    ++lost_replies_[verb];
  }

  std::vector<KubeCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void ClearCalls() {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }
  // Calls of one verb (optionally only those that succeeded).
  int Count(const std::string& verb, bool only_ok = false) const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& c : calls_) n += c.verb == verb && (!only_ok || c.result.ok());
    return n;
  }
  int WriteCount() const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& c : calls_) {
      n += c.verb == "create" || c.verb == "update" || c.verb == "update-status" ||
           c.verb == "patch" || c.verb == "delete";
    }
    return n;
  }

  // --- kube::Client -------------------------------------------------------

  absl::StatusOr<nlohmann::json> Get(const kube::ResourceType& rt, std::string_view ns,
                                     std::string_view name) override {
    KubeCall call = MakeCall("get", rt.plural, std::string(ns), std::string(name));
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      auto it = objects_.find(Key(call));
      if (it == objects_.end()) return NotFound(call);
      return it->second;
    });
  }

  absl::StatusOr<nlohmann::json> List(const kube::ResourceType& rt, std::string_view ns,
                                      const kube::ListOptions&) override {
    KubeCall call = MakeCall("list", rt.plural, std::string(ns), "");
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& [k, obj] : objects_) {
        if (std::get<0>(k) == call.plural && (call.ns.empty() || std::get<1>(k) == call.ns)) {
          items.push_back(obj);
        }
      }
      return nlohmann::json{{"kind", rt.ListKind()},
                            {"apiVersion", rt.ApiVersion()},
                            {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                            {"items", items}};
    });
  }

  absl::StatusOr<nlohmann::json> Create(const kube::ResourceType& rt, std::string_view ns,
                                        const nlohmann::json& obj) override {
    KubeCall call =
        MakeCall("create", rt.plural, ns.empty() ? Meta(obj, "namespace") : std::string(ns),
                 Meta(obj, "name"), obj);
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      if (objects_.count(Key(call))) {
        return absl::AlreadyExistsError(
            absl::StrCat(call.plural, " \"", call.name, "\" already exists"));
      }
      nlohmann::json o = obj;
      auto& m = o["metadata"];
      m["namespace"] = call.ns;
      if (!m.contains("uid")) m["uid"] = absl::StrCat("uid-", ++uids_);
      m["generation"] = 1;
      m["creationTimestamp"] = "2023-11-14T22:13:20Z";
      m["resourceVersion"] = NextRv();
      objects_[Key(call)] = o;
      return o;
    });
  }

  absl::StatusOr<nlohmann::json> Update(const kube::ResourceType& rt,
                                        const nlohmann::json& obj) override {
    KubeCall call = MakeCall("update", rt.plural, Meta(obj, "namespace"), Meta(obj, "name"), obj);
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      auto it = objects_.find(Key(call));
      if (it == objects_.end()) return NotFound(call);
      if (absl::Status s = Precondition(call, it->second, obj); !s.ok()) return s;
      nlohmann::json o = obj;
      if (it->second.contains("status")) {
        o["status"] = it->second["status"];
      } else {
        o.erase("status");
      }
      KeepServerFields(it->second, &o);
      if (o.value("spec", nlohmann::json()) != it->second.value("spec", nlohmann::json())) {
        o["metadata"]["generation"] = it->second["metadata"].value("generation", 0) + 1;
      }
      return Store(it, std::move(o));
    });
  }

  absl::StatusOr<nlohmann::json> UpdateStatus(const kube::ResourceType& rt,
                                              const nlohmann::json& obj) override {
    KubeCall call =
        MakeCall("update-status", rt.plural, Meta(obj, "namespace"), Meta(obj, "name"), obj);
    call.status_subresource = true;
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      auto it = objects_.find(Key(call));
      if (it == objects_.end()) return NotFound(call);
      if (absl::Status s = Precondition(call, it->second, obj); !s.ok()) return s;
      nlohmann::json o = it->second;
      if (obj.contains("status")) {
        o["status"] = obj["status"];
      } else {
        o.erase("status");
      }
      return Store(it, std::move(o));
    });
  }

  absl::StatusOr<nlohmann::json> Patch(const kube::ResourceType& rt, std::string_view ns,
                                       std::string_view name, kube::PatchType type,
                                       const nlohmann::json& patch, bool status_subresource,
                                       std::string_view) override {
    KubeCall call = MakeCall("patch", rt.plural, std::string(ns), std::string(name), patch);
    call.status_subresource = status_subresource;
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      if (type != kube::PatchType::kMerge) {
        return absl::UnimplementedError("InMemoryKube: only merge patches");
      }
      auto it = objects_.find(Key(call));
      if (it == objects_.end()) return NotFound(call);
      if (absl::Status s = Precondition(call, it->second, patch); !s.ok()) return s;
      nlohmann::json p = patch;
      if (status_subresource) {
        p = nlohmann::json{{"status", patch.value("status", nlohmann::json())}};
      } else {
        p.erase("status");
      }
      nlohmann::json o = it->second;
      o.merge_patch(p);
      KeepServerFields(it->second, &o);
      if (o.value("spec", nlohmann::json()) != it->second.value("spec", nlohmann::json())) {
        o["metadata"]["generation"] = it->second["metadata"].value("generation", 0) + 1;
      }
      return Store(it, std::move(o));
    });
  }

  absl::StatusOr<nlohmann::json> Delete(const kube::ResourceType& rt, std::string_view ns,
                                        std::string_view name,
                                        const kube::DeleteOptions& opts = {}) override {
    KubeCall call = MakeCall("delete", rt.plural, std::string(ns), std::string(name));
    call.body = {{"preconditions", {{"uid", opts.precondition_uid}}},
                 {"propagationPolicy", opts.propagation_policy}};
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> {
      auto it = objects_.find(Key(call));
      if (it == objects_.end()) return NotFound(call);
      if (!opts.precondition_uid.empty() &&
          opts.precondition_uid != it->second["metadata"].value("uid", "")) {
        return absl::AbortedError("Precondition failed: UID in precondition: " +
                                  opts.precondition_uid);
      }
      const auto& fins = it->second["metadata"].value("finalizers", nlohmann::json::array());
      if (fins.empty()) {
        objects_.erase(it);
        return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}};
      }
      nlohmann::json o = it->second;
      if (!o["metadata"].contains("deletionTimestamp")) {
        o["metadata"]["deletionTimestamp"] = "2023-11-14T23:00:00Z";
        o["metadata"]["deletionGracePeriodSeconds"] = 0;
      }
      return Store(it, std::move(o));
    });
  }

  absl::Status Watch(const kube::ResourceType& rt, std::string_view ns, const kube::WatchOptions&,
                     const std::function<bool(kube::WatchEvent&)>&,
                     std::shared_ptr<http::StreamHandle>) override {
    KubeCall call = MakeCall("watch", rt.plural, std::string(ns), "");
    return Handle(call, [&]() -> absl::StatusOr<nlohmann::json> { return nlohmann::json(); })
        .status();
  }

 private:
  using ObjKey = std::tuple<std::string, std::string, std::string>;
  static ObjKey Key(const KubeCall& c) { return {c.plural, c.ns, c.name}; }

  static absl::Status NotFound(const KubeCall& c) {
    return absl::NotFoundError(absl::StrCat(c.plural, " \"", c.name, "\" not found"));
  }

  // The resourceVersion in `sent` (if any) must equal the stored one.
  static absl::Status Precondition(const KubeCall& c, const nlohmann::json& stored,
                                   const nlohmann::json& sent) {
    const nlohmann::json meta = sent.value("metadata", nlohmann::json::object());
    if (!meta.contains("resourceVersion")) {
      if (c.verb == "update" || c.verb == "update-status") {
        return absl::InvalidArgumentError(
            "metadata.resourceVersion: Invalid value: 0x0: must be "
            "specified for an update");
      }
      return absl::OkStatus();
    }
    if (meta["resourceVersion"] != stored["metadata"]["resourceVersion"]) {
      return absl::AbortedError(absl::StrCat(
          "Operation cannot be fulfilled on ", c.plural, ".hpc.slurmoperator.dev \"", c.name,
          "\": the object has been modified; please apply your changes to the latest version "
          "and try again"));
    }
    return absl::OkStatus();
  }

  // uid, creationTimestamp, generation and deletionTimestamp belong to the server.
  static void KeepServerFields(const nlohmann::json& stored, nlohmann::json* o) {
    for (const char* f : {"uid", "creationTimestamp", "generation", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "namespace", "name"}) {
      if (stored["metadata"].contains(f)) {
        (*o)["metadata"][f] = stored["metadata"][f];
      } else {
        (*o)["metadata"].erase(f);
      }
    }
  }

  std::string NextRv() { return std::to_string(++rv_); }

  absl::StatusOr<nlohmann::json> Store(std::map<ObjKey, nlohmann::json>::iterator it,
                                       nlohmann::json o) {
    if (o == it->second) return o;  // a no-op write does not bump resourceVersion
    o["metadata"]["resourceVersion"] = NextRv();
    const bool deleting = o["metadata"].contains("deletionTimestamp");
    const auto fins = o["metadata"].value("finalizers", nlohmann::json::array());
    if (deleting && fins.empty()) {
      objects_.erase(it);
      return o;
    }
    it->second = o;
    return o;
  }

  absl::StatusOr<nlohmann::json> Handle(
      KubeCall call, const std::function<absl::StatusOr<nlohmann::json>()>& body) {
    if (on_request) on_request(call);
    std::lock_guard<std::mutex> lock(mu_);
    absl::StatusOr<nlohmann::json> result;
    auto f = faults_.find(call.verb);
    if (f != faults_.end() && !f->second.empty()) {
      result = f->second.front();
      f->second.pop_front();
    } else {
      result = body();
      if (int& lost = lost_replies_[call.verb]; lost > 0) {
        --lost;
        result = http::TransportError(absl::StatusCode::kUnavailable,
                                      "http2: client connection lost", /*request_sent=*/true);
      }
    }
    call.result = result.status();
    if (call.verb != "get" && call.verb != "list" && call.verb != "watch") ++writes_;
    if (record_calls) calls_.push_back(std::move(call));
    return result;
  }

  friend class CacheView;
  mutable std::mutex mu_;
  std::map<ObjKey, nlohmann::json> objects_;
  std::map<std::string, std::deque<absl::Status>> faults_;
  std::map<std::string, int> lost_replies_;
  std::vector<KubeCall> calls_;
  int64_t rv_ = 100;
  int64_t writes_ = 0;  // Revision()
  int uids_ = 0;
};

// The informer cache of one kind over an InMemoryKube.
class CacheView : public ObjectCache {
 public:
  CacheView(const InMemoryKube& kube, std::string plural)
      : kube_(kube), plural_(std::move(plural)) {}

  std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                            std::string_view name) const override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::map<InMemoryKube::ObjKey, nlohmann::json>* src = nullptr;
    std::unique_lock<std::mutex> kube_lock(kube_.mu_, std::defer_lock);
    if (frozen_) {
      src = &*frozen_;
    } else {
      kube_lock.lock();
      src = &kube_.objects_;
    }
    auto it = src->find({plural_, std::string(ns), std::string(name)});
    if (it == src->end()) return nullptr;
    return std::make_shared<const nlohmann::json>(it->second);
  }

  // Serves what the store holds now until Thaw().
  void Freeze() {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> kube_lock(kube_.mu_);
    frozen_ = kube_.objects_;
  }
  void Thaw() {
    std::lock_guard<std::mutex> lock(mu_);
    frozen_.reset();
  }

 private:
  const InMemoryKube& kube_;
  const std::string plural_;
  mutable std::mutex mu_;
  std::optional<std::map<InMemoryKube::ObjKey, nlohmann::json>> frozen_;
};

}  // namespace slurmop::reconcile::testing

#endif  // SLURMOP_TESTS_RECONCILE_FAKES_FAKE_KUBE_H_
