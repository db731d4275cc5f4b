// File: controller/agentplatform/body_stream.cc
//
// EnvelopeStream (body_stream.h): a streambuf over http::BodySource that
// unescapes the envelope's "body" string as it passes.

#include "controller/agentplatform/body_stream.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace slurmop::agentplatform {
namespace {
constexpr size_t kChunk = 64 * 1024;

int HexValue(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

EnvelopeStream::EnvelopeStream(http::BodySource& source, size_t retain_limit)
    : source_(source), retain_limit_(retain_limit), raw_(kChunk) {
  out_.reserve(kChunk + 8);
  setg(nullptr, nullptr, nullptr);
}

void EnvelopeStream::SetRecordLimit(size_t n) {
  record_end_ = consumed() + n;
  record_over_limit_ = false;
}

void EnvelopeStream::Fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
}

bool EnvelopeStream::Pull() {
  if (at_end_ || failed() || !transport_.ok()) return false;
  absl::StatusOr<size_t> n = source_.Read(raw_.data(), raw_.size());
  if (!n.ok()) {
    transport_ = n.status();
    return false;
  }
  if (*n == 0) {
    at_end_ = true;
    return false;
  }
  if (!retain_overflow_) {
    if (retained_.size() + *n > retain_limit_) {
      retain_overflow_ = true;
      std::string().swap(retained_);
    } else {
      retained_.append(raw_.data(), *n);
    }
  }
  for (size_t i = 0; i < *n && !failed(); ++i) Transform(static_cast<unsigned char>(raw_[i]));
  return true;
}

std::streambuf::int_type EnvelopeStream::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  handed_ += static_cast<size_t>(egptr() - eback());
  setg(nullptr, nullptr, nullptr);
  if (out_next_ == out_.size()) {
    out_.clear();
    out_next_ = 0;
    while (out_.empty()) {
      if (!Pull()) break;
    }
  }
  // Bytes emitted before a failure still go out; the parser then meets the end.
  if (out_next_ == out_.size()) return traits_type::eof();
  size_t n = out_.size() - out_next_;
  if (record_end_ != SIZE_MAX) {
    if (handed_ >= record_end_) {
      record_over_limit_ = true;
      return traits_type::eof();
    }
    n = std::min(n, record_end_ - handed_);
  }
  char* begin = out_.data() + out_next_;
  setg(begin, begin, begin + n);
  out_next_ += n;
  return traits_type::to_int_type(*begin);
}

bool EnvelopeStream::OpensBodyString(size_t position) {
  while (!wrapper_opens_.empty() && wrapper_opens_.front() < position) wrapper_opens_.pop_front();
  return !wrapper_opens_.empty() && wrapper_opens_.front() == position;
}

void EnvelopeStream::Drain() {
  while (!retain_overflow_ && Pull()) {
  }
}

void EnvelopeStream::EmitCodePoint(uint32_t cp) {
  if (cp < 0x80) {
    Emit(static_cast<char>(cp));
  } else if (cp < 0x800) {
    Emit(static_cast<char>(0xC0 | (cp >> 6)));
    Emit(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    Emit(static_cast<char>(0xE0 | (cp >> 12)));
    Emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    Emit(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    Emit(static_cast<char>(0xF0 | (cp >> 18)));
    Emit(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    Emit(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    Emit(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void EnvelopeStream::TransformEscape(unsigned char c) {
  if (hex_left_ > 0) {
    const int v = HexValue(c);
    if (v < 0) return Fail("a bad \\u escape in the body string");
    hex_ = hex_ * 16 + static_cast<uint32_t>(v);
    if (--hex_left_ > 0) return;
    intercept_escape_ = false;
    const uint32_t unit = hex_;
    if (high_surrogate_ != 0) {
      if (unit < 0xDC00 || unit > 0xDFFF) return Fail("a lone surrogate in the body string");
      EmitCodePoint(0x10000 + ((high_surrogate_ - 0xD800) << 10) + (unit - 0xDC00));
      high_surrogate_ = 0;
    } else if (unit >= 0xD800 && unit <= 0xDBFF) {
      high_surrogate_ = unit;
      want_low_escape_ = true;
    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
      return Fail("a lone surrogate in the body string");
    } else {
      EmitCodePoint(unit);
    }
    return;
  }
  if (high_surrogate_ != 0 && c != 'u') return Fail("a lone surrogate in the body string");
  switch (c) {
    case '"':
    case '\\':
    case '/':
      Emit(static_cast<char>(c));
      break;
    case 'b':
      Emit('\b');
      break;
    case 'f':
      Emit('\f');
      break;
    case 'n':
      Emit('\n');
      break;
    case 'r':
      Emit('\r');
      break;
    case 't':
      Emit('\t');
      break;
    case 'u':
      hex_left_ = 4;
      hex_ = 0;
      return;  // still in the escape
    default:
      return Fail("a bad escape in the body string");
  }
  intercept_escape_ = false;
}

void EnvelopeStream::Transform(unsigned char c) {
  if (intercept_) return TransformBodyString(c);
  if (in_string_) return TransformEnvelopeString(c);
  TransformStructure(c);
}

void EnvelopeStream::TransformBodyString(unsigned char c) {
  if (intercept_escape_) return TransformEscape(c);
  if (want_low_escape_) {
    if (c != '\\') return Fail("a lone surrogate in the body string");
    want_low_escape_ = false;
    intercept_escape_ = true;
    return;
  }
  if (c == '\\') {
    intercept_escape_ = true;
  } else if (c == '"') {
    if (high_surrogate_ != 0) return Fail("a lone surrogate in the body string");
    intercept_ = false;
    Emit(']');
  } else if (c < 0x20) {
    Fail("a raw control character in the body string");
  } else {
    Emit(static_cast<char>(c));
  }
}

void EnvelopeStream::TransformEnvelopeString(unsigned char c) {
  Emit(static_cast<char>(c));
  if (escape_) {
    escape_ = false;
    if (reading_key_) key_.push_back('\\');
  } else if (c == '\\') {
    escape_ = true;
  } else if (c == '"') {
    in_string_ = false;
    if (reading_key_) {
      reading_key_ = false;
      key_is_body_ = key_ == "body";
      await_colon_ = true;
    }
  } else if (reading_key_ && key_.size() < 8) {
    key_.push_back(static_cast<char>(c));
  }
}

void EnvelopeStream::TransformStructure(unsigned char c) {
  switch (c) {
    case '"':
      if (depth_ == 1 && await_body_value_) {
        await_body_value_ = false;
        intercept_ = true;
        wrapper_opens_.push_back(emitted_);
        Emit('[');
        return;
      }
      in_string_ = true;
      if (depth_ == 1 && expect_key_) {
        expect_key_ = false;
        reading_key_ = true;
        key_.clear();
      }
      await_body_value_ = false;
      break;
    case '{':
    case '[':
      ++depth_;
      expect_key_ = depth_ == 1 && c == '{';
      if (depth_ == 2) await_body_value_ = false;
      break;
    case '}':
    case ']':
      --depth_;
      break;
    case ',':
      if (depth_ == 1) expect_key_ = true;
      break;
    case ':':
      if (depth_ == 1 && await_colon_) {
        await_colon_ = false;
        await_body_value_ = key_is_body_;
      }
      break;
    case ' ':
    case '\t':
    case '\n':
    case '\r':
      break;
    default:
      if (depth_ == 1) await_body_value_ = false;
      break;
  }
  Emit(static_cast<char>(c));
}

}  // namespace slurmop::agentplatform
