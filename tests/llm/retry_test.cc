// Retry-After parsing and the classification of HTTP answers.
#include "kforge/llm/retry.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;

TEST(RetryTest, ParsesRetryAfterSecondsAndDates) {
  EXPECT_EQ(ParseRetryAfter("2"), milliseconds(2000));
  EXPECT_EQ(ParseRetryAfter(" 0.5 "), milliseconds(500));
  EXPECT_EQ(ParseRetryAfter("0"), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), milliseconds(0));  // in the past
  EXPECT_FALSE(ParseRetryAfter("soon").has_value());
  EXPECT_FALSE(ParseRetryAfter("-3").has_value());
  EXPECT_FALSE(ParseRetryAfter("").has_value());
}

HttpResponse Answer(int status, std::string body = "", std::string retry_after = "") {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!retry_after.empty()) r.headers.emplace_back("retry-after", std::move(retry_after));
  return r;
}

TEST(RetryTest, ClassifiesStatuses) {
  EXPECT_FALSE(ClassifyHttpStatus(Answer(200)).retry);
  for (int status : {408, 409, 429, 500, 502, 503, 504, 529}) {
    EXPECT_TRUE(ClassifyHttpStatus(Answer(status)).retry) << status;
  }
  for (int status : {400, 401, 403, 404, 422}) {
    EXPECT_FALSE(ClassifyHttpStatus(Answer(status)).retry) << status;
  }
  EXPECT_TRUE(ClassifyHttpStatus(Answer(400, R"({"error":"Model is Overloaded"})")).retry);
  EXPECT_FALSE(ClassifyHttpStatus(Answer(429, R"({"error":{"type":"insufficient_quota"}})")).retry);
  EXPECT_EQ(ClassifyHttpStatus(Answer(429, "", "3")).retry_after, milliseconds(3000));
  HttpResponse ms = Answer(429);
  ms.headers.emplace_back("retry-after-ms", "250");
  EXPECT_EQ(ClassifyHttpStatus(ms).retry_after, milliseconds(250));
}

}  // namespace
}  // namespace kforge::llm
