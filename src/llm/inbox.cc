#include "kforge/llm/inbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "base64.h"
#include "kforge/core/activity.h"
#include "kforge/core/files.h"
#include "kforge/llm/fingerprint.h"

namespace kforge::llm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kMarker = "<!-- kforge-inbox v1 ";

std::string Number(int n) { return fmt::format("{:04d}", n); }

std::string ImageExtension(std::string_view media_type) {
  if (media_type == "image/jpeg") return "jpg";
  if (media_type == "image/webp") return "webp";
  if (media_type == "image/gif") return "gif";
  return "png";
}

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

// The first line of a prompt file: `<!-- kforge-inbox v1 prompt N fingerprint F -->`.
std::optional<std::string> FingerprintOfPromptFile(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.rfind(kMarker, 0) != 0) return std::nullopt;
  const std::size_t at = line.find("fingerprint ");
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + 12;
  const std::size_t end = line.find(' ', begin);
  return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

class InboxProvider : public Provider {
 public:
  explicit InboxProvider(InboxOptions options) : options_(std::move(options)) {}

  Status Scan() {
    KFORGE_RETURN_IF_ERROR(MakeDirs(options_.dir));
    std::error_code ec;
    for (const auto& item : fs::directory_iterator(options_.dir, ec)) {
      const std::string name = item.path().filename().string();
      if (name.size() != 14 || name.substr(4) != "-prompt.md") continue;
      int n = 0;
      const auto [ptr, err] = std::from_chars(name.data(), name.data() + 4, n);
      if (err != std::errc() || ptr != name.data() + 4) continue;
      auto fingerprint = FingerprintOfPromptFile(item.path());
      if (!fingerprint) continue;
      existing_[*fingerprint].push_back(n);
      next_number_ = std::max(next_number_, n + 1);
    }
    if (ec) return IoError(fmt::format("cannot read inbox {}: {}", options_.dir.string(), ec.message()));
    for (auto& [fingerprint, numbers] : existing_) std::sort(numbers.begin(), numbers.end());
    return Ok();
  }

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    const std::string fingerprint = RequestFingerprint(request, options_.model_id);
    int n = 0;
    {
      std::lock_guard lock(mu_);
      const std::size_t occurrence = occurrences_[fingerprint]++;
      auto& numbers = existing_[fingerprint];
      if (occurrence < numbers.size()) {
        n = numbers[occurrence];  // written by an earlier run: keep it as it is
      } else {
        n = next_number_++;
        KFORGE_RETURN_IF_ERROR(WritePrompt(n, fingerprint, request));
        numbers.push_back(n);
      }
    }
    const fs::path answer = AnswerPath(n);
    const fs::path prompt = PromptPath(n);
    if (!options_.wait) {
      auto text = ReadAnswer(answer);
      if (text) return MakeResponse(request, std::move(*text));
      return MakeError(ErrorCode::kUnavailable,
                       fmt::format("waiting for answer {}: write it to {} (the prompt is {})",
                                   n, answer.string(), prompt.string()));
    }
    spdlog::warn("waiting for answer {}: write it to {} (the prompt is {})", n, answer.string(),
                 prompt.string());
    return WaitForAnswer(n, request, options);
  }

  ProviderInfo Info() const override {
    return ProviderInfo{"inbox", options_.model_id, "human", options_.dir.string()};
  }

 private:
  fs::path PromptPath(int n) const { return options_.dir / (Number(n) + "-prompt.md"); }
  fs::path AnswerPath(int n) const { return options_.dir / (Number(n) + "-answer.md"); }

  Status WritePrompt(int n, const std::string& fingerprint, const Request& request) const {
    std::string md = fmt::format("{}prompt {} fingerprint {} -->\n", kMarker, n, fingerprint);
    md += fmt::format("# KForge prompt {}\n\n", n);
    md += fmt::format(
        "Give everything below the line to a chat model (or answer it yourself), then save the "
        "reply, exactly as written, to:\n\n    {}\n\n",
        AnswerPath(n).string());
    std::vector<std::string> settings;
    if (request.temperature) settings.push_back(fmt::format("temperature {}", *request.temperature));
    if (request.max_tokens) settings.push_back(fmt::format("at most {} tokens", *request.max_tokens));
    for (const auto& stop : request.stop) settings.push_back(fmt::format("stop at `{}`", stop));
    if (!settings.empty()) md += fmt::format("Settings: {}.\n\n", fmt::join(settings, ", "));
    md += "---\n";
    int image = 0;
    for (const auto& message : request.messages) {
      const std::string_view role = RoleName(message.role);
      md += fmt::format("\n## {}{}\n\n", static_cast<char>(std::toupper(role[0])), role.substr(1));
      for (const auto& part : message.parts) {
        if (!part.IsImage()) {
          md += part.text;
          md += "\n";
          continue;
        }
        ++image;
        if (!part.url.empty()) {
          md += fmt::format("![image {}]({})\n", image, part.url);
          continue;
        }
        const std::string file =
            fmt::format("{}-image-{}.{}", Number(n), image, ImageExtension(part.media_type));
        const auto bytes = Base64Decode(part.data_base64);
        if (!bytes) return InvalidArgument(fmt::format("image {} of prompt {} is not base64", image, n));
        KFORGE_RETURN_IF_ERROR(WriteFile(options_.dir / file, *bytes));
        md += fmt::format("![image {}]({})\n", image, file);
      }
    }
    return WriteFile(PromptPath(n), md);
  }

  // The answer, or nullopt while the file is missing or blank.
  static std::optional<std::string> ReadAnswer(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    auto text = ReadFile(path);
    if (!text || IsBlank(*text)) return std::nullopt;
    return std::move(*text);
  }

  Result<Response> WaitForAnswer(int n, const Request& request, const CallOptions& options) const {
    ScopedActivity activity(fmt::format("waiting for answer {}", n));
    const fs::path path = AnswerPath(n);
    std::optional<std::pair<std::uintmax_t, fs::file_time_type>> last;
    Clock::time_point stable_since = Clock::now();
    while (true) {
      std::error_code ec;
      if (fs::exists(path, ec)) {
        const auto size = fs::file_size(path, ec);
        const auto mtime = fs::last_write_time(path, ec);
        const std::pair<std::uintmax_t, fs::file_time_type> now_seen{size, mtime};
        if (!ec && size > 0) {
          if (last != now_seen) {
            last = now_seen;
            stable_since = Clock::now();
          } else if (Clock::now() - stable_since >= options_.settle_time) {
            if (auto text = ReadAnswer(path)) return MakeResponse(request, std::move(*text));
          }
        }
      }
      if (options.deadline && Clock::now() >= *options.deadline) {
        return TimeoutError(fmt::format("deadline passed waiting for answer {} at {}", n,
                                        path.string()));
      }
      const auto slice = last ? std::min(options_.poll_interval, options_.settle_time)
                              : options_.poll_interval;
      if (options.cancel.WaitFor(slice)) {
        return MakeError(ErrorCode::kCancelled,
                         fmt::format("cancelled while waiting for answer {}", n));
      }
    }
  }

  static Response MakeResponse(const Request& request, std::string text) {
    Response response;
    response.usage.input_tokens = request.EstimatePromptTokens();
    response.usage.output_tokens = static_cast<std::int64_t>(text.size() + 3) / 4;
    response.usage.estimated = true;
    response.finish_reason = "stop";
    response.model = "human";
    response.raw_body = text;
    response.text = std::move(text);
    return response;
  }

  const InboxOptions options_;
  std::mutex mu_;
  std::map<std::string, std::vector<int>> existing_;  // guarded by mu_: fingerprint -> numbers
  std::map<std::string, std::size_t> occurrences_;    // guarded by mu_: calls seen this run
  int next_number_ = 1;                               // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<Provider>> NewInboxProvider(InboxOptions options) {
  // Messages name absolute paths: the person reading them may be in another directory.
  std::error_code ec;
  options.dir = fs::absolute(options.dir, ec);
  if (ec) return IoError(fmt::format("inbox directory {}: {}", options.dir.string(), ec.message()));
  auto provider = std::make_unique<InboxProvider>(std::move(options));
  KFORGE_RETURN_IF_ERROR(provider->Scan());
  return std::unique_ptr<Provider>(std::move(provider));
}

}  // namespace kforge::llm
