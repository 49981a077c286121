// TEMPORARY probe: which aten ops reach the DTensor dispatcher for common functions.
#include <torch/torch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <iostream>
#include <set>
#include <functional>
#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dispatch/op_observer.h"
#include "core/dispatch/op_dispatcher.h"
#include "core/dispatch/sharding_registry.h"
#include "core/ops/rule_utils.h"

using namespace dtensor;

struct Log : OpObserver {
  std::vector<std::string> names;
  void on_dtensor_op(const OpCall& c) override { names.push_back(c.name); }
};

int main() {
  dtensor::init();
  std::set<std::string> has_rule;
  for (auto& n : ShardingRegistry::global().names()) has_rule.insert(n);
  auto& reg = ShardingRegistry::global();
  std::vector<std::string> missing;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    std::string full = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    if (!reg.find(full)) missing.push_back(full);
  }
  reg.add(missing, per_mesh_dim([](const OpCall& c, int) { std::vector<DimStrategy> v{dtensor::detail::all_replicate(c)}; return v; }));
  run_fake_world(1, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {1});
    auto D = [&](at::Tensor t, bool grad = true) {
      DTensor d = distribute_tensor(t, mesh, {Replicate()});
      if (grad && t.is_floating_point()) d.requires_grad_(true);
      return at::Tensor(d);
    };
    auto probe = [&](const std::string& title, std::function<at::Tensor()> fn) {
      Log log;
      try {
        ScopedOpObserver s(&log);
        at::Tensor out = fn();
        if (out.requires_grad()) {
          log.names.push_back("--backward--");
          out.sum().backward();
        }
      } catch (const std::exception& e) {
        log.names.push_back(std::string("ERROR ") + std::string(e.what()).substr(0, 300));
      }
      std::cout << "== " << title << ":";
      for (auto& n : log.names) std::cout << " " << n << (n.rfind("--", 0) == 0 || has_rule.count(n) || has_rule.count(n.substr(0, n.find('.'))) ? "" : "*");
      std::cout << "\n";
    };
    auto x = [&] { return D(torch::randn({8, 6})); };
    probe("split", [&] { auto p = torch::split(x(), 3, 1); return p[0] * 2 + p[1]; });
    probe("split_with_sizes", [&] { auto p = torch::split_with_sizes(x(), {2, 4}, 1); return p[1].sum(1) + p[0].sum(1); });
    probe("chunk", [&] { auto p = torch::chunk(x(), 2, 0); return p[0] + p[1]; });
    probe("narrow", [&] { return torch::narrow(x(), 1, 1, 3); });
    probe("unbind", [&] { auto p = torch::unbind(x(), 0); return p[0] + p[3]; });
    probe("cat", [&] { return torch::cat({x(), x()}, 1); });
    probe("stack", [&] { return torch::stack({x(), x()}, 1); });
    probe("repeat", [&] { return x().repeat({2, 1}); });
    probe("unflatten", [&] { return x().unflatten(1, {2, 3}); });
    probe("flatten", [&] { return D(torch::randn({2, 3, 4})).flatten(1); });
    probe("contiguous", [&] { return x().t().contiguous(); });
    probe("clone", [&] { return x().clone(); });
    probe("prod.dim", [&] { return x().prod(1); });
    probe("amax", [&] { return x().amax(1); });
    probe("max.dim", [&] { return std::get<0>(x().max(1)); });
    probe("min.dim", [&] { return std::get<0>(x().min(1)); });
    probe("max", [&] { return x().max(); });
    probe("var", [&] { return x().var(1); });
    probe("var_unb", [&] { return x().var(); });
    probe("std", [&] { return x().std(1, false); });
    probe("var_mean", [&] { auto r = torch::var_mean(x(), 1); return std::get<0>(r) + std::get<1>(r); });
    probe("norm", [&] { return x().norm(2, {1}); });
    probe("norm_full", [&] { return x().norm(); });
    probe("linalg_vector_norm", [&] { return torch::linalg_vector_norm(x(), 2, {1}, false, c10::nullopt); });
    probe("cumsum", [&] { return x().cumsum(1); });
    probe("softmax", [&] { return x().softmax(1); });
    probe("log_softmax", [&] { return x().log_softmax(1); });
    probe("logsumexp", [&] { return x().logsumexp({1}); });
    probe("topk", [&] { return std::get<0>(x().topk(2, 1)); });
    probe("argmax", [&] { return x().argmax(1).to(torch::kFloat); });
    probe("sort", [&] { return std::get<0>(x().sort(1)); });
    probe("dot", [&] { return torch::dot(D(torch::randn({5})), D(torch::randn({5}))); });
    probe("matmul11", [&] { return torch::matmul(D(torch::randn({5})), D(torch::randn({5}))); });
    probe("matmul21", [&] { return torch::matmul(D(torch::randn({4, 5})), D(torch::randn({5}))); });
    probe("matmul22", [&] { return torch::matmul(D(torch::randn({4, 5})), D(torch::randn({5, 3}))); });
    probe("matmul32", [&] { return torch::matmul(D(torch::randn({2, 4, 5})), D(torch::randn({5, 3}))); });
    probe("matmul33", [&] { return torch::matmul(D(torch::randn({2, 4, 5})), D(torch::randn({2, 5, 3}))); });
    probe("matmul44", [&] { return torch::matmul(D(torch::randn({2, 3, 4, 5})), D(torch::randn({2, 3, 5, 6}))); });
    probe("einsum_bmm", [&] { return torch::einsum("bij,bjk->bik", {D(torch::randn({2, 3, 4})), D(torch::randn({2, 4, 5}))}); });
    probe("einsum_attn", [&] { return torch::einsum("bhqd,bhkd->bhqk", {D(torch::randn({2, 2, 3, 4})), D(torch::randn({2, 2, 5, 4}))}); });
    probe("einsum_mm", [&] { return torch::einsum("ij,jk->ik", {D(torch::randn({3, 4})), D(torch::randn({4, 5}))}); });
    probe("linear", [&] { return torch::nn::functional::linear(D(torch::randn({2, 3, 4})), D(torch::randn({5, 4})), D(torch::randn({5}))); });
    probe("embedding", [&] { return torch::embedding(D(torch::randn({10, 4})), D(torch::randint(10, {3, 5}), false)); });
    probe("layer_norm", [&] { return torch::layer_norm(D(torch::randn({2, 3, 4})), {4}, D(torch::randn({4})), D(torch::randn({4}))); });
    probe("rms_norm", [&] { auto v = D(torch::randn({2, 3, 4})); return v * torch::rsqrt(v.pow(2).mean(-1, true) + 1e-6) * D(torch::randn({4})); });
    probe("dropout", [&] { return torch::dropout(x(), 0.5, true); });
    probe("gelu", [&] { return torch::gelu(x()); });
    probe("gelu_tanh", [&] { return torch::gelu(x(), "tanh"); });
    probe("silu", [&] { return torch::silu(x()); });
    probe("tanh", [&] { return torch::tanh(x()); });
    probe("relu", [&] { return torch::relu(x()); });
    probe("nll_loss", [&] { return torch::nll_loss(x().log_softmax(1), D(torch::randint(6, {8}), false)); });
    probe("cross_entropy", [&] { return torch::nn::functional::cross_entropy(x(), D(torch::randint(6, {8}), false)); });
    probe("cross_entropy3d", [&] { return torch::nn::functional::cross_entropy(D(torch::randn({4, 6, 5})), D(torch::randint(6, {4, 5}), false)); });
    probe("cross_entropy_ls", [&] { return torch::nn::functional::cross_entropy(x(), D(torch::randint(6, {8}), false), torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(0.1)); });
    probe("mse_loss", [&] { return torch::mse_loss(x(), x()); });
    probe("sdpa", [&] { auto q = D(torch::randn({2, 2, 3, 4})); return std::get<0>(at::_scaled_dot_product_attention(q, D(torch::randn({2, 2, 5, 4})), D(torch::randn({2, 2, 5, 4})))); });
    probe("sdpa_causal", [&] { auto q = D(torch::randn({2, 2, 3, 4})); return std::get<0>(at::_scaled_dot_product_attention(q, D(torch::randn({2, 2, 3, 4})), D(torch::randn({2, 2, 3, 4})), {}, 0.0, false, true)); });
    auto opt_probe = [&](const std::string& title, std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor>)> make) {
      auto w = D(torch::randn({4, 3}));
      auto opt = make({w});
      Log log;
      try {
        ScopedOpObserver s(&log);
        for (int i = 0; i < 2; ++i) {
          opt->zero_grad();
          log.names.push_back("--bw--");
          (w * w).sum().backward();
          log.names.push_back("--step--");
          opt->step();
        }
      } catch (const std::exception& e) {
        log.names.push_back(std::string("ERROR ") + std::string(e.what()).substr(0, 300));
      }
      std::set<std::string> uniq(log.names.begin(), log.names.end());
      std::cout << "== " << title << ":";
      for (auto& n : uniq) std::cout << " " << n << (n.rfind("--", 0) == 0 || has_rule.count(n) || has_rule.count(n.substr(0, n.find('.'))) ? "" : "*");
      std::cout << "\n";
    };
    using namespace torch::optim;
    opt_probe("SGD", [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true)); });
    opt_probe("SGDdamp", [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.1).momentum(0.9).dampening(0.1)); });
    opt_probe("Adam", [](auto p) { return std::make_unique<Adam>(p, AdamOptions(0.1).weight_decay(0.01)); });
    opt_probe("Adam_ams", [](auto p) { return std::make_unique<Adam>(p, AdamOptions(0.1).amsgrad(true)); });
    opt_probe("AdamW", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions(0.1)); });
    opt_probe("AdamW_ams", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions(0.1).amsgrad(true)); });
    opt_probe("Adagrad", [](auto p) { return std::make_unique<Adagrad>(p, AdagradOptions(0.1)); });
    opt_probe("RMSprop", [](auto p) { return std::make_unique<RMSprop>(p, RMSpropOptions(0.1).momentum(0.9).centered(true)); });
  });
}
