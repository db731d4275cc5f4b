// File: tests/slurm/test_fixtures.cc
//
// Fixture loading for the slurm tests.

#include "tests/slurm/test_fixtures.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

#ifndef SLURMOP_SLURM_TESTDATA
#error "SLURMOP_SLURM_TESTDATA must name the tests/slurm/testdata directory"
#endif

namespace slurmop::slurm::fixtures {

std::string TestdataPath(std::string_view relative) {
  return std::string(SLURMOP_SLURM_TESTDATA) + "/" + std::string(relative);
}

bool TestdataExists(std::string_view relative) {
  std::error_code ec;
  return std::filesystem::is_regular_file(TestdataPath(relative), ec);
}

nlohmann::json LoadJson(std::string_view relative) {
  const std::string path = TestdataPath(relative);
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open fixture " << path;
    return nullptr;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json parsed = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    ADD_FAILURE() << "fixture " << path << " is not valid JSON";
    return nullptr;
  }
  return parsed;
}

RecordedResponse LoadResponse(std::string_view relative) {
  nlohmann::json wrapper = LoadJson(relative);
  RecordedResponse out;
  if (!wrapper.is_object() || !wrapper.contains("status") ||
      !wrapper["status"].is_number_integer() || !wrapper.contains("body")) {
    ADD_FAILURE() << "fixture " << relative << " is not {\"status\": N, \"body\": ...}";
    return out;
  }
  out.status = wrapper["status"].get<int>();
  out.body = wrapper["body"];
  return out;
}

std::vector<std::string> FixtureDirs(std::string_view version) {
  std::vector<std::string> dirs = {std::string(version)};
  if (!IsLegacyVersion(version)) dirs.push_back("v0.0.4x");
  return dirs;
}

std::string FindFixture(std::string_view version, std::string_view name) {
  for (const std::string& dir : FixtureDirs(version)) {
    std::string relative = dir + "/" + std::string(name);
    if (TestdataExists(relative)) return relative;
  }
  return "";
}

RecordedResponse LoadVersionResponse(std::string_view version, std::string_view name) {
  std::string relative = FindFixture(version, name);
  if (relative.empty()) {
    ADD_FAILURE() << "no fixture " << name << " for " << version;
    return {};
  }
  return LoadResponse(relative);
}

std::string VersionTestName(std::string_view version) {
  std::string out(version);
  for (char& c : out) {
    if (c == '.') c = '_';
  }
  return out;
}

bool IsLegacyVersion(std::string_view version) {
  return version == "v0.0.38" || version == "v0.0.39";
}

}  // namespace slurmop::slurm::fixtures
