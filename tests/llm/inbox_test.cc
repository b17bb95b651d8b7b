// The inbox provider: exit mode, wait mode, and consistent resumption.
#include "kforge/llm/inbox.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "scripted_provider.h"
#include "temp_dir.h"

namespace kforge::llm {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Request Prompt(const std::string& text) {
  Request r;
  r.messages = {Message::System("You are a kernel engineer."), Message::User(text)};
  r.max_tokens = 1000;
  return r;
}

std::unique_ptr<Provider> Inbox(const fs::path& dir, bool wait) {
  InboxOptions options;
  options.dir = dir;
  options.wait = wait;
  options.poll_interval = milliseconds(20);
  options.settle_time = milliseconds(60);
  auto provider = NewInboxProvider(options);
  EXPECT_TRUE(provider.has_value()) << provider.error().ToString();
  return std::move(*provider);
}

TEST(InboxTest, ExitModeWritesThePromptAndSaysWhereTheAnswerGoes) {
  TempDir dir;
  auto inbox = Inbox(dir.path(), false);
  Request request = Prompt("Write a ReLU kernel.");
  Message& user = request.messages[1];
  user.parts.push_back(ContentPart::ImageBase64("image/png", "iVBORw0KGgo="));
  auto first = inbox->Complete(request, CallOptions{});
  ASSERT_FALSE(first.has_value());
  EXPECT_EQ(first.error().code, ErrorCode::kUnavailable);
  const fs::path answer = dir.path() / "0001-answer.md";
  EXPECT_NE(first.error().message.find("waiting for answer 1: write it to " + answer.string()),
            std::string::npos)
      << first.error().message;

  const std::string prompt = Slurp(dir.path() / "0001-prompt.md");
  EXPECT_NE(prompt.find("# KForge prompt 1"), std::string::npos);
  EXPECT_NE(prompt.find("## System\n\nYou are a kernel engineer."), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("## User\n\nWrite a ReLU kernel."), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("![image 1](0001-image-1.png)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(answer.string()), std::string::npos);
  EXPECT_EQ(Slurp(dir.path() / "0001-image-1.png"), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST(InboxTest, ResumesWithoutRewritingAnsweredPrompts) {
  TempDir dir;
  {
    auto inbox = Inbox(dir.path(), false);
    ASSERT_FALSE(inbox->Complete(Prompt("first"), {}).has_value());
  }
  const fs::path prompt = dir.path() / "0001-prompt.md";
  const auto written = fs::last_write_time(prompt);
  std::ofstream(dir.path() / "0001-answer.md") << "```cuda\n__global__ void relu() {}\n```\n";
  std::this_thread::sleep_for(milliseconds(20));

  // The same command again: prompt 1 is answered; the next prompt becomes number 2.
  auto inbox = Inbox(dir.path(), false);
  auto answered = inbox->Complete(Prompt("first"), {});
  ASSERT_TRUE(answered.has_value()) << answered.error().ToString();
  EXPECT_EQ(answered->text, "```cuda\n__global__ void relu() {}\n```\n");
  EXPECT_EQ(answered->raw_body, answered->text);
  EXPECT_TRUE(answered->usage.estimated);
  EXPECT_GT(answered->usage.input_tokens, 0);
  EXPECT_EQ(fs::last_write_time(prompt), written);  // not rewritten
  auto next = inbox->Complete(Prompt("second"), {});
  ASSERT_FALSE(next.has_value());
  EXPECT_NE(next.error().message.find("waiting for answer 2"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir.path() / "0002-prompt.md"));
  EXPECT_FALSE(fs::exists(dir.path() / "0003-prompt.md"));
}

TEST(InboxTest, IdenticalPromptsGetTheirOwnNumbersAcrossRuns) {
  TempDir dir;
  {
    auto inbox = Inbox(dir.path(), false);
    ASSERT_FALSE(inbox->Complete(Prompt("sample"), {}).has_value());
    ASSERT_FALSE(inbox->Complete(Prompt("sample"), {}).has_value());
  }
  std::ofstream(dir.path() / "0001-answer.md") << "one";
  std::ofstream(dir.path() / "0002-answer.md") << "two";
  auto inbox = Inbox(dir.path(), false);
  auto a = inbox->Complete(Prompt("sample"), {});
  auto b = inbox->Complete(Prompt("sample"), {});
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->text, "one");
  EXPECT_EQ(b->text, "two");
}

TEST(InboxTest, BlankAnswerFileIsStillWaiting) {
  TempDir dir;
  auto inbox = Inbox(dir.path(), false);
  ASSERT_FALSE(inbox->Complete(Prompt("q"), {}).has_value());
  std::ofstream(dir.path() / "0001-answer.md") << "  \n";
  auto again = Inbox(dir.path(), false)->Complete(Prompt("q"), {});
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("waiting for answer 1"), std::string::npos);
}

TEST(InboxTest, WaitModePollsUntilTheAnswerAppears) {
  TempDir dir;
  auto inbox = Inbox(dir.path(), true);
  std::thread person([&] {
    std::this_thread::sleep_for(milliseconds(200));
    std::ofstream(dir.path() / "0001-answer.md") << "the answer";
  });
  const auto start = Clock::now();
  auto answer = inbox->Complete(Prompt("q"), {});
  const auto waited = Clock::now() - start;
  person.join();
  ASSERT_TRUE(answer.has_value()) << answer.error().ToString();
  EXPECT_EQ(answer->text, "the answer");
  EXPECT_GE(waited, milliseconds(200 + 60));  // appeared, then settled
  EXPECT_LT(waited, milliseconds(2000));
}

TEST(InboxTest, WaitModeCanBeCancelled) {
  TempDir dir;
  auto inbox = Inbox(dir.path(), true);
  CallOptions options;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    options.cancel.Cancel();
  });
  auto answer = inbox->Complete(Prompt("q"), options);
  canceller.join();
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code, ErrorCode::kCancelled);
}

}  // namespace
}  // namespace kforge::llm
