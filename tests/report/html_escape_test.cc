#include "kforge/report/html_escape.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kforge::report {
namespace {

TEST(HtmlEscape, EscapesMarkupCharacters) {
  EXPECT_EQ(EscapeHtml("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(EscapeHtml("plain text\n\tindented"), "plain text\n\tindented");
}

TEST(HtmlEscape, KeepsUtf8AndReplacesInvalidBytesAndControls) {
  EXPECT_EQ(EscapeHtml("µs ×2 — ✓"), "µs ×2 — ✓");
  EXPECT_EQ(EscapeHtml(std::string("a\xff" "b")), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(EscapeHtml(std::string("a\xC0\xBC" "b")), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");  // overlong '<'
  EXPECT_EQ(EscapeHtml(std::string("a\x00\x01\x1b" "b", 6)), "ab");
}

TEST(HtmlEscape, JsonForScriptCannotCloseTheElementAndStillParses) {
  const std::string json = R"({"name":"</script><script>alert(1)</script><!--","x":"a&b\u2028"})";
  const std::string safe = JsonForScript(json);
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(safe.find('>'), std::string::npos);
  EXPECT_EQ(safe.find('&'), std::string::npos);
  auto a = nlohmann::json::parse(json);
  auto b = nlohmann::json::parse(safe);
  EXPECT_EQ(a, b);
  const std::string raw_separator = "{\"s\":\"x\xE2\x80\xA8y\"}";
  EXPECT_EQ(JsonForScript(raw_separator), "{\"s\":\"x\\u2028y\"}");
}

}  // namespace
}  // namespace kforge::report
