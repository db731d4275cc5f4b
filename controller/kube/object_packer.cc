// File: controller/kube/object_packer.cc
//
// See object_packer.h for the contract.

#include "controller/kube/object_packer.h"

#include <zstd.h>

#include <memory>

namespace slurmop::kube {
namespace {

// The first byte of a packed object.
enum Format : std::uint8_t { kCbor = 0, kZstdCbor = 1 };

// Level 3 (zstd's default); with the size of the input known, zstd sizes its
// tables to it, so a context stays small.
constexpr int kLevel = 3;
// Far above any object the API server stores (1.5 MiB in etcd): a larger
// content size can only come from bytes Pack() did not make.
constexpr unsigned long long kMaxUnpacked = 64ull << 20;

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// One context of each kind per thread (a context is not thread-safe, and
// creating one per call would allocate its tables per call).
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx(ZSTD_createCCtx());
  return cctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx(ZSTD_createDCtx());
  return dctx.get();
}

std::vector<std::uint8_t> CborOf(const nlohmann::json& sample) {
  if (sample.is_null() || (sample.is_object() && sample.empty())) return {};
  return nlohmann::json::to_cbor(sample);
}

absl::StatusOr<nlohmann::json> FromCbor(const std::uint8_t* begin, const std::uint8_t* end) {
  nlohmann::json out = nlohmann::json::from_cbor(begin, end, /*strict=*/true,
                                                 /*allow_exceptions=*/false);
  if (out.is_discarded()) return absl::InternalError("packed object: CBOR does not decode");
  return out;
}

}  // namespace

ObjectPacker::ObjectPacker(const nlohmann::json& sample) : dictionary_(CborOf(sample)) {}

std::vector<std::uint8_t> ObjectPacker::Pack(const nlohmann::json& object) const {
  std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(object);
  ZSTD_CCtx* cctx = ThreadCCtx();
  if (cctx != nullptr) {
    std::vector<std::uint8_t> packed(1 + ZSTD_compressBound(cbor.size()));
    packed[0] = kZstdCbor;
    const size_t n =
        ZSTD_compress_usingDict(cctx, packed.data() + 1, packed.size() - 1, cbor.data(),
                                cbor.size(), dictionary_.data(), dictionary_.size(), kLevel);
    if (!ZSTD_isError(n)) {
      packed.resize(1 + n);
      packed.shrink_to_fit();
      return packed;
    }
  }
  cbor.insert(cbor.begin(), kCbor);
  cbor.shrink_to_fit();
  return cbor;
}

absl::StatusOr<nlohmann::json> ObjectPacker::Unpack(const std::vector<std::uint8_t>& packed) const {
  if (packed.empty()) return absl::InternalError("packed object: empty");
  const std::uint8_t* body = packed.data() + 1;
  const size_t body_size = packed.size() - 1;
  if (packed[0] == kCbor) return FromCbor(body, body + body_size);
  if (packed[0] != kZstdCbor) return absl::InternalError("packed object: unknown format");
  const unsigned long long size = ZSTD_getFrameContentSize(body, body_size);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxUnpacked) {
    return absl::InternalError("packed object: bad zstd frame");
  }
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return absl::ResourceExhaustedError("packed object: no zstd context");
  std::vector<std::uint8_t> cbor(size);
  const size_t n = ZSTD_decompress_usingDict(dctx, cbor.data(), cbor.size(), body, body_size,
                                             dictionary_.data(), dictionary_.size());
  if (ZSTD_isError(n) || n != size) {
    return absl::InternalError("packed object: zstd frame does not decompress");
  }
  return FromCbor(cbor.data(), cbor.data() + cbor.size());
}

}  // namespace slurmop::kube
