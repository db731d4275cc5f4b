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
//  * Not thread-safe; one splitter per stream.

#ifndef SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_
#define SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "controller/http/http_transport.h"

namespace slurmop::http {

class LineSplitter {
 public:
  explicit LineSplitter(const LineCallback& on_line) : on_line_(on_line) {}

  // Appends `bytes`; returns false if the callback asked to stop.
  bool Feed(std::string_view bytes);
  // Delivers the held-back partial line, if any; returns false if the
  // callback asked to stop.
  bool Finish();
  // Bytes held back waiting for a '\n'.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  bool Deliver(std::string line);

  const LineCallback& on_line_;
  std::string pending_;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_LINE_SPLITTER_H_
