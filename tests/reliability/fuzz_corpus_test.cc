// Runs the fuzz entry points (fuzz/fuzz_entries.h) over the checked-in
// corpora with the normal compiler: every input must pass the entries'
// checks (an entry aborts on a finding, which fails this test with the
// input printed). Crash reproducers found by fuzz/build.sh go into the corpus.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_entries.h"

namespace dtensor::fuzz {
namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Entry>
int run_corpus(const std::string& dir, Entry entry) {
  const std::vector<std::string> files = files_in(dir);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string data = slurp(path);
    EXPECT_EQ(entry(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0);
    // Every prefix too: truncated inputs are the commonest malformed ones.
    for (size_t n = 0; n < data.size(); n += std::max<size_t>(1, data.size() / 16)) {
      EXPECT_EQ(entry(reinterpret_cast<const uint8_t*>(data.data()), n), 0);
    }
  }
  return static_cast<int>(files.size());
}

TEST(FuzzCorpusTest, PlacementParserCorpus) {
  const int n = run_corpus("fuzz/corpus/placement", placement_parser);
  EXPECT_GE(n, 10) << "corpus missing from runfiles";
  std::printf("placement corpus: %d files\n", n);
}

TEST(FuzzCorpusTest, TraceJsonCorpus) {
  const int n = run_corpus("fuzz/corpus/trace_json", trace_json);
  EXPECT_GE(n, 10) << "corpus missing from runfiles";
  std::printf("trace_json corpus: %d files\n", n);
}

}  // namespace
}  // namespace dtensor::fuzz
