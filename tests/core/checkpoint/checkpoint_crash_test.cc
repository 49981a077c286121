// Crash-consistent checkpoints on the fake world: a rank that stops at any
// point of a save leaves exactly the previous checkpoint or the new one;
// a corrupted byte is found on load, naming the file and the tensor; step
// directories keep the newest N. (Killed processes: checkpoint_kill_test.)
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/durable.h"
#include "core/checkpoint/safetensors.h"
#include "core/dtensor.h"
#include "tests/core/checkpoint/versioned_state.h"
#include "testing/error_of.h"
#include "testing/scratch_dir.h"

namespace dtensor::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

using test::versioned_bias;
using test::versioned_weight;

// Saves version `version` on a 2x2 mesh of 4 fake ranks; `on_phase` runs on every rank.
void save_version(const std::string& dir, int version,
                  const std::function<void(int64_t rank, SavePhase)>& on_phase = {}) {
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    StateDict state = {{"w", distribute_tensor(versioned_weight(version), mesh, {Shard(0), Shard(1)})},
                       {"b", distribute_tensor(versioned_bias(version), mesh, {Replicate(), Shard(0)})}};
    SaveOptions options;
    if (on_phase) options.on_phase = [&](SavePhase phase) { on_phase(world.rank(), phase); };
    save(state, dir, options);
  });
}

// Which version the checkpoint at `dir` holds, loaded on one device; -1 when
// it holds a mix or something else (a test failure).
int loaded_version(const std::string& dir) {
  StateDict state = {{"w", torch::zeros({8, 6})}, {"b", torch::zeros({6}, torch::kInt64)}};
  load(state, dir);
  for (int version = 0; version < 3; ++version) {
    if (at::equal(state[0].second, versioned_weight(version)) && at::equal(state[1].second, versioned_bias(version))) {
      return version;
    }
  }
  return -1;
}

struct Stop {
  SavePhase phase;
  int64_t rank;
};

// Every rank's save stops at each phase in turn (the rank's function throws
// there, as a crash would end it): the checkpoint is the old one before the
// commit, the new one after it, never a mix, and the next save succeeds.
TEST(CheckpointCrashTest, ARankStoppingAnywhereLeavesTheOldOrTheNewCheckpoint) {
  for (SavePhase phase : {SavePhase::kStarted, SavePhase::kFileWritten, SavePhase::kCommitting,
                          SavePhase::kCommitted}) {
    for (int64_t victim : {0, 3}) {
      const Stop stop{phase, victim};
      SCOPED_TRACE(std::string("rank ") + std::to_string(victim) + " stops at " +
                   save_phase_name(phase));
      const std::string dir = testing::scratch_dir("crash") + "/ckpt";
      save_version(dir, 1);
      EXPECT_THROW(save_version(dir, 2,
                                [&](int64_t rank, SavePhase reached) {
                                  if (rank == stop.rank && reached == stop.phase) {
                                    throw std::runtime_error("rank stopped by the test");
                                  }
                                }),
                   std::exception);
      const int version = loaded_version(dir);
      if (phase == SavePhase::kCommitted || (phase == SavePhase::kCommitting && victim != 0)) {
        // After the commit, or racing it on another rank: the new one, or
        // (racing) the old one, but complete.
        EXPECT_TRUE(version == 2 || (phase == SavePhase::kCommitting && version == 1)) << version;
      } else {
        EXPECT_EQ(version, 1) << "nothing of the unfinished save may show";
      }
      save_version(dir, 2);  // the staging left behind is no obstacle
      EXPECT_EQ(loaded_version(dir), 2);
    }
  }
}

TEST(CheckpointCrashTest, TheTargetAppearsOnlyWhenComplete) {
  const std::string dir = testing::scratch_dir("first") + "/ckpt";
  EXPECT_THROW(save_version(dir, 1,
                            [](int64_t rank, SavePhase phase) {
                              if (rank == 1 && phase == SavePhase::kFileWritten)
                                throw std::runtime_error("stop");
                            }),
               std::exception);
  EXPECT_FALSE(fs::exists(dir)) << "a first save that did not finish leaves no checkpoint";
  EXPECT_NE(error_of([&] { loaded_version(dir); }).find("no checkpoint index"), std::string::npos);
  save_version(dir, 1);
  EXPECT_EQ(loaded_version(dir), 1);
  EXPECT_FALSE(fs::exists(fs::path(dir).parent_path() / ".ckpt.saving")) << "staging removed";
}

// One flipped bit in a block's data: load names the file and the tensor.
TEST(CheckpointCrashTest, ACorruptedByteIsFoundOnLoadNamingTheFileAndTensor) {
  const std::string dir = testing::scratch_dir("corrupt") + "/ckpt";
  save_version(dir, 1);
  const std::string path = dir + "/" + rank_file_name(2);
  int64_t at = 0;
  {
    SafetensorsFile file(path);
    ASSERT_TRUE(file.contains("w"));
    const SafetensorsFile::Entry& entry = file.entries().at("w");
    uint64_t header = 0;
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), sizeof(header));
    at = static_cast<int64_t>(sizeof(header) + header) + entry.begin + 5;
  }
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(at);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(at);
  file.write(&byte, 1);
  file.close();
  const std::string error = error_of([&] { loaded_version(dir); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("tensor \"w\" fails its checksum"), std::string::npos) << error;
}

// A save replaces its whole directory, so it refuses one that holds other files.
TEST(CheckpointCrashTest, ADirectoryOfOtherFilesIsNotReplaced) {
  const std::string dir = testing::scratch_dir("other_files");
  std::ofstream(dir + "/notes.txt") << "not a checkpoint\n";
  const std::string error = error_of([&] { save_version(dir, 1); });
  EXPECT_NE(error.find("exists and holds no checkpoint (no index.json)"), std::string::npos) << error;
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
}

TEST(CheckpointCrashTest, Crc32IsZlibs) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("6789", 4, crc32("12345", 5)), 0xCBF43926u) << "continues from a previous CRC";
}

// A file another writer made (no checksums in __metadata__) still loads.
TEST(CheckpointCrashTest, FilesWithoutChecksumsStillLoad) {
  const std::string dir = testing::scratch_dir("foreign");
  const std::string path = dir + "/foreign.safetensors";
  const std::string header = R"({"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  const uint64_t length = header.size();
  const int32_t data[2] = {7, 9};
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), sizeof(length));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data), sizeof(data));
  out.close();
  SafetensorsFile file(path);
  file.verify("w");
  EXPECT_TRUE(at::equal(file.tensor("w"), torch::tensor({7, 9}, torch::kInt32)));
}

TEST(CheckpointCrashTest, StepDirectoriesKeepTheNewest) {
  const std::string root = testing::scratch_dir("steps");
  for (int64_t step : {100, 200, 300, 400}) {
    run_fake_world(2, [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, {2});
      StateDict state = {
          {"w", distribute_tensor(versioned_weight(static_cast<int>(step / 100) % 3), mesh, {Shard(0)})}};
      save_step(state, root, step, /*keep_last=*/2);
    });
  }
  const std::vector<std::pair<int64_t, std::string>> steps = list_steps(root);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].first, 300);
  EXPECT_EQ(steps[1].first, 400);
  EXPECT_EQ(latest_step(root), step_dir(root, 400));
  EXPECT_EQ(step_dir("/ckpt", 7), "/ckpt/step-00000007");
  EXPECT_FALSE(latest_step(root + "/nowhere").has_value());
  StateDict state = {{"w", torch::zeros({8, 6})}};
  load(state, *latest_step(root));
  EXPECT_TRUE(at::equal(state[0].second, versioned_weight(1)));
}

}  // namespace
}  // namespace dtensor::checkpoint
