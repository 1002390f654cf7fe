// The algorithm registry and UROCE_CC_PARAMS parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cc/cc.h"

namespace uroce::cc {
namespace {

TEST(CcRegistry, KnowsEveryAlgorithm) {
  const std::vector<std::string> names = algorithm_names();
  for (const char* n : {"none", "dcqcn", "hpcc", "timely", "swift", "dctcp", "example_aimd"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const std::string& n : names) EXPECT_NE(make(n, {}, 100'000'000'000ull), nullptr) << n;
}

TEST(CcRegistry, AnUnknownNameListsTheKnownOnes) {
  try {
    (void)make("dctcp2", {}, 1);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'dctcp2'"), std::string::npos) << m;
    EXPECT_NE(m.find("dcqcn"), std::string::npos) << m;
  }
}

TEST(CcParams, ParsesKeyValueLists) {
  EXPECT_EQ(parse_params(""), Params{});
  EXPECT_EQ(parse_params("rpg_ai_rate=10"), (Params{{"rpg_ai_rate", 10}}));
  EXPECT_EQ(parse_params(" rpg_ai_rate = 10 , dce_tcp_g=1000,min_time_between_cnps=0.5 "),
            (Params{{"rpg_ai_rate", 10}, {"dce_tcp_g", 1000}, {"min_time_between_cnps", 0.5}}));
  EXPECT_EQ(parse_params("eta=0.9,"), (Params{{"eta", 0.9}})) << "a trailing comma is harmless";
  EXPECT_EQ(parse_params("w_ai=1e3"), (Params{{"w_ai", 1000}}));
}

void expect_bad(const std::string& text, const std::string& names) {
  try {
    (void)parse_params(text);
    ADD_FAILURE() << "accepted " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  }
}

TEST(CcParams, BadItemsAreNamed) {
  expect_bad("rpg_ai_rate", "'rpg_ai_rate'");
  expect_bad("rpg_ai_rate=fast", "'rpg_ai_rate'");
  expect_bad("rpg_ai_rate=5x", "'rpg_ai_rate'");
  expect_bad("rpg_ai_rate=", "'rpg_ai_rate'");
  expect_bad("=5", "'=5'");
  expect_bad("a=1,,b=2", "empty item");
  expect_bad("a=1,a=2", "'a'");
}

}  // namespace
}  // namespace uroce::cc
