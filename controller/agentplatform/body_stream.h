// File: controller/agentplatform/body_stream.h
//
// EnvelopeStream: the bytes of a callSlurmRestApi answer as a std::streambuf
// pulled from the transport (http::BodySource), for one nlohmann SAX pass
// over an answer that is never held whole (envelope.h DecodeResponseStream).
//
// Contract:
//  * Passes the answer through unchanged, except the value of the
//    envelope's top-level "body" key when it is a JSON string: that string
//    is unescaped as it streams and handed over wrapped in brackets, so that
//    `"body":"{\"jobs\":[]}"` reads as `"body":[{"jobs":[]}]`. The reader
//    sees the Slurm JSON the string holds as structure (nothing buffers the
//    string), and the brackets make "more than one value" (`"1, 2"`) or
//    "none" (`""`) visible to it instead of merging into the envelope.
//    OpensBodyString() tells that bracket from a `body` array.
//    A bad escape or a raw control character in that string ends the stream
//    (failed() is true, with the reason in error()).
//  * Keys are matched on their raw bytes: a key spelled with escapes
//    ("bod\u0079") is not recognised, its string then goes to the parser
//    whole (correct, only not streamed).
//  * consumed(): bytes handed to the parser so far. SetRecordLimit(n):
//    from now on at most n more bytes are handed over until ClearRecordLimit;
//    past that the stream ends and record_over_limit() is true (the bound on
//    one job record, enforced before the parser builds anything of it).
//  * The first `retain_limit` raw bytes are kept (retained()), so that an
//    answer the streaming pass refuses can be decoded again whole when it is
//    small; retained_all() tells whether the whole answer fit.
//  * A transport failure ends the stream; transport_status() holds it.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_BODY_STREAM_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_BODY_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <streambuf>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/http/http_transport.h"

namespace slurmop::agentplatform {

class EnvelopeStream final : public std::streambuf {
 public:
  EnvelopeStream(http::BodySource& source, size_t retain_limit);

  size_t consumed() const { return handed_ + static_cast<size_t>(gptr() - eback()); }
  void SetRecordLimit(size_t n);
  void ClearRecordLimit() { record_end_ = SIZE_MAX; }
  bool record_over_limit() const { return record_over_limit_; }

  // True when the byte handed over at `position` (a consumed() value) is
  // the opening bracket put in place of a "body" string's quote. Positions
  // must be asked in increasing order.
  bool OpensBodyString(size_t position);
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  const absl::Status& transport_status() const { return transport_; }

  // Reads the rest of the answer into retained(), stopping once it is over
  // the limit (the rest is then left unread).
  void Drain();
  const std::string& retained() const { return retained_; }
  bool retained_all() const { return at_end_ && !retain_overflow_; }

 protected:
  int_type underflow() override;

 private:
  bool Pull();  // raw bytes from the source; false at the end or on failure
  void Transform(unsigned char c);
  // One character inside the intercepted "body" string, decoded as JSON.
  void TransformBodyString(unsigned char c);
  void TransformEscape(unsigned char c);
  // One character inside another string of the envelope, copied.
  void TransformEnvelopeString(unsigned char c);
  // One character between strings: depth, keys and where "body"'s value starts.
  void TransformStructure(unsigned char c);
  void Emit(char c) {
    out_.push_back(c);
    ++emitted_;
  }
  void EmitCodePoint(uint32_t cp);
  void Fail(std::string why);

  http::BodySource& source_;
  const size_t retain_limit_;
  std::vector<char> raw_;
  std::vector<char> out_;
  size_t out_next_ = 0;               // out_[out_next_..] not handed yet
  size_t handed_ = 0;                 // bytes of earlier get areas
  size_t emitted_ = 0;                // bytes ever put in out_
  std::deque<size_t> wrapper_opens_;  // where the brackets of body strings are
  size_t record_end_ = SIZE_MAX;
  bool record_over_limit_ = false;
  bool at_end_ = false;
  absl::Status transport_;
  std::string error_;
  std::string retained_;
  bool retain_overflow_ = false;

  // The envelope's structure, raw bytes outside the intercepted string.
  int depth_ = 0;
  bool in_string_ = false, escape_ = false;
  bool expect_key_ = false, reading_key_ = false, await_colon_ = false;
  bool key_is_body_ = false, await_body_value_ = false;
  std::string key_;
  // Inside the intercepted "body" string.
  bool intercept_ = false, intercept_escape_ = false;
  int hex_left_ = 0;  // digits of a \uXXXX still to come
  uint32_t hex_ = 0;
  uint32_t high_surrogate_ = 0;   // waiting for its low half
  bool want_low_escape_ = false;  // after a high surrogate: "\" then "u"
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_BODY_STREAM_H_
