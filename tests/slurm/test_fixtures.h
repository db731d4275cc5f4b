// File: tests/slurm/test_fixtures.h
//
// Loading of the JSON fixtures under tests/slurm/testdata. A response fixture
// is {"status": <HTTP status>, "body": <JSON body>}. Per-version fixtures
// live in testdata/<version>/, with the v0.0.40+ family's shared shapes in
// testdata/v0.0.4x/ (a version's own directory wins). Loading failures are
// reported as test failures (ADD_FAILURE) and give a null body.

#ifndef SLURMOP_TESTS_SLURM_TEST_FIXTURES_H_
#define SLURMOP_TESTS_SLURM_TEST_FIXTURES_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace slurmop::slurm::fixtures {

struct RecordedResponse {
  int status = 0;
  nlohmann::json body;
};

// Absolute path of testdata/<relative>.
std::string TestdataPath(std::string_view relative);
bool TestdataExists(std::string_view relative);

// Parses testdata/<relative>.
nlohmann::json LoadJson(std::string_view relative);
RecordedResponse LoadResponse(std::string_view relative);

// Directories (relative to testdata) holding `version`'s fixtures, most
// specific first: {"v0.0.42", "v0.0.4x"}, {"v0.0.38"}, ...
std::vector<std::string> FixtureDirs(std::string_view version);

// "<dir>/<name>" for the first fixture dir of `version` that has `name`;
// "" when none has it.
std::string FindFixture(std::string_view version, std::string_view name);

// LoadResponse(FindFixture(version, name)); a test failure when missing.
RecordedResponse LoadVersionResponse(std::string_view version, std::string_view name);

// "v0.0.42" -> "v0_0_42", for GoogleTest parameter names.
std::string VersionTestName(std::string_view version);

// Whether `version` belongs to the v0.0.38/39 family (job_state strings,
// unreliable slurmdb exit codes).
bool IsLegacyVersion(std::string_view version);

}  // namespace slurmop::slurm::fixtures

#endif  // SLURMOP_TESTS_SLURM_TEST_FIXTURES_H_
