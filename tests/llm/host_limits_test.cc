// max_concurrency and requests_per_minute hold for every kforge process of a host together: two
// processes (llm_limits_client, building their providers from one registry entry as `kforge run`
// does) call one local server at once. Before, each process kept its own limits: the server saw
// 2 requests in flight against a limit of 1, and twice the request rate.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.h"
#include "test_server.h"

extern char** environ;

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;
using testing::TestServer;
using Clock = std::chrono::steady_clock;

constexpr const char* kOkBody =
    R"({"model":"m","choices":[{"message":{"content":"fine"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":3,"completion_tokens":1}})";

// Starts the client with the cache folder of the test (where the host-wide state lives).
pid_t StartClient(const std::filesystem::path& registry, const std::filesystem::path& cache,
                  int calls) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("KFORGE_CACHE_DIR=")) continue;
    env_strings.emplace_back(*e);
  }
  env_strings.push_back("KFORGE_CACHE_DIR=" + cache.string());
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string exe = LLM_LIMITS_CLIENT;
  std::string reg = registry.string();
  std::string id = "shared";
  std::string n = std::to_string(calls);
  char* argv[] = {exe.data(), reg.data(), id.data(), n.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, env.data()) != 0) return -1;
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::filesystem::path Registry(const TempDir& dir, const std::string& url,
                               const std::string& limits) {
  const auto path = dir.path() / "models.toml";
  std::ofstream(path) << "[[models]]\nid = \"shared\"\nprovider = \"openai_compatible\"\n"
                      << "endpoint = \"" << url << "/v1\"\n" << limits << "\n";
  return path;
}

TEST(HostLimitsTest, MaxConcurrencyHoldsAcrossTwoProcesses) {
  TestServer ts;
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    const int now = ++in_flight;
    ++hits;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(milliseconds(150));
    --in_flight;
    res.set_content(kOkBody, "application/json");
  });
  TempDir dir;
  const auto registry = Registry(dir, ts.url(), "max_concurrency = 1");
  const pid_t a = StartClient(registry, dir.path() / "cache", 4);
  const pid_t b = StartClient(registry, dir.path() / "cache", 4);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_EQ(Wait(a), 0);
  EXPECT_EQ(Wait(b), 0);
  EXPECT_EQ(hits.load(), 8);
  EXPECT_EQ(most.load(), 1) << "two requests were in flight against max_concurrency = 1";
}

TEST(HostLimitsTest, RequestsPerMinuteHoldsAcrossTwoProcesses) {
  TestServer ts;
  std::mutex mu;
  std::vector<Clock::time_point> arrivals;
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard lock(mu);
      arrivals.push_back(Clock::now());
    }
    res.set_content(kOkBody, "application/json");
  });
  TempDir dir;
  const auto registry = Registry(dir, ts.url(), "requests_per_minute = 300");  // 200 ms apart
  const pid_t a = StartClient(registry, dir.path() / "cache", 4);
  const pid_t b = StartClient(registry, dir.path() / "cache", 4);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_EQ(Wait(a), 0);
  EXPECT_EQ(Wait(b), 0);
  ASSERT_EQ(arrivals.size(), 8u);
  std::sort(arrivals.begin(), arrivals.end());
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    const auto gap = std::chrono::duration_cast<milliseconds>(arrivals[i] - arrivals[i - 1]);
    EXPECT_GE(gap.count(), 170) << "requests " << i - 1 << " and " << i << " came together";
  }
}

// share_limits = false keeps the limits of each process apart (documented).
TEST(HostLimitsTest, ShareLimitsFalseKeepsThemPerProcess) {
  TestServer ts;
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(milliseconds(300));
    --in_flight;
    res.set_content(kOkBody, "application/json");
  });
  TempDir dir;
  const auto registry = Registry(dir, ts.url(), "max_concurrency = 1\nshare_limits = false");
  const pid_t a = StartClient(registry, dir.path() / "cache", 2);
  const pid_t b = StartClient(registry, dir.path() / "cache", 2);
  EXPECT_EQ(Wait(a), 0);
  EXPECT_EQ(Wait(b), 0);
  EXPECT_EQ(most.load(), 2);
}

}  // namespace
}  // namespace kforge::llm
