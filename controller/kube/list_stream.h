// File: controller/kube/list_stream.h
//
// A Kubernetes list answer ({"kind", "apiVersion", "metadata", "items": [...]})
// read in one SAX pass as it arrives (#16 item 1): each element of the
// top-level `items` array goes to the caller as soon as its closing brace is
// read and is freed after, so neither the page's text nor a tree of all its
// objects exists. This matters because the API server answers a list with
// resourceVersion=0 (the informers' first list) from its watch cache and
// ignores `limit` there: the whole collection arrives as one page (10,000
// SlurmJobs: ~47 MB of text, ~120 MB as one nlohmann tree).
//
// Contract:
//  * ReadList(in, max_depth, on_item): returns the list without `items`
//    (kind, apiVersion, metadata.resourceVersion / continue), after handing
//    each item over in order. An item is whatever JSON value the array holds
//    (the caller checks it is an object).
//  * Read as ParseBoundedJson would: exact numbers, a key given twice keeps
//    the later value, nesting deeper than `max_depth` is refused (kInternal)
//    before anything that deep is built. Text that is not JSON, a top level
//    that is not an object, an `items` that is not an array: kInternal.
//    A repeated top-level `items` key is refused (the items of the first
//    were already handed over).
//  * on_item's non-OK status stops the read and is returned.
//  * BodySourceStream turns an http::BodySource into the std::streambuf the
//    parser reads; a transport failure ends the stream, transport_status()
//    holds it (ReadList's caller returns that rather than the parse error).

#ifndef SLURMOP_CONTROLLER_KUBE_LIST_STREAM_H_
#define SLURMOP_CONTROLLER_KUBE_LIST_STREAM_H_

#include <functional>
#include <istream>
#include <streambuf>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::kube {

using ItemCallback = std::function<absl::Status(nlohmann::json item)>;

absl::StatusOr<nlohmann::json> ReadList(std::istream& in, int max_depth,
                                        const ItemCallback& on_item);

class BodySourceStream final : public std::streambuf {
 public:
  explicit BodySourceStream(http::BodySource& source) : source_(source), buffer_(64 << 10) {}
  const absl::Status& transport_status() const { return status_; }

 protected:
  int_type underflow() override;

 private:
  http::BodySource& source_;
  std::vector<char> buffer_;
  absl::Status status_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_LIST_STREAM_H_
