// `kforge models` and `kforge models check ID` against a registry of local servers only.
#include "models_command.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "temp_dir.h"
#include "test_server.h"

namespace kforge {
namespace {

using llm::testing::TempDir;
using llm::testing::TestServer;

class ModelsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Only the --models file is read: no shipped defaults, no user file, so no network.
    ::setenv("KFORGE_HOME", (dir_.path() / "home").c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", (dir_.path() / "xdg").c_str(), 1);
    ::unsetenv("KFORGE_TEST_MODELS_KEY");
    server_.server().Post("/v1/chat/completions",
                          [](const httplib::Request& req, httplib::Response& res) {
                            if (req.get_header_value("Authorization") != "Bearer good-key-123456") {
                              res.status = 401;
                              res.set_content(R"({"error":{"message":"bad key"}})",
                                              "application/json");
                              return;
                            }
                            res.set_content(
                                R"({"model":"tiny","choices":[{"message":{"content":"OK"},)"
                                R"("finish_reason":"stop"}],"usage":{"prompt_tokens":9,)"
                                R"("completion_tokens":1}})",
                                "application/json");
                          });
    registry_ = dir_.path() / "models.toml";
    std::ofstream(registry_) << "[[models]]\nid = \"local\"\nprovider = \"openai_compatible\"\n"
                             << "endpoint = \"" << server_.url() << "/v1\"\n"
                             << "api_key_env = \"KFORGE_TEST_MODELS_KEY\"\nkey_required = true\n"
                             << "max_attempts = 1\n\n"
                             << "[[models]]\nid = \"down\"\nprovider = \"openai_compatible\"\n"
                             << "endpoint = \"http://127.0.0.1:1/v1\"\n";
  }
  void TearDown() override {
    ::unsetenv("KFORGE_HOME");
    ::unsetenv("XDG_CONFIG_HOME");
    ::unsetenv("KFORGE_TEST_MODELS_KEY");
  }

  // Runs `kforge <args>`; returns the exit status and captures stdout.
  int Run(std::vector<std::string> args, std::string* out) {
    CLI::App app("test", "kforge");
    AddModelsCommand(app);
    std::vector<const char*> argv = {"kforge"};
    for (const auto& a : args) argv.push_back(a.c_str());
    ::testing::internal::CaptureStdout();
    int status = 0;
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      status = e.get_exit_code();
    }
    *out = ::testing::internal::GetCapturedStdout();
    return status;
  }

  TempDir dir_;
  TestServer server_;
  std::filesystem::path registry_;
};

TEST_F(ModelsCommandTest, ListsEntriesAndWhichAreUsable) {
  std::string out;
  ASSERT_EQ(Run({"models", "--models", registry_.string()}, &out), 0);
  EXPECT_NE(out.find("local"), std::string::npos) << out;
  EXPECT_NE(out.find("no: set KFORGE_TEST_MODELS_KEY"), std::string::npos) << out;
  EXPECT_NE(out.find("no: http://127.0.0.1:1/v1 unreachable"), std::string::npos) << out;
  EXPECT_NE(out.find("0 of 2 usable now"), std::string::npos) << out;

  ::setenv("KFORGE_TEST_MODELS_KEY", "good-key-123456", 1);
  ASSERT_EQ(Run({"models", "--models", registry_.string()}, &out), 0);
  EXPECT_NE(out.find("$KFORGE_TEST_MODELS_KEY set"), std::string::npos) << out;
  EXPECT_NE(out.find("1 of 2 usable now"), std::string::npos) << out;
  EXPECT_EQ(out.find("good-key-123456"), std::string::npos);
}

// "Usable now" opens a TCP connection to each endpoint: --help says so, and --no-probe lists
// without connecting (a listening socket sees whether a connection came).
TEST_F(ModelsCommandTest, HelpSaysItProbesOverTcpAndNoProbeListsWithoutConnecting) {
  CLI::App app("test", "kforge");
  AddModelsCommand(app);
  const std::string help = app.get_subcommand("models")->help();
  EXPECT_NE(help.find("TCP connection"), std::string::npos) << help;
  EXPECT_NE(help.find("--no-probe"), std::string::npos) << help;

  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const auto watched = dir_.path() / "watched.toml";
  std::ofstream(watched) << "[[models]]\nid = \"watched\"\nprovider = \"openai_compatible\"\n"
                         << "endpoint = \"http://127.0.0.1:" << ntohs(address.sin_port)
                         << "/v1\"\n";
  auto connections = [&] {
    int n = 0;
    for (int fd; (fd = ::accept(listener, nullptr, nullptr)) >= 0; ++n) ::close(fd);
    return n;
  };

  std::string out;
  ASSERT_EQ(Run({"models", "--no-probe", "--models", watched.string()}, &out), 0);
  EXPECT_NE(out.find("key ok, endpoint not probed"), std::string::npos) << out;
  EXPECT_EQ(connections(), 0) << "--no-probe opened a connection";
  ASSERT_EQ(Run({"models", "--models", watched.string()}, &out), 0);
  EXPECT_GE(connections(), 1) << "the probe opened no connection";
  ::close(listener);
}

TEST_F(ModelsCommandTest, CheckMakesOneTinyCall) {
  ::setenv("KFORGE_TEST_MODELS_KEY", "good-key-123456", 1);
  std::string out;
  ASSERT_EQ(Run({"models", "check", "local", "--models", registry_.string()}, &out), 0);
  EXPECT_NE(out.find("ok: 'local' (tiny)"), std::string::npos) << out;
  EXPECT_NE(out.find("\"OK\""), std::string::npos) << out;
  EXPECT_NE(out.find("9 input + 1 output tokens"), std::string::npos) << out;
}

TEST_F(ModelsCommandTest, CheckFailsWithStatusOneOnABadKey) {
  ::setenv("KFORGE_TEST_MODELS_KEY", "wrong-key-987654", 1);
  std::string out;
  ::testing::internal::CaptureStderr();
  const int status = Run({"models", "--models", registry_.string(), "check", "local"}, &out);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 1);
  EXPECT_NE(err.find("401"), std::string::npos) << err;
  EXPECT_NE(err.find("KFORGE_TEST_MODELS_KEY"), std::string::npos) << err;
  EXPECT_EQ(err.find("wrong-key-987654"), std::string::npos) << err;
}

}  // namespace
}  // namespace kforge
