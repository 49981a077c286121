// The calibration file parser and the nearest-shape matmul lookup. See
// calibration.h.
#include "planner/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace dtensor::planner {
namespace {

struct Line {
  int number;
  std::string text;
  std::vector<std::string> words;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("calibration line " + std::to_string(number) + " '" + text + "': " + what);
  }
  // Word i as a positive number.
  double number_at(size_t i) const {
    if (i >= words.size()) fail("expected " + std::to_string(i + 1) + " words, got " + std::to_string(words.size()));
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(words[i], &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != words[i].size() || !(v > 0) || !std::isfinite(v)) fail("'" + words[i] + "' is not a positive number");
    return v;
  }
  int64_t size_at(size_t i) const {
    const double v = number_at(i);
    if (v != std::floor(v)) fail("'" + words[i] + "' is not a whole number");
    return static_cast<int64_t>(v);
  }
  std::string rest() const {  // the text after the key
    const size_t start = text.find_first_not_of(" \t", text.find_first_of(" \t"));
    return start == std::string::npos ? "" : text.substr(start);
  }
};

// How far apart two sizes are for "the nearest measured shape": |log(a / b)|.
double log_ratio(int64_t a, int64_t b) {
  return std::fabs(std::log(static_cast<double>(std::max<int64_t>(a, 1)) / static_cast<double>(std::max<int64_t>(b, 1))));
}

}  // namespace

double Calibration::matmul_tflops(const std::string& dtype, int64_t m, int64_t n, int64_t k) const {
  const MatmulRate* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const MatmulRate& r : matmuls) {
    if (r.dtype != dtype) continue;
    const double d = log_ratio(r.m, m) + log_ratio(r.n, n) + log_ratio(r.k, k);
    if (d < best_distance) best_distance = d, best = &r;
  }
  if (best == nullptr) {
    throw std::invalid_argument("calibration of " + (gpu.empty() ? std::string("an unnamed GPU") : gpu) +
                                " has no " + dtype + " matmul; run tools/calibrate_gpu.sh again");
  }
  return best->tflops;
}

std::optional<double> Calibration::attention_tflops(const std::string& dtype, int64_t seq, int64_t head_dim,
                                                    bool forward) const {
  const AttentionRate* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const AttentionRate& r : attention) {
    if (r.dtype != dtype) continue;
    const double d = log_ratio(r.seq, seq) + log_ratio(r.head_dim, head_dim);
    if (d < best_distance) best_distance = d, best = &r;
  }
  if (best == nullptr) return std::nullopt;
  return forward ? best->forward_tflops : best->backward_tflops;
}

Calibration parse_calibration(const std::string& text) {
  Calibration c;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    Line line{number, raw.substr(0, raw.find('#')), {}};
    std::istringstream words(line.text);
    for (std::string w; words >> w;) line.words.push_back(w);
    if (line.words.empty()) continue;
    const std::string& key = line.words[0];
    if (key == "gpu") {
      c.gpu = line.rest();
    } else if (key == "source") {
      c.source = line.rest();
    } else if (key == "hbm_gbps") {
      c.hbm_gbps = line.number_at(1);
    } else if (key == "pointwise_gbps") {
      c.pointwise_gbps = line.number_at(1);
    } else if (key == "adam_us_per_mparam") {
      c.adam_us_per_mparam = line.number_at(1);
    } else if (key == "matmul") {
      if (line.words.size() != 6) line.fail("expected 'matmul DTYPE M N K TFLOPS'");
      c.matmuls.push_back({line.words[1], line.size_at(2), line.size_at(3), line.size_at(4), line.number_at(5)});
    } else if (key == "attention") {
      if (line.words.size() != 8) line.fail("expected 'attention DTYPE B H L D FORWARD_TFLOPS BACKWARD_TFLOPS'");
      c.attention.push_back({line.words[1], line.size_at(2), line.size_at(3), line.size_at(4), line.size_at(5),
                             line.number_at(6), line.number_at(7)});
    } else {
      line.fail("unknown key '" + key + "' (Note [Calibration file format] in planner/calibration.h)");
    }
  }
  return c;
}

}  // namespace dtensor::planner
