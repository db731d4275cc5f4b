// Tests of ObjectPacker (controller/kube/object_packer.h).

#include "controller/kube/object_packer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace slurmop::kube {
namespace {

using nlohmann::json;

json SampleJob(int i) {
  return {{"apiVersion", "example.dev/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "job-" + std::to_string(i)},
            {"namespace", "team"},
            {"uid", "1b4e28ba-2fa1-11d2-883f-" + std::to_string(100000000000 + i)},
            {"resourceVersion", std::to_string(1000 + i)}}},
          {"spec", {{"script", "#!/bin/bash\nsleep 60\n"}, {"nodes", 1}}},
          {"status",
           {{"phase", "Running"},
            {"conditions", json::array({{{"type", "Ready"},
                                         {"status", "False"},
                                         {"reason", "JobRunning"},
                                         {"message", "job " + std::to_string(i) + " is running"},
                                         {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}}};
}

TEST(ObjectPackerTest, EveryKindOfValueUnpacksToWhatWasPacked) {
  const ObjectPacker with_dictionary(SampleJob(0));
  const ObjectPacker without;
  const std::vector<json> values = {
      nullptr,
      true,
      -7,
      uint64_t{18446744073709551615u},
      3.25,
      "",
      "ünïcødé \u2603",
      json::array(),
      json::object(),
      json::array({1, "two", json::object({{"three", 3}}), nullptr}),
      SampleJob(1),
      SampleJob(123456),
  };
  for (const ObjectPacker* packer : {&with_dictionary, &without}) {
    for (const json& value : values) {
      absl::StatusOr<json> back = packer->Unpack(packer->Pack(value));
      ASSERT_TRUE(back.ok()) << back.status() << " for " << value.dump();
      EXPECT_EQ(*back, value);
    }
  }
}

TEST(ObjectPackerTest, ADictionaryOfALikeObjectPacksFarSmallerThanCbor) {
  const ObjectPacker with_dictionary(SampleJob(0));
  const ObjectPacker without;
  const json job = SampleJob(4242);
  const size_t cbor = json::to_cbor(job).size();
  const size_t packed = with_dictionary.Pack(job).size();
  const size_t packed_alone = without.Pack(job).size();
  EXPECT_LT(packed * 4, cbor) << "packed " << packed << " of " << cbor;
  EXPECT_LT(packed, packed_alone);
}

TEST(ObjectPackerTest, BytesItDidNotMakeAreAnInternalError) {
  const ObjectPacker packer(SampleJob(0));
  for (const std::vector<std::uint8_t>& bytes :
       {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>{9, 1, 2},
        std::vector<std::uint8_t>{1, 0x28, 0xb5, 0x2f, 0xfd, 0, 0},
        std::vector<std::uint8_t>{0, 0xff, 0xff}}) {
    absl::StatusOr<json> back = packer.Unpack(bytes);
    ASSERT_FALSE(back.ok());
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInternal);
  }
}

TEST(ObjectPackerTest, TruncatedBytesAreAnError) {
  const ObjectPacker packer(SampleJob(0));
  const std::vector<std::uint8_t> packed = packer.Pack(SampleJob(77));
  const std::vector<std::uint8_t> truncated(packed.begin(), packed.end() - 3);
  EXPECT_FALSE(packer.Unpack(truncated).ok());
}

TEST(ObjectPackerTest, ManyThreadsPackAndUnpackAtOnce) {
  const ObjectPacker packer(SampleJob(0));
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&packer, &failures, t] {
      for (int i = 0; i < 300; ++i) {
        const json job = SampleJob(t * 1000 + i);
        absl::StatusOr<json> back = packer.Unpack(packer.Pack(job));
        if (!back.ok() || *back != job) ++failures[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace slurmop::kube
