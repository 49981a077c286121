// run_on_ranks on the fake world and on Gloo processes; rank-side helpers.
#include "testing/ranks.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <vector>

#include "backends/fake/fake_world.h"
#include "testing/internal/gloo_ranks.h"
#include "testing/internal/rank_results.h"

namespace dtensor::testing {
namespace {

void run_fake(const RankConfig& config, const std::function<void(World&)>& fn, const RunOptions& options) {
  const int64_t n = config.world_size();
  std::vector<std::unique_ptr<internal::RankResults>> ranks;
  for (int64_t r = 0; r < n; ++r) ranks.push_back(std::make_unique<internal::RankResults>(r, /*echo=*/false));
  FakeWorldOptions fake;
  fake.timeout = options.timeout;
  fake.seed = options.seed;
  std::string world_error;
  try {
    run_fake_world(
        n,
        [&](World& world) {
          internal::RankResults& results = *ranks.at(static_cast<size_t>(world.rank()));
          internal::ScopedRankConfig scoped_config(config);
          {
            auto capture = results.capture();
            try {
              fn(world);
            } catch (...) {
              results.record_exception(std::current_exception());
              throw;  // the fake world aborts the other ranks
            }
          }
          if (results.has_fatal_failure()) {
            throw internal::RankFatalFailure("a fatal assertion failed on this rank");
          }
        },
        fake);
  } catch (const c10::Error& e) {
    world_error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    world_error = e.what();
  }
  // Peer failures are consequences; show them only when nothing else explains
  // the failure (e.g. a rank returned early without a failed assertion).
  bool explained = false;
  for (const auto& results : ranks) explained = explained || results->failed() || results->skipped();
  for (const auto& results : ranks) results->report_here(/*include_peer_failure=*/!explained);
  bool any_error = false;
  for (const auto& results : ranks) any_error = any_error || results->error().has_value();
  if (!world_error.empty() && !explained && !any_error) ADD_FAILURE() << "fake world failed: " << world_error;
}

}  // namespace

const char* test_backend_name(TestBackend backend) {
  switch (backend) {
    case TestBackend::kFake:
      return "fake";
    case TestBackend::kGloo:
      return "gloo";
  }
  return "?";
}

int64_t RankConfig::world_size() const {
  int64_t n = 1;
  for (int64_t d : mesh_shape) n *= d;
  return n;
}

std::string RankConfig::name() const {
  std::string out = test_backend_name(backend);
  for (size_t i = 0; i < mesh_shape.size(); ++i) out += (i == 0 ? "_" : "x") + std::to_string(mesh_shape[i]);
  return out;
}

std::ostream& operator<<(std::ostream& out, const RankConfig& config) {
  out << test_backend_name(config.backend) << " (";
  for (size_t i = 0; i < config.mesh_shape.size(); ++i) out << (i == 0 ? "" : ", ") << config.mesh_shape[i];
  return out << ")";
}

std::vector<std::string> default_dim_names(size_t ndim) {
  if (ndim == 1) return {"tp"};
  if (ndim == 2) return {"dp", "tp"};
  if (ndim == 3) return {"pp", "dp", "tp"};
  std::vector<std::string> names;
  for (size_t i = 0; i < ndim; ++i) names.push_back("d" + std::to_string(i));
  return names;
}

void run_on_ranks(const RankConfig& config, const std::function<void(World&)>& fn, const RunOptions& options) {
  TORCH_CHECK(config.world_size() >= 1 && !config.mesh_shape.empty(), "run_on_ranks: bad mesh shape in ", config);
  TORCH_CHECK(config.dim_names.empty() || config.dim_names.size() == config.mesh_shape.size(),
              "run_on_ranks: ", config.dim_names.size(), " dim names for the mesh of ", config);
  if (config.backend == TestBackend::kFake) return run_fake(config, fn, options);
  const std::string id = internal::next_gloo_call_id();
  if (internal::in_gloo_rank_process()) {
    if (internal::is_gloo_rank_process_for(id)) internal::run_gloo_rank(config, fn, options);
    return;  // another Gloo call of this test, run by its own processes
  }
  internal::launch_gloo_job(config, id, options);
}

void run_on_ranks(int64_t world_size, const std::function<void(World&)>& fn, const RunOptions& options) {
  run_on_ranks(RankConfig{{world_size}, {}, TestBackend::kFake}, fn, options);
}

std::vector<TestBackend> test_backends() {
  std::vector<TestBackend> out = {TestBackend::kFake};
  const char* env = std::getenv("DTENSOR_TEST_BACKENDS");
  if (env == nullptr) return out;
  std::stringstream names(env);
  std::string name;
  while (std::getline(names, name, ',')) {
    if (name == "gloo") {
      out.push_back(TestBackend::kGloo);
    } else {
      TORCH_CHECK(name == "fake" || name.empty(), "DTENSOR_TEST_BACKENDS: unknown backend '", name,
                  "' (known: fake, gloo)");
    }
  }
  return out;
}

std::vector<RankConfig> rank_configs(const std::vector<std::vector<int64_t>>& mesh_shapes,
                                     const std::vector<TestBackend>& backends) {
  std::vector<RankConfig> out;
  for (TestBackend backend : backends) {
    for (const auto& shape : mesh_shapes) out.push_back(RankConfig{shape, {}, backend});
  }
  return out;
}

void run_on_ranks_all_backends(int64_t world_size, const std::function<void()>& body) {
  for (TestBackend backend : test_backends()) {
    SCOPED_TRACE(std::string("backend ") + test_backend_name(backend));
    run_on_ranks(RankConfig{{world_size}, {}, backend}, [&](World&) { body(); });
  }
}

World& world() { return require_current_world("dtensor::testing::world (call it inside run_on_ranks)"); }

int64_t rank() { return world().rank(); }

int64_t world_size() { return world().size(); }

const RankConfig& config() {
  const RankConfig* config = internal::thread_rank_config();
  TORCH_CHECK(config != nullptr, "dtensor::testing::config: call it inside run_on_ranks");
  return *config;
}

DeviceMesh make_mesh() {
  const RankConfig& c = config();
  return make_mesh(c.mesh_shape, c.dim_names.empty() ? default_dim_names(c.mesh_shape.size()) : c.dim_names);
}

DeviceMesh make_mesh(std::vector<int64_t> shape, std::vector<std::string> dim_names) {
  return DeviceMesh::init(world().device().type(), std::move(shape), std::move(dim_names));
}

}  // namespace dtensor::testing
