// File: controller/http/line_splitter.cc
//
// See line_splitter.h for the contract.

#include "controller/http/line_splitter.h"

#include <utility>

namespace slurmop::http {

bool LineSplitter::Feed(std::string_view bytes) {
  if (overflowed_) return false;
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t newline = bytes.find('\n', start);
    const size_t end = newline == std::string_view::npos ? bytes.size() : newline;
    if (end - start > max_line_bytes_ - pending_.size()) {
      overflowed_ = true;
      pending_.clear();
      return false;
    }
    if (newline == std::string_view::npos) {
      pending_.append(bytes.substr(start));
      return true;
    }
    std::string line = std::move(pending_);
    pending_.clear();
    line.append(bytes.substr(start, newline - start));
    start = newline + 1;
    if (!Deliver(std::move(line))) return false;
  }
  return true;
}

bool LineSplitter::Finish() {
  if (pending_.empty()) return true;
  std::string line = std::move(pending_);
  pending_.clear();
  return Deliver(std::move(line));
}

bool LineSplitter::Deliver(std::string line) {
  // Every trailing '\r': "x\r\r\n" is the line "x" (the watch fuzzer's find).
  while (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return true;
  return on_line_(line);
}

}  // namespace slurmop::http
