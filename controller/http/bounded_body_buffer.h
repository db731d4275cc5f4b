// File: controller/http/bounded_body_buffer.h
//
// A response body buffer with flow control (issue #16). cpprestsdk reads a
// body into a producer-consumer buffer as fast as the socket delivers it,
// however slowly the reader drains it: a job list of 10,000 jobs (tens of MB)
// decoded record by record still sat whole in that buffer. This buffer, set
// as the request's response stream, completes a write only once the reader
// has drained it to `cap` bytes; cpprest reads the next chunk from the socket
// only after the previous write completed, so the rest of the body waits in
// the kernel's socket buffers (TCP flow control), not in the operator.
//
// Contract:
//  * Bytes come out in the order written, unchanged; a write is copied at
//    once (the writer's memory may be reused as soon as its task completes).
//  * A write that leaves more than `cap` bytes buffered completes when reads
//    have brought it to `cap` or less, or when the read side is closed.
//  * After the read side is closed (the reader gave up), writes are refused
//    (0 bytes written), so that the request ends rather than fill memory.
//  * cpprest does not close a response stream it was given: the owner closes
//    the write side when the response's content_ready() completes
//    (CloseWhenComplete), which is how the reader sees the end (or the error).
//
// Thread-safety: as cpprest's streambufs (one writer and one reader, each on
// any thread).

#ifndef SLURMOP_CONTROLLER_HTTP_BOUNDED_BODY_BUFFER_H_
#define SLURMOP_CONTROLLER_HTTP_BOUNDED_BODY_BUFFER_H_

#include <cpprest/http_msg.h>
#include <cpprest/producerconsumerstream.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace slurmop::http {

class BoundedBodyBuffer final
    : public concurrency::streams::details::basic_producer_consumer_buffer<uint8_t> {
 public:
  explicit BoundedBodyBuffer(size_t cap);
  ~BoundedBodyBuffer() override;

  // Closes the write side of `buffer` once `response`'s body has been
  // written whole (or failed, then with that error).
  static void CloseWhenComplete(const std::shared_ptr<BoundedBodyBuffer>& buffer,
                                const web::http::http_response& response);

  // The most bytes ever held at once (tests).
  size_t max_buffered() const;

 protected:
  pplx::task<size_t> _putn(const uint8_t* ptr, size_t count) override;
  pplx::task<size_t> _getn(uint8_t* ptr, size_t count) override;
  size_t _sgetn(uint8_t* ptr, size_t count) override;
  pplx::task<void> _close_read() override;

 private:
  using Base = concurrency::streams::details::basic_producer_consumer_buffer<uint8_t>;
  // Completes the waiting writes if the buffer is drained to `cap_` (or `force`).
  void ReleaseWriter(bool force);

  const size_t cap_;
  mutable std::mutex mu_;
  std::vector<pplx::task_completion_event<void>> waiting_writers_;  // guarded by mu_
  bool read_closed_ = false;                                        // guarded by mu_
  size_t max_buffered_ = 0;                                         // guarded by mu_
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_BOUNDED_BODY_BUFFER_H_
