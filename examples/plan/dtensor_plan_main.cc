// dtensor_plan: the capacity planner's command line with the example
// Transformer added to the planner's Llama-style model.
//   bazel run -c opt //examples/plan:dtensor_plan -- --model llama-70b --mesh dp=512,tp=8 --plan sp,adam
//   bazel run -c opt //examples/plan:dtensor_plan -- --model llama-70b --sweep 4096 --cap-gib 80
#include "examples/plan/transformer_step.h"
#include "planner/plan_cli.h"

int main(int argc, char** argv) {
  using dtensor::planner::ModelKind;
  return dtensor::planner::plan_cli(
      argc, argv, {{ModelKind::kExampleTransformer, {dtensor::examples::transformer_step_program(), c10::kCPU}}});
}
