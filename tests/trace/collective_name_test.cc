// Kinds of traced collective names: ours exactly, PyTorch's spellings, and
// other names kept as other.
#include "trace/collective_name.h"

#include <gtest/gtest.h>

namespace dtensor::trace {
namespace {

TEST(CollectiveNameTest, OurNamesAndPyTorchsSpellings) {
  const std::pair<const char*, CollectiveKind> table[] = {
      {"all_reduce", CollectiveKind::kAllReduce},
      {"c10d_functional.all_reduce", CollectiveKind::kAllReduce},
      {"_c10d_functional.all_gather_into_tensor", CollectiveKind::kAllGatherIntoTensor},
      {"c10d_functional.reduce_scatter_tensor", CollectiveKind::kReduceScatterTensor},
      {"all_reduce_coalesced", CollectiveKind::kAllReduce},
      {"c10d_functional.all_gather_into_tensor_coalesced", CollectiveKind::kAllGatherIntoTensor},
      {"all_gather", CollectiveKind::kAllGatherIntoTensor},
      {"reduce_scatter", CollectiveKind::kReduceScatterTensor},
      {"all_to_all", CollectiveKind::kAllToAllSingle},
      {"c10d.allreduce", CollectiveKind::kAllReduce},
      {"broadcast", CollectiveKind::kBroadcast},
      {"barrier", CollectiveKind::kBarrier},
  };
  for (const auto& [name, kind] : table) {
    SCOPED_TRACE(name);
    EXPECT_EQ(kind_of_collective(name), kind);
  }
}

TEST(CollectiveNameTest, OtherNamesAreOther) {
  for (const char* name :
       {"", "send", "recv", "c10d_functional.wait_tensor", "all_reducex", "my_op"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(kind_of_collective(name).has_value());
  }
}

}  // namespace
}  // namespace dtensor::trace
