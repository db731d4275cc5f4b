// File: controller/http/bounded_body_buffer.cc

#include "controller/http/bounded_body_buffer.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace slurmop::http {

BoundedBodyBuffer::BoundedBodyBuffer(size_t cap) : Base(4096), cap_(cap) {}

BoundedBodyBuffer::~BoundedBodyBuffer() { ReleaseWriter(/*force=*/true); }

// Runs on cpprest's I/O pool, so it never waits for a task: the close is
// chained, not waited for (a wait held a pool thread until another one ran
// the close's continuation; with a pool of one thread, for ever).
void BoundedBodyBuffer::CloseWhenComplete(const std::shared_ptr<BoundedBodyBuffer>& buffer,
                                          const web::http::http_response& response) {
  response.content_ready()
      .then([buffer](pplx::task<web::http::http_response> done) {
        std::exception_ptr error;
        try {
          done.wait();  // done already: returns (or throws) at once
        } catch (...) {
          error = std::current_exception();
        }
        try {
          return error ? buffer->close(std::ios_base::out, error)
                       : buffer->close(std::ios_base::out);
        } catch (...) {  // already closed: the reader sees what it saw
          return pplx::task_from_result();
        }
      })
      .then([](pplx::task<void> closed) {
        try {
          closed.wait();  // done already; observed, so pplx never reports it
        } catch (...) {
        }
      });
}

size_t BoundedBodyBuffer::max_buffered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_buffered_;
}

pplx::task<size_t> BoundedBodyBuffer::_putn(const uint8_t* ptr, size_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (read_closed_) return pplx::task_from_result<size_t>(0);
  pplx::task<size_t> written = Base::_putn(ptr, count);  // copies now
  const size_t held = in_avail();
  max_buffered_ = std::max(max_buffered_, held);
  if (held <= cap_) return written;
  pplx::task_completion_event<void> drained;
  waiting_writers_.push_back(drained);
  return pplx::create_task(drained).then([written]() { return written.get(); });
}

pplx::task<size_t> BoundedBodyBuffer::_getn(uint8_t* ptr, size_t count) {
  return Base::_getn(ptr, count).then([this](size_t read) {
    ReleaseWriter(/*force=*/false);
    return read;
  });
}

size_t BoundedBodyBuffer::_sgetn(uint8_t* ptr, size_t count) {
  const size_t read = Base::_sgetn(ptr, count);
  ReleaseWriter(/*force=*/false);
  return read;
}

pplx::task<void> BoundedBodyBuffer::_close_read() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    read_closed_ = true;
  }
  ReleaseWriter(/*force=*/true);
  return Base::_close_read();
}

void BoundedBodyBuffer::ReleaseWriter(bool force) {
  std::vector<pplx::task_completion_event<void>> writers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_writers_.empty() || (!force && in_avail() > cap_)) return;
    writers.swap(waiting_writers_);
  }
  for (const pplx::task_completion_event<void>& writer : writers) writer.set();
}

}  // namespace slurmop::http
