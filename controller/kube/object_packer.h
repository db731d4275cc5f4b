// File: controller/kube/object_packer.h
//
// ObjectPacker: how an Informer with InformerOptions::compact_cache holds
// its objects. An object is encoded as CBOR and then compressed with zstd
// against a dictionary: the CBOR of a sample object of the same kind, given
// once. SlurmJobs of one operator are alike (the same keys, condition types,
// reasons, tag prefix, cluster names), so against a typical SlurmJob each
// one packs to 10-25% of its CBOR (a SlurmJob with five conditions: ~1.5 KB
// of CBOR, ~0.2 KB packed), which is most of the memory of 10,000 tracked
// SlurmJobs (bench/README.md, issue #16).
//
// Why zstd: its "raw content" dictionaries take any bytes as a dictionary
// (no training step), it is a Debian package (libzstd) kept by its authors,
// and it decompresses a 2 KB object in microseconds.
//
// Contract:
//  * Pack() never fails: if compression fails (it does not, short of memory)
//    the CBOR is kept as it is. The first byte of a packed object says which.
//  * Unpack(Pack(x)) == x for every JSON value x. Unpack() of bytes that
//    Pack() did not make returns kInternal (a broken invariant, not input).
//  * The dictionary only changes the size of packed objects, never what
//    they unpack to; any sample (or none) is correct.
//  * Thread-safe: Pack() and Unpack() may be called from any threads at once
//    (each thread keeps its own zstd context).

#ifndef SLURMOP_CONTROLLER_KUBE_OBJECT_PACKER_H_
#define SLURMOP_CONTROLLER_KUBE_OBJECT_PACKER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/status/statusor.h"

namespace slurmop::kube {

class ObjectPacker {
 public:
  // `sample`: a typical object (null or an empty object: no dictionary).
  explicit ObjectPacker(const nlohmann::json& sample = nullptr);

  std::vector<std::uint8_t> Pack(const nlohmann::json& object) const;
  absl::StatusOr<nlohmann::json> Unpack(const std::vector<std::uint8_t>& packed) const;

 private:
  // The CBOR of the sample, used as a zstd raw-content dictionary (loaded
  // per call: 1-2 KB, which costs less than keeping a prepared dictionary
  // and its large tables).
  const std::vector<std::uint8_t> dictionary_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_OBJECT_PACKER_H_
