// Parsing of the analysis agent's JSON recommendations.
#include "kforge/prompt/recommendation.h"

#include <gtest/gtest.h>

#include <string>

namespace kforge {
namespace {

const char* kJson = R"json({"recommendations": [
  {"bottleneck": "DRAM bandwidth",
   "evidence": "87% of peak DRAM throughput",
   "changes": ["load float4", "fuse the bias add"],
   "expected_gain": "1.2x"},
  {"bottleneck": "occupancy",
   "evidence": ["61% achieved occupancy", "128 registers per thread"],
   "changes": "cap registers with __launch_bounds__(256, 2)",
   "expected_gain": 1.1}
]})json";

TEST(PromptParseRecommendations, JsonFenceInProse) {
  std::string answer = "The kernel is bandwidth bound.\n\n```json\n" + std::string(kJson) +
                       "\n```\n\nThe second change matters less.";
  auto recs = ParseRecommendations(answer);
  ASSERT_TRUE(recs) << recs.error().message;
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ((*recs)[0].bottleneck, "DRAM bandwidth");
  EXPECT_EQ((*recs)[0].changes, (std::vector<std::string>{"load float4", "fuse the bias add"}));
  EXPECT_EQ((*recs)[0].expected_gain, "1.2x");
  EXPECT_EQ((*recs)[1].evidence, "61% achieved occupancy; 128 registers per thread");
  EXPECT_EQ((*recs)[1].changes,
            (std::vector<std::string>{"cap registers with __launch_bounds__(256, 2)"}));
  EXPECT_EQ((*recs)[1].expected_gain, "1.1");
}

TEST(PromptParseRecommendations, JsonInProseWithoutFence) {
  std::string answer =
      "Looking at the loop {i = 0..n} and the profile, here is my advice: " + std::string(kJson) +
      " Hope this helps [1].";
  auto recs = ParseRecommendations(answer);
  ASSERT_TRUE(recs) << recs.error().message;
  EXPECT_EQ(recs->size(), 2u);
}

TEST(PromptParseRecommendations, UntaggedFenceAndBareList) {
  auto recs = ParseRecommendations(
      "```\n[{\"bottleneck\": \"latency\", \"evidence\": \"\", \"changes\": [\"unroll by 4\"], "
      "\"expected_gain\": \"small\"}]\n```");
  ASSERT_TRUE(recs) << recs.error().message;
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].changes[0], "unroll by 4");
}

TEST(PromptParseRecommendations, SingleObject) {
  auto recs = ParseRecommendations(
      "{\"bottleneck\": \"launch overhead\", \"evidence\": \"3 kernels of 2 us\", "
      "\"changes\": [\"fuse the three kernels\"], \"expected_gain\": \"2x\"}");
  ASSERT_TRUE(recs) << recs.error().message;
  EXPECT_EQ((*recs)[0].bottleneck, "launch overhead");
}

TEST(PromptParseRecommendations, MissingChangesIsFeedback) {
  auto recs = ParseRecommendations(
      "```json\n{\"recommendations\": [{\"bottleneck\": \"bandwidth\", \"evidence\": \"x\", "
      "\"expected_gain\": \"1.5x\"}]}\n```");
  ASSERT_FALSE(recs);
  EXPECT_EQ(recs.error().code, ErrorCode::kParse);
  EXPECT_NE(recs.error().message.find("recommendation 1 has no \"changes\""), std::string::npos)
      << recs.error().message;
  EXPECT_NE(recs.error().message.find("```json"), std::string::npos);
}

TEST(PromptParseRecommendations, EmptyChangesIsFeedback) {
  auto recs = ParseRecommendations(
      "{\"recommendations\": [{\"bottleneck\": \"bandwidth\", \"evidence\": \"x\", "
      "\"changes\": [], \"expected_gain\": \"1.5x\"}]}");
  ASSERT_FALSE(recs);
  EXPECT_NE(recs.error().message.find("proposes no change"), std::string::npos);
}

TEST(PromptParseRecommendations, NoJsonIsFeedback) {
  auto recs = ParseRecommendations("The kernel looks fine to me; maybe unroll the loop.");
  ASSERT_FALSE(recs);
  EXPECT_NE(recs.error().message.find("contains no valid JSON object"), std::string::npos);
}

TEST(PromptParseRecommendations, InvalidJsonIsFeedback) {
  auto recs = ParseRecommendations(
      "```json\n{\"recommendations\": [{\"bottleneck\": \"bandwidth\",}]}\n```");
  ASSERT_FALSE(recs);
  EXPECT_EQ(recs.error().code, ErrorCode::kParse);
}

TEST(PromptParseRecommendations, CanonicalJsonRoundTrips) {
  auto recs = ParseRecommendations(kJson);
  ASSERT_TRUE(recs);
  const std::string json = RecommendationsToJson(*recs);
  EXPECT_EQ(json.rfind("{\"recommendations\":[{\"bottleneck\":\"DRAM bandwidth\",\"evidence\":", 0),
            0u)
      << json;
  auto again = ParseRecommendations(json);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *recs);
}

}  // namespace
}  // namespace kforge
