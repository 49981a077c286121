// LibTorch's warnings of every fake-world rank, for tests of what users are
// warned about. The handler is per thread (LibTorch keeps it in thread-local
// storage): install it inside each rank; the ranks share one collector.
//   WarningCollector warnings;
//   run_fake_world(2, [&](World&) { compat::WarningHandlerGuard guard(&warnings); ... });
//   EXPECT_EQ(warnings.matching("parameter of 'up'").size(), 1u);
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/compat/torch_compat.h"

namespace dtensor::testing {

struct WarningCollector : compat::WarningMessageHandler {
  void on_warning(const std::string& msg) override {
    std::lock_guard<std::mutex> lock(mutex);
    messages.push_back(msg);
  }
  /// The warnings that contain `part`.
  std::vector<std::string> matching(const std::string& part) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (const auto& m : messages) {
      if (m.find(part) != std::string::npos) out.push_back(m);
    }
    return out;
  }
  std::mutex mutex;
  std::vector<std::string> messages;
};

}  // namespace dtensor::testing
