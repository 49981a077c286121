// Command-line flags: the spellings dtensor's programs accept and the errors,
// which name the flag.
#include "layout/flags.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtensor {
namespace {

struct Parsed {
  std::string name = "default";
  int64_t count = 0;
  int level = 3;
  double rate = 0;
  bool list = false;
  std::vector<std::string> pair, files;
};

Flags flags_for(Parsed& p) {
  Flags flags;
  flags.value("--name", &p.name)
      .value("--count", &p.count)
      .value("--level", &p.level)
      .value("--rate", &p.rate)
      .toggle("--list", &p.list)
      .custom("--pair", 2, [&](const std::vector<std::string>& v) { p.pair = v; })
      .positional([&](const std::vector<std::string>& v) {
        if (v[0] == "bad.json") throw std::invalid_argument("cannot use bad.json");
        p.files.push_back(v[0]);
      });
  return flags;
}

TEST(FlagsTest, ReadsValuesSwitchesAndPositionals) {
  Parsed p;
  std::string error;
  ASSERT_TRUE(flags_for(p).parse({"--name", "x", "--count=12", "--level", "-1", "--rate", "2.5",
                                  "--list", "--pair", "a", "b", "t.json"},
                                 error))
      << error;
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.count, 12);
  EXPECT_EQ(p.level, -1);
  EXPECT_EQ(p.rate, 2.5);
  EXPECT_TRUE(p.list);
  EXPECT_EQ(p.pair, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.files, std::vector<std::string>{"t.json"});
}

TEST(FlagsTest, ArgvSkipsTheProgramName) {
  Parsed p;
  std::string error;
  const char* argv[] = {"prog", "--count", "7"};
  ASSERT_TRUE(flags_for(p).parse(3, argv, error)) << error;
  EXPECT_EQ(p.count, 7);
}

TEST(FlagsTest, HelpStopsWithoutAnError) {
  Parsed p;
  std::string error = "stale";
  EXPECT_FALSE(flags_for(p).parse({"--count", "1", "-h"}, error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(flags_for(p).parse({"--help"}, error));
  EXPECT_EQ(error, "");
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  const std::pair<std::vector<std::string>, const char*> table[] = {
      {{"--bogus"}, "unknown flag --bogus"},
      {{"--name"}, "--name: missing value"},
      {{"--pair", "a"}, "--pair: needs 2 values"},
      {{"--pair=a"}, "--pair: takes 2 values"},
      {{"--count", "12abc"}, "--count: '12abc' is not a whole number"},
      {{"--count", ""}, "--count: '' is not a whole number"},
      {{"--level", "99999999999"}, "--level: '99999999999' is not a whole number"},
      {{"--rate", "fast"}, "--rate: 'fast' is not a number"},
      {{"bad.json"}, "cannot use bad.json"},
  };
  for (const auto& [args, want] : table) {
    SCOPED_TRACE(want);
    Parsed p;
    std::string error;
    EXPECT_FALSE(flags_for(p).parse(args, error));
    EXPECT_NE(error.find(want), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(Flags().parse({"t.json"}, error));  // no positional declared
  EXPECT_NE(error.find("unknown flag t.json"), std::string::npos) << error;
}

}  // namespace
}  // namespace dtensor
