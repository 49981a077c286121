// calibrate_gpu's logic on the CPU (tiny shapes): it writes a file that
// planner/calibration.h parses, with every kind of measurement; and the
// parser's lookups and errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "planner/calibration.h"
#include "testing/run_command.h"
#include "testing/scratch_dir.h"

namespace dtensor::planner {
namespace {

std::string runfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/dtensor/" + rel;
}

TEST(CalibrateGpuTest, WritesAFileThePlannerReads) {
  const std::string path = testing::scratch_dir("calibrate") + "/cpu.calib";
  const testing::CommandRun run =
      testing::run_command(runfile("tools/calibrate/calibrate_gpu") + " " + path + " --device cpu --quick");
  ASSERT_EQ(run.status, 0) << run.output;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const Calibration c = parse_calibration(text.str());
  EXPECT_EQ(c.gpu, "cpu");
  EXPECT_NE(c.source.find("calibrate_gpu, LibTorch "), std::string::npos) << c.source;
  EXPECT_GT(c.hbm_gbps, 0);
  EXPECT_GT(c.pointwise_gbps, 0);
  EXPECT_GT(c.adam_us_per_mparam, 0);
  ASSERT_EQ(c.matmuls.size(), 4u);  // 2 shapes x bf16, fp32
  EXPECT_EQ(c.matmuls[0].dtype, "bf16");
  EXPECT_EQ(c.matmuls[3].dtype, "fp32");
  EXPECT_EQ(c.matmuls[3].n, 256);
  ASSERT_EQ(c.attention.size(), 1u);
  EXPECT_GT(c.attention[0].backward_tflops, 0);
}

TEST(CalibrateGpuTest, NearestMeasuredShape) {
  const Calibration c = parse_calibration(
      "gpu test\n"
      "matmul bf16 1024 4096 4096 400\n"
      "matmul bf16 16384 14336 4096 700   # large\n"
      "matmul fp32 4096 4096 4096 50\n");
  EXPECT_EQ(c.matmul_tflops("bf16", 1000, 4000, 4000), 400);
  EXPECT_EQ(c.matmul_tflops("bf16", 8192, 14336, 4096), 700);
  EXPECT_EQ(c.matmul_tflops("fp32", 1, 1, 1), 50);
  try {
    c.matmul_tflops("fp16", 1, 1, 1);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has no fp16 matmul"), std::string::npos) << e.what();
  }
}

TEST(CalibrateGpuTest, BadLinesNameTheLine) {
  auto error = [](const std::string& text) {
    try {
      parse_calibration(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("hbm_gbps 3000\nmatmul bf16 1 2 3\n").find("line 2"), std::string::npos);
  EXPECT_NE(error("matmul bf16 1 2 3.5 100\n").find("not a whole number"), std::string::npos);
  EXPECT_NE(error("hbm_gbps -1\n").find("not a positive number"), std::string::npos);
  EXPECT_NE(error("flops 12\n").find("unknown key 'flops'"), std::string::npos);
}

}  // namespace
}  // namespace dtensor::planner
