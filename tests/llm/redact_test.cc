// The redaction utility: registered keys and credential-shaped text never survive.
#include "kforge/llm/redact.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

bool Leaks(const std::string& text, const std::string& secret) {
  return text.find(secret) != std::string::npos;
}

TEST(RedactTest, RegisteredSecretsAreReplacedEverywhere) {
  const std::string secret = "my-company-gateway-7f3a9c";
  RegisterSecret(secret);
  const std::string out = Redact("a " + secret + " b " + secret);
  EXPECT_FALSE(Leaks(out, secret));
  EXPECT_EQ(out, "a [REDACTED] b [REDACTED]");
  EXPECT_EQ(RedactRegisteredSecrets("x" + secret + "y"), "x[REDACTED]y");
}

TEST(RedactTest, ShortValuesAreNotRegistered) {
  RegisterSecret("abc");
  EXPECT_EQ(Redact("abc abc"), "abc abc");
}

TEST(RedactTest, CredentialShapedTextIsReplaced) {
  const std::string openai = "sk-proj-AbCdEfGh0123456789XyZ";
  const std::string anthropic = "sk-ant-api03-AbCdEfGh0123456789-XyZ_w";
  const std::string google = "AIzaSyD-0123456789abcdefghijklmnopqrstu";
  EXPECT_FALSE(Leaks(Redact("key " + openai + " end"), openai));
  EXPECT_FALSE(Leaks(Redact("x-api-key: " + anthropic), anthropic));
  EXPECT_FALSE(Leaks(Redact("Authorization: Bearer abc.def-ghi"), "abc.def-ghi"));
  EXPECT_FALSE(Leaks(Redact(R"({"Authorization": "Bearer tok123456789"})"), "tok123456789"));
  EXPECT_FALSE(Leaks(Redact("x-goog-api-key: secretvalue123"), "secretvalue123"));
  const std::string url =
      "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=" + google;
  const std::string redacted = Redact(url);
  EXPECT_FALSE(Leaks(redacted, google));
  EXPECT_EQ(redacted,
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key="
            "[REDACTED]");
  EXPECT_EQ(Redact("https://x/y?alt=sse&api_key=s3cr3t&z=1"), "https://x/y?alt=sse&api_key=[REDACTED]&z=1");
}

TEST(RedactTest, OrdinaryTextIsLeftAlone) {
  const std::string text =
      "task-0123456789abcdefghij compiled; monkey=3; authorization failed for user; risk-free";
  EXPECT_EQ(Redact(text), text);
}

}  // namespace
}  // namespace kforge::llm
