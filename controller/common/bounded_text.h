// File: controller/common/bounded_text.h
//
// Text from outside (a remote's error message, Slurm's error list) is untrusted input, bounded
// like everything else a remote answers. A status condition holds at most 32 KiB of message (the
// CRD's maxLength: a longer one makes the whole status write fail with 422, and the SlurmJob
// then says nothing at all), and an Event's note at most 1 KiB, so a remote's part is cut where
// it enters (kMaxRemoteMessageBytes), leaving room for the operator's own advice around it.
//
// Contract:
//  * CutText(text, limit): `text` when it fits in `limit` bytes; otherwise a prefix that does
//    not split a UTF-8 sequence, followed by " ... (N bytes cut)", together at most `limit`
//    bytes. Cutting a cut text again gives it back unchanged.
//  * Utf8Prefix(text, limit): the longest prefix of at most `limit` bytes that does not split a
//    UTF-8 sequence, with no marker. A split sequence is not UTF-8, and a JSON writer refuses it
//    (nlohmann's dump() throws type_error 316), so no cut of text may split one.

#ifndef SLURMOP_CONTROLLER_COMMON_BOUNDED_TEXT_H_
#define SLURMOP_CONTROLLER_COMMON_BOUNDED_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace slurmop {

// A remote's message (Agent Platform, a token endpoint, the API server, Slurm's errors) as the
// operator quotes it in a condition, an Event or an error.
inline constexpr size_t kMaxRemoteMessageBytes = 512;
// The CRDs' maxLength of a condition's message (metav1.Condition's).
inline constexpr size_t kMaxConditionMessageBytes = 32768;

std::string CutText(std::string_view text, size_t limit);
std::string Utf8Prefix(std::string_view text, size_t limit);

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_BOUNDED_TEXT_H_
