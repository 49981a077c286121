// Model, mesh and plan parsing. See plan_config.h.
#include "planner/plan_config.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "layout/layout_error.h"
#include "layout/shape_text.h"

namespace dtensor::planner {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

int64_t positive_int(const std::string& key, const std::string& v) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || n < 1) throw std::invalid_argument(key + "=" + v + ": expected a positive integer");
  return n;
}

ModelConfig preset(const std::string& name) {
  ModelConfig m;
  if (name == "transformer") {
    m.kind = ModelKind::kExampleTransformer;
    m.layers = 2, m.dim = 16, m.ffn = 64, m.heads = 4, m.kv_heads = 4, m.vocab = 8, m.seq = 8, m.batch = 8;
    m.dtype = "float32";
  } else if (name == "llama") {
    m.kind = ModelKind::kLlama;
  } else if (name == "llama-70b") {
    m.layers = 80, m.dim = 8192, m.ffn = 28672, m.heads = 64, m.kv_heads = 8, m.vocab = 128256, m.seq = 4096;
    m.batch = 4096, m.dtype = "bfloat16";  // 16M tokens per step, as Llama 3
  } else if (name == "llama-8b") {
    m.layers = 32, m.dim = 4096, m.ffn = 14336, m.heads = 32, m.kv_heads = 8, m.vocab = 128256, m.seq = 4096;
    m.batch = 256, m.dtype = "bfloat16";
  } else {
    throw std::invalid_argument("unknown model '" + name +
                                "' (presets: transformer, llama, llama-8b, llama-70b; add ':key=value,...')");
  }
  return m;
}

}  // namespace

int64_t ModelConfig::element_size() const {
  if (dtype == "float32") return 4;
  if (dtype == "bfloat16" || dtype == "float16") return 2;
  if (dtype == "float64") return 8;
  throw std::invalid_argument("dtype " + dtype + ": expected float32, bfloat16, float16 or float64");
}

std::string mixed_precision_name(const std::string& model_dtype) {
  return model_dtype == "bfloat16" ? "bf16" : model_dtype == "float16" ? "fp16" : "";
}

std::string mixed_precision_dtype(const std::string& name) { return name == "bf16" ? "bfloat16" : "float16"; }

int64_t ModelConfig::parameter_count() const {
  if (kind == ModelKind::kExampleTransformer) {
    const int64_t block = 4 * dim * dim + 2 * (4 * dim * dim) + 4 * dim + dim + 4 * dim;  // attn, ffn + biases, 2 norms
    return vocab * dim + seq * dim + layers * block + 2 * dim + dim * vocab;  // max_seq_len = seq
  }
  const int64_t kv_dim = dim / heads * kv_heads;
  const int64_t block = 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * ffn + 2 * dim;
  return vocab * dim + layers * block + dim + dim * vocab;
}

std::string ModelConfig::to_string() const {
  std::ostringstream out;
  out << (kind == ModelKind::kExampleTransformer ? "transformer" : "llama") << ":layers=" << layers << ",dim=" << dim;
  if (kind == ModelKind::kLlama) out << ",ffn=" << ffn;
  out << ",heads=" << heads;
  if (kind == ModelKind::kLlama) out << ",kv_heads=" << kv_heads;
  out << ",vocab=" << vocab << ",seq=" << seq << ",batch=" << batch << ",dtype=" << dtype;
  if (kind == ModelKind::kLlama && !rope) out << ",rope=0";
  return out.str();
}

ModelConfig parse_model(const std::string& text) {
  const size_t colon = text.find(':');
  ModelConfig m = preset(text.substr(0, colon));
  if (colon == std::string::npos) return m;
  for (const std::string& kv : split(text.substr(colon + 1), ',')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("model entry '" + kv + "': expected key=value");
    const std::string key = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (key == "dtype") {
      m.dtype = v;
      m.element_size();  // validates
    } else if (key == "layers") {
      m.layers = positive_int(key, v);
    } else if (key == "dim") {
      m.dim = positive_int(key, v);
    } else if (key == "ffn") {
      m.ffn = positive_int(key, v);
    } else if (key == "heads") {
      m.heads = positive_int(key, v);
    } else if (key == "kv_heads") {
      m.kv_heads = positive_int(key, v);
    } else if (key == "vocab") {
      m.vocab = positive_int(key, v);
    } else if (key == "seq") {
      m.seq = positive_int(key, v);
    } else if (key == "batch") {
      m.batch = positive_int(key, v);
    } else if (key == "rope") {
      if (v != "0" && v != "1") throw std::invalid_argument("model key rope=" + v + ": expected 0 or 1");
      m.rope = v == "1";
    } else {
      throw std::invalid_argument("model key '" + key +
                                  "' unknown (keys: layers, dim, ffn, heads, kv_heads, vocab, seq, batch, dtype, rope)");
    }
  }
  if (m.kind == ModelKind::kExampleTransformer) m.ffn = 4 * m.dim, m.kv_heads = m.heads;
  if (m.dim % m.heads != 0) throw std::invalid_argument("model: dim " + std::to_string(m.dim) + " is not a multiple of heads " + std::to_string(m.heads));
  if (m.heads % m.kv_heads != 0) throw std::invalid_argument("model: heads " + std::to_string(m.heads) + " is not a multiple of kv_heads " + std::to_string(m.kv_heads));
  return m;
}

int64_t MeshConfig::world_size() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t MeshConfig::size_of(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return sizes[i];
  }
  return 1;
}

std::string MeshConfig::to_string() const {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i] + "=" + std::to_string(sizes[i]);
  return out;
}

MeshConfig parse_mesh(const std::string& text) {
  MeshShape shape;
  try {
    shape = parse_mesh_shape(text);  // the viewer's spelling too: "dp=2, tp=4", "dp:2"
  } catch (const LayoutError& e) {
    throw std::invalid_argument("mesh '" + text + "': " + e.what());
  }
  if (!shape.has_dim_names()) throw std::invalid_argument("mesh '" + text + "': name the dims, e.g. dp=1024,tp=8");
  const std::vector<std::string> order = {"pp", "rep", "dp", "tp"};
  size_t next = 0;  // the dims must follow `order`
  for (const std::string& name : shape.dim_names()) {
    auto it = std::find(order.begin() + static_cast<std::ptrdiff_t>(next), order.end(), name);
    if (std::find(order.begin(), order.end(), name) == order.end()) {
      throw std::invalid_argument("mesh dim '" + name + "': the planner knows pp, rep, dp and tp");
    }
    if (it == order.end()) {
      throw std::invalid_argument("mesh '" + text + "': order the dims pp, rep, dp, tp (outermost first), e.g. pp=8,dp=64,tp=8");
    }
    next = static_cast<size_t>(it - order.begin()) + 1;
  }
  return MeshConfig{shape.dim_names(), shape.shape()};
}

const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam: return "adam";
    case Optimizer::kSgdMomentum: return "sgd-momentum";
    case Optimizer::kSgd: return "sgd";
  }
  return "?";
}

std::string PlanConfig::to_string() const {
  const std::string ac = checkpoint_ops ? "op" : checkpoint_every == 1 ? "full" : std::to_string(checkpoint_every);
  return mesh.to_string() + (sequence_parallel ? ",sp" : ",nosp") + ",micro=" + std::to_string(micro_batch) + "," +
         optimizer_name(optimizer) + (zero1 ? ",zero1" : "") + (fsdp ? ",fsdp" : "") +
         (checkpoint_ops || checkpoint_every > 0 ? ",ac=" + ac : "") +
         (virtual_stages > 1 ? ",v=" + std::to_string(virtual_stages) : "") +
         (mixed_precision.empty() ? "" : ",mp=" + mixed_precision);
}

std::string PlanConfig::checkpointing() const {
  if (checkpoint_ops) return "op";
  if (checkpoint_every == 0) return "none";
  return checkpoint_every == 1 ? "full" : "every " + std::to_string(checkpoint_every);
}

void set_checkpointing(PlanConfig& p, const std::string& mode) {
  p.checkpoint_ops = mode == "op";
  if (mode == "none" || mode == "op" || mode == "full") {
    p.checkpoint_every = mode == "full" ? 1 : 0;
  } else if (!mode.empty() && mode.find_first_not_of("0123456789") == std::string::npos) {
    p.checkpoint_every = positive_int("ac", mode);
  } else {
    throw std::invalid_argument("ac=" + mode + ": expected none, full, op or N (every N-th layer)");
  }
}

PlanConfig parse_plan(const MeshConfig& mesh, const std::string& text) {
  PlanConfig p;
  p.mesh = mesh;
  for (const std::string& w : split(text, ',')) {
    if (w == "sp") {
      p.sequence_parallel = true;
    } else if (w == "nosp") {
      p.sequence_parallel = false;
    } else if (w == "adam") {
      p.optimizer = Optimizer::kAdam;
    } else if (w == "sgd-momentum") {
      p.optimizer = Optimizer::kSgdMomentum;
    } else if (w == "sgd") {
      p.optimizer = Optimizer::kSgd;
    } else if (w == "zero1") {
      p.zero1 = true;
    } else if (w == "nozero") {
      p.zero1 = false;
    } else if (w == "fsdp") {
      p.fsdp = true;
    } else if (w == "nofsdp") {
      p.fsdp = false;
    } else if (w.rfind("micro=", 0) == 0) {
      p.micro_batch = positive_int("micro", w.substr(6));
    } else if (w.rfind("ac=", 0) == 0) {
      set_checkpointing(p, w.substr(3));
    } else if (w.rfind("v=", 0) == 0) {
      p.virtual_stages = positive_int("v", w.substr(2));
    } else if (w.rfind("mp=", 0) == 0) {
      const std::string dtype = w.substr(3);
      if (dtype != "bf16" && dtype != "fp16" && dtype != "none") {
        throw std::invalid_argument("mp=" + dtype + ": expected bf16, fp16 or none");
      }
      p.mixed_precision = dtype == "none" ? "" : dtype;
    } else {
      throw std::invalid_argument("plan option '" + w + "' unknown (sp, nosp, adam, sgd-momentum, sgd, micro=N, zero1, nozero, fsdp, nofsdp, ac=none|full|op|N, v=N, mp=bf16|fp16|none)");
    }
  }
  return p;
}

std::string plan_problem(const ModelConfig& m, const PlanConfig& p) {
  const int64_t tp = p.mesh.size_of("tp"), dp = p.mesh.size_of("dp") * p.mesh.size_of("rep");
  auto need = [&](int64_t what, const char* name) -> std::string {
    if (what % tp == 0) return "";
    return "tp=" + std::to_string(tp) + " does not divide " + name + "=" + std::to_string(what);
  };
  for (const std::string& s : {need(m.heads, "heads"), need(m.kv_heads, "kv_heads"), need(m.ffn, "ffn"),
                               need(m.vocab, "vocab"), need(m.dim, "dim")}) {
    if (!s.empty()) return s;
  }
  if (p.sequence_parallel && tp > 1 && m.seq % tp != 0) return "sp: tp=" + std::to_string(tp) + " does not divide seq=" + std::to_string(m.seq);
  if (p.fsdp && p.zero1) return "fsdp shards the optimizer state already: drop zero1";
  if (!p.mixed_precision.empty()) {
    const std::string dtype = mixed_precision_dtype(p.mixed_precision);
    if (!p.fsdp) return "mp=" + p.mixed_precision + ": mixed precision is fully_shard's policy: add fsdp";
    if (m.kind != ModelKind::kLlama) return "mp=" + p.mixed_precision + ": only the Llama step program trains in mixed precision";
    if (m.dtype != dtype) {
      return "mp=" + p.mixed_precision + " computes in " + dtype + ", the model's dtype is " + m.dtype + ": set dtype=" + dtype;
    }
  }
  if (p.mesh.size_of("rep") > 1 && !p.fsdp) return "rep replicates FSDP's shards (HSDP): add fsdp";
  if (m.batch % (dp * p.micro_batch) != 0) {
    return std::string(p.mesh.size_of("rep") > 1 ? "rep*dp*micro=" : "dp*micro=") + std::to_string(dp * p.micro_batch) +
           " does not divide batch=" + std::to_string(m.batch);
  }
  const int64_t pp = p.mesh.size_of("pp"), v = p.virtual_stages, micro_steps = m.batch / (dp * p.micro_batch);
  if (v > 1 && pp == 1) return "v=" + std::to_string(v) + " interleaves pipeline stages: add a pp mesh dim";
  if (m.layers % (pp * v) != 0) {
    return "pp*v=" + std::to_string(pp * v) + " does not divide layers=" + std::to_string(m.layers);
  }
  if (pp > 1 && micro_steps < pp) {
    return "pp=" + std::to_string(pp) + " needs at least " + std::to_string(pp) + " micro-batches per step, the step has " +
           std::to_string(micro_steps) + " (batch / dp / micro)";
  }
  if (v > 1 && micro_steps % pp != 0) {
    return "interleaved 1F1B needs micro-batches (" + std::to_string(micro_steps) + ") a multiple of pp=" + std::to_string(pp);
  }
  return "";
}

}  // namespace dtensor::planner
