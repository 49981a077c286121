// seeded_init: torch::nn's default initialisations drawn from one private generator.
#include "examples/models/seeded_init.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>

namespace dtensor::examples {

at::Generator make_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

namespace {

void init_module(torch::nn::Module& m, at::Generator& gen) {
  if (auto* lin = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(lin->weight.size(1)));
    lin->weight.uniform_(-bound, bound, gen);
    if (lin->bias.defined()) lin->bias.uniform_(-bound, bound, gen);
  } else if (auto* emb = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
    emb->weight.normal_(0.0, 1.0, gen);
  } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
    if (norm->weight.defined()) norm->weight.fill_(1.0);
    if (norm->bias.defined()) norm->bias.fill_(0.0);
  } else {
    for (auto& p : m.named_parameters(/*recurse=*/false)) p.value().normal_(0.0, 0.02, gen);
  }
}

}  // namespace

void seeded_init(torch::nn::Module& module, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = make_generator(seed);
  // include_self=false: usable from a constructor (no shared_from_this yet).
  init_module(module, gen);
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    init_module(*item.value(), gen);
  }
}

}  // namespace dtensor::examples
