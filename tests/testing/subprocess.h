// File: tests/testing/subprocess.h
//
// Child processes for end-to-end tests: the stand-in servers, the operator
// binary and kubectl. A Subprocess is killed (SIGTERM, then SIGKILL after a
// grace period) when it goes out of scope, so a failing test leaves nothing
// running behind it.

#ifndef SLURMOP_TESTS_TESTING_SUBPROCESS_H_
#define SLURMOP_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace slurmop::testing {

class Subprocess {
 public:
  // Starts argv[0] (searched in PATH) with `env` added to the environment;
  // stdout and stderr go to `log_path` (appended).
  Subprocess(std::vector<std::string> argv, const std::string& log_path,
             std::map<std::string, std::string> env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Sends `sig`; waits up to `grace` for the exit, then SIGKILLs. Returns the
  // exit status as from waitpid (or -1 if it had already been reaped).
  int Stop(int sig, std::chrono::milliseconds grace = std::chrono::seconds(5));
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
  std::string log_path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs a command to completion (with a timeout, after which it is killed).
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         std::chrono::milliseconds timeout = std::chrono::seconds(60),
                         const std::string& stdin_data = "");

// Polls `done` every `interval` until it returns true or `timeout` passes.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval = std::chrono::milliseconds(100));

// Reads a whole file ("" if missing).
std::string ReadFile(const std::string& path);

// A fresh directory under $TMPDIR (or /tmp), removed by the caller.
std::string MakeTempDir(const std::string& prefix);

// Removes a suite's `dir`, or when `keep` (a test failed) leaves it and
// says so on stderr.
void RemoveDirUnlessKept(const std::string& dir, bool keep);

// The last `max_chars` characters of a log file (for failure messages).
std::string LogTail(const std::string& path, size_t max_chars = 6000);

// The port a server wrote to `file` once it listens (0 if none within `timeout`).
int ReadPort(const std::string& file, std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A loopback port nobody listens on right now, for servers that need a number.
int FreeLoopbackPort();

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_SUBPROCESS_H_
