// File: tests/fuzz/replay_main.cc
//
// The main of a fuzz target in the normal (non-libFuzzer) build: replays
// every regular file of each directory given on the command line (its seed
// corpus and tests/fuzz/regressions/<target>/) through
// LLVMFuzzerTestOneInput, in name order, so crash inputs found by fuzzing
// stay regression tests without clang.
//
// Contract: exit 0 when every file ran through (a finding aborts the
// process, as under libFuzzer); exit 1 when a directory is missing or
// unreadable, or when no file at all was replayed (an empty corpus is a
// broken test, not a pass). Directories that do not exist but are marked
// optional with a leading '?' are skipped.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string dir = argv[i];
    const bool optional = !dir.empty() && dir[0] == '?';
    if (optional) dir.erase(0, 1);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      if (optional) continue;
      std::fprintf(stderr, "replay: %s is not a directory\n", dir.c_str());
      return 1;
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    if (ec) {
      std::fprintf(stderr, "replay: cannot list %s: %s\n", dir.c_str(), ec.message().c_str());
      return 1;
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
        return 1;
      }
      std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
      // A copy in its own allocation, so ASan sees reads past the end.
      std::vector<uint8_t> copy(bytes.begin(), bytes.end());
      LLVMFuzzerTestOneInput(copy.empty() ? nullptr : copy.data(), copy.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "replay: no input replayed\n");
    return 1;
  }
  std::fprintf(stderr, "replay: %zu inputs ok\n", replayed);
  return 0;
}
