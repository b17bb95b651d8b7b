// Escaping for the HTML report. Everything that comes from a run (task names, candidate sources,
// verdict messages, diagnostics, LLM advice, profile text) is untrusted and goes through one of
// these before it reaches a page.
#ifndef KFORGE_REPORT_HTML_ESCAPE_H_
#define KFORGE_REPORT_HTML_ESCAPE_H_

#include <string>
#include <string_view>

namespace kforge::report {

// Text for element content or a quoted attribute value: & < > " ' become character references.
// Bytes that are not valid UTF-8 become U+FFFD, and control characters other than tab, newline
// and carriage return are dropped, so that no input can change how the page is parsed.
std::string EscapeHtml(std::string_view text);
// The same, appended to `out` (no temporary string: the report's pages escape much text).
void AppendEscapedHtml(std::string& out, std::string_view text);

// A JSON document made safe to place inside <script type="application/json">: '<', '>' and '&'
// become \u003c, \u003e and \u0026 (so "</script>" or "<!--" cannot end or change the element),
// as do U+2028 and U+2029. The result parses as the same JSON.
std::string JsonForScript(std::string_view json);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_HTML_ESCAPE_H_
