// Smoke test of one benchmark program: runs it with --smoke (tiny sizes) and
// --json, and checks that it exits 0 and writes a JSON document with rows.
// Never looks at times.
//   bazel test //benchmarks:planner_quality_bench_smoke_test
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BENCH_BINARY\n", argv[0]);
    return 2;
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string json = std::string(tmp != nullptr ? tmp : "/tmp") + "/smoke.json";
  const std::string command = std::string(argv[1]) + " --smoke --json " + json;
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "FAILED: `%s` exited with status %d\n", command.c_str(), rc);
    return 1;
  }
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("\"rows\"") == std::string::npos) {
    std::fprintf(stderr, "FAILED: %s has no \"rows\"\n", json.c_str());
    return 1;
  }
  std::printf("smoke run of %s passed\n", argv[1]);
  return 0;
}
