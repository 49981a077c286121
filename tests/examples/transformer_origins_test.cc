// Why every collective of the tensor-parallel Transformer happens (issue #21):
// forward and backward, with and without sequence parallelism, every
// collective carries an origin, and the origins are the ones the TP plan
// implies: the styles' boundaries (explicit) and, where sharding propagation
// must move data itself, the op and input it did it for (implicit). Also:
// strict mode passes on the TP Transformer's forward.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <tuple>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "debug/comm_debug_mode.h"
#include "examples/models/seeded_init.h"
#include "examples/models/transformer.h"
#include "testing/dtensor_test.h"

namespace dtensor {
namespace {

// "phase module kind <- origin" -> count, for one rank's trace.
using OriginCounts = std::map<std::string, int64_t>;

OriginCounts origin_counts(const debug::CommTrace& trace, int64_t* missing) {
  OriginCounts out;
  for (const debug::CollectiveRecord& r : trace.collectives) {
    if (!r.origin) {
      ++*missing;
      continue;
    }
    ++out[std::string(debug::phase_name(r.phase)) + " " + r.module + " " + r.kind + " <- " +
          origin_summary(*r.origin)];
  }
  return out;
}

std::string text(const OriginCounts& counts) {
  std::string out;
  for (const auto& [k, n] : counts) out += "  {\"" + k + "\", " + std::to_string(n) + "},\n";
  return out;
}

// Runs forward and backward of the TP Transformer on 4 ranks and returns
// rank 0's origins.
OriginCounts transformer_origins(bool sequence_parallel) {
  OriginCounts result;
  run_fake_world(4, [&](World& world) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
    const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
    examples::Transformer model(args);
    examples::parallelize_transformer(*model, mesh, sequence_parallel);
    at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      at::Tensor out = nn::call(model, tokens);
      DTensor(out).to_local().sum().backward();
    }
    int64_t missing = 0;
    OriginCounts counts = origin_counts(comm.trace(), &missing);
    EXPECT_EQ(missing, 0) << "collectives without an origin on rank " << world.rank();
    if (world.rank() == 0) result = counts;
  });
  return result;
}

TEST(TransformerOriginsTest, EveryCollectiveWithoutSequenceParallelHasItsOrigin) {
  const OriginCounts actual = transformer_origins(/*sequence_parallel=*/false);
  const OriginCounts expected = {
// TP_EXPECTED
  };
  EXPECT_EQ(actual, expected) << "actual:\n" << text(actual);
}

TEST(TransformerOriginsTest, EveryCollectiveWithSequenceParallelHasItsOrigin) {
  const OriginCounts actual = transformer_origins(/*sequence_parallel=*/true);
  const OriginCounts expected = {
// SP_EXPECTED
  };
  EXPECT_EQ(actual, expected) << "actual:\n" << text(actual);
}

TEST(TransformerOriginsTest, StrictModePassesOnTheTpTransformer) {
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sequence parallel" : "tensor parallel");
    run_fake_world(4, [&](World&) {
      DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
      const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
      examples::Transformer model(args);
      examples::parallelize_transformer(*model, mesh, sp);
      at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
      EXPECT_NO_IMPLICIT_REDISTRIBUTION(nn::call(model, tokens));
    });
  }
}

}  // namespace
}  // namespace dtensor
