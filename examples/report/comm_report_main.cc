// comm_report: runs a registered program on the fake world or in solo mode and
// writes its comm report; with --expect, compares it with a golden file.
//   bazel run //examples/report:comm_report -- --program mlp --world-size 4 --expect golden.json
//   bazel run //examples/report:comm_report -- --program mlp --solo --world-size 4096 --rank 7 --arg hidden=16384
#include "debug/report/comm_report_cli.h"
#include "examples/report/report_programs.h"

int main(int argc, char** argv) {
  dtensor::examples::register_report_programs();
  return dtensor::debug::comm_report_cli(argc, argv);
}
