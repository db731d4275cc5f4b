// File: controller/http/line_splitter.h
//
// LineSplitter turns a byte stream that arrives in arbitrary pieces (HTTP
// chunks, TCP reads) into complete '\n'-terminated lines.
//
// Contract:
//  * Feed() appends bytes and calls `on_line` once per completed line, in
//    order, without the trailing '\n' (trailing '\r's are stripped as well,
//    so "\r\n" separated streams work). Empty lines are skipped.
//  * A partial line is held back until a later Feed() completes it; Finish()
//    hands out a final unterminated line, if any, when the stream ends.
//  * If `on_line` returns false, Feed()/Finish() stop at once and return
//    false; the splitter must not be fed again afterwards.
//  * A line (held back or complete) longer than `max_line_bytes` stops the
//    splitter: Feed() returns false and overflowed() is true, nothing of
//    that line is delivered, and no more than the limit is held.
//  * Not thread-safe; one splitter per stream.

#ifndef SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_
#define SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

#include "controller/http/http_transport.h"

namespace slurmop::http {

class LineSplitter {
 public:
  explicit LineSplitter(const LineCallback& on_line,
                        size_t max_line_bytes = std::numeric_limits<size_t>::max())
      : on_line_(on_line), max_line_bytes_(max_line_bytes) {}

  // Appends `bytes`; returns false if the callback asked to stop.
  bool Feed(std::string_view bytes);
  // Delivers the held-back partial line, if any; returns false if the
  // callback asked to stop.
  bool Finish();
  // Bytes held back waiting for a '\n'.
  size_t pending_bytes() const { return pending_.size(); }
  // True once a line over the limit stopped the splitter.
  bool overflowed() const { return overflowed_; }

 private:
  bool Deliver(std::string line);

  const LineCallback& on_line_;
  const size_t max_line_bytes_;
  std::string pending_;
  bool overflowed_ = false;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_
