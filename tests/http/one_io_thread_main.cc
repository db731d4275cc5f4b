// File: tests/http/one_io_thread_main.cc
//
// main() of slurmop_http_one_io_thread_test: the CpprestTransport tests again,
// with cpprestsdk's I/O pool cut to one thread before any request. Code that
// runs on that pool must never wait for another task of the pool (there is
// no other thread to run it): such a wait hangs a test here until its ctest
// timeout, where the 40-thread default would only stall now and then.

#include <cstdio>
#include <string>

#include "controller/http/cpprest_transport.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (absl::Status sized = slurmop::http::SetCpprestIoThreads(1); !sized.ok()) {
    std::fprintf(stderr, "cannot size the I/O pool: %s\n", std::string(sized.message()).c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
