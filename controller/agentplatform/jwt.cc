// File: controller/agentplatform/jwt.cc
//
// RS256 signing with OpenSSL 3 (EVP_DigestSign) and JWT assembly.

#include "controller/agentplatform/jwt.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace slurmop::agentplatform {
namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// The most recent OpenSSL error, as text; clears the error queue.
std::string OpenSslError() {
  unsigned long err = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
  std::string out = "unknown OpenSSL error";
  if (err != 0) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof(buf));
    out = buf;
  }
  ERR_clear_error();
  return out;
}

// Compact JSON; invalid UTF-8 is replaced rather than thrown.
std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

struct RsaSigner::Key {
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

RsaSigner::RsaSigner(std::unique_ptr<Key> key) : key_(std::move(key)) {}
RsaSigner::~RsaSigner() = default;

std::string Base64UrlEncode(std::string_view data) {
  std::string out;
  absl::WebSafeBase64Escape(absl::string_view(data.data(), data.size()), &out);  // unpadded
  return out;
}

absl::StatusOr<std::unique_ptr<RsaSigner>> RsaSigner::FromPem(std::string_view pem) {
  ERR_clear_error();
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return absl::InternalError("cannot allocate an OpenSSL BIO: " + OpenSslError());
  auto key = std::make_unique<Key>();
  key->pkey = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (key->pkey == nullptr) {
    return absl::InvalidArgumentError("private_key is not a PEM RSA private key (" +
                                      OpenSslError() + ")");
  }
  if (EVP_PKEY_base_id(key->pkey) != EVP_PKEY_RSA) {
    return absl::InvalidArgumentError("private_key is not an RSA key");
  }
  return std::unique_ptr<RsaSigner>(new RsaSigner(std::move(key)));
}

absl::StatusOr<std::string> RsaSigner::Sign(std::string_view data) const {
  ERR_clear_error();
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx) return absl::InternalError("cannot allocate an OpenSSL digest context");
  if (EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->pkey) != 1 ||
      EVP_DigestSignUpdate(ctx.get(), data.data(), data.size()) != 1) {
    return absl::InternalError("RS256 signing failed: " + OpenSslError());
  }
  size_t len = 0;
  if (EVP_DigestSignFinal(ctx.get(), nullptr, &len) != 1) {
    return absl::InternalError("RS256 signing failed: " + OpenSslError());
  }
  std::string signature(len, '\0');
  if (EVP_DigestSignFinal(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &len) !=
      1) {
    return absl::InternalError("RS256 signing failed: " + OpenSslError());
  }
  signature.resize(len);
  return signature;
}

absl::StatusOr<std::string> MakeJwt(const nlohmann::json& header, const nlohmann::json& claims,
                                    const RsaSigner& signer) {
  const std::string signing_input =
      absl::StrCat(Base64UrlEncode(Dump(header)), ".", Base64UrlEncode(Dump(claims)));
  absl::StatusOr<std::string> signature = signer.Sign(signing_input);
  if (!signature.ok()) return signature.status();
  return absl::StrCat(signing_input, ".", Base64UrlEncode(*signature));
}

}  // namespace slurmop::agentplatform
