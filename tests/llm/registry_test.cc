// The model registry: precedence of files, errors naming file and line, the shipped default file,
// and building providers from entries.
#include "kforge/llm/registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "kforge/llm/provider_factory.h"
#include "kforge/llm/redact.h"
#include "temp_dir.h"

namespace kforge::llm {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr const char* kDefaults = R"(
version = 1

[[models]]
id = "alpha"
provider = "openai"
model = "gpt-alpha"
api_key_env = "OPENAI_API_KEY"
context_window = 128000
vision = true
price_input_per_mtok = 2.5
price_output_per_mtok = 10
requests_per_minute = 500
tokens_per_minute = 30000
max_concurrency = 8

[[models]]
id = "beta"
provider = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
)";

TEST(RegistryTest, LaterFilesOverrideEarlierOnes) {
  TempDir dir;
  const fs::path defaults = dir.path() / "home" / "examples" / "models.toml";
  Write(defaults, kDefaults);
  const fs::path xdg = dir.path() / "xdg";
  Write(xdg / "kforge" / "models.toml", R"(
[[models]]
id = "beta"
provider = "openai_compatible"
endpoint = "http://localhost:8000/v1"
model = "Qwen/Qwen2.5-Coder-32B-Instruct"

[[models]]
id = "gamma"
provider = "gemini"
api_key_env = "GEMINI_API_KEY"
)");
  const fs::path extra = dir.path() / "run-models.toml";
  Write(extra, R"(
[[models]]
id = "gamma"
provider = "inbox"
dir = "answers"
)");
  ::setenv("XDG_CONFIG_HOME", xdg.c_str(), 1);
  RegistryPaths paths = DefaultRegistryPaths({extra});
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(paths.user_file, xdg / "kforge" / "models.toml");
  paths.default_file = defaults;

  auto registry = ModelRegistry::Load(paths);
  ASSERT_TRUE(registry.has_value()) << registry.error().ToString();
  ASSERT_EQ(registry->entries().size(), 3u);
  EXPECT_EQ(registry->files_read().size(), 3u);

  auto alpha = registry->Find("alpha");
  ASSERT_TRUE(alpha.has_value());
  EXPECT_EQ(alpha->provider, ProviderKind::kOpenAi);
  EXPECT_EQ(alpha->model, "gpt-alpha");
  EXPECT_EQ(alpha->api_key_env, "OPENAI_API_KEY");
  EXPECT_TRUE(alpha->key_required);
  EXPECT_EQ(alpha->context_window, 128000);
  EXPECT_TRUE(alpha->vision);
  EXPECT_DOUBLE_EQ(alpha->pricing.input_usd_per_mtok, 2.5);
  EXPECT_DOUBLE_EQ(alpha->pricing.output_usd_per_mtok, 10.0);
  EXPECT_DOUBLE_EQ(alpha->limits.requests_per_minute, 500);
  EXPECT_DOUBLE_EQ(alpha->limits.tokens_per_minute, 30000);
  EXPECT_EQ(alpha->limits.max_concurrency, 8);
  EXPECT_EQ(alpha->source, defaults.string() + ":4");

  auto beta = registry->Find("beta");
  ASSERT_TRUE(beta.has_value());
  EXPECT_EQ(beta->provider, ProviderKind::kOpenAiCompatible);  // the user's file won
  EXPECT_EQ(beta->endpoint, "http://localhost:8000/v1");
  EXPECT_FALSE(beta->key_required);

  auto gamma = registry->Find("gamma");
  ASSERT_TRUE(gamma.has_value());
  EXPECT_EQ(gamma->provider, ProviderKind::kInbox);  // --models won
  EXPECT_EQ(gamma->inbox_dir, "answers");

  auto missing = registry->Find("delta");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("alpha, beta, gamma"), std::string::npos);
}

Error LoadError(const std::string& text) {
  ModelRegistry registry;
  auto status = registry.AddToml(text, "bad.toml");
  EXPECT_FALSE(status.has_value());
  return status ? Error{} : status.error();
}

TEST(RegistryTest, ErrorsNameTheFileAndLine) {
  Error syntax = LoadError("[[models]]\nid = \"x\"\nprovider = openai\n");
  EXPECT_EQ(syntax.code, ErrorCode::kParse);
  EXPECT_NE(syntax.message.find("bad.toml:3:"), std::string::npos) << syntax.message;
  EXPECT_NE(syntax.message.find("syntax"), std::string::npos);

  Error unknown = LoadError("[[models]]\nid = \"x\"\nprovider = \"openai\"\nvison = true\n");
  EXPECT_NE(unknown.message.find("bad.toml:4: unknown field 'vison'"), std::string::npos)
      << unknown.message;

  Error type = LoadError("[[models]]\nid = \"x\"\nprovider = \"openai\"\n\nvision = \"yes\"\n");
  EXPECT_NE(type.message.find("bad.toml:5: field 'vision' must be true or false"),
            std::string::npos)
      << type.message;

  Error provider = LoadError("\n[[models]]\nid = \"x\"\nprovider = \"openia\"\n");
  EXPECT_NE(provider.message.find("bad.toml:2: model 'x' has provider 'openia'"),
            std::string::npos)
      << provider.message;

  Error no_endpoint = LoadError("[[models]]\nid = \"local\"\nprovider = \"openai_compatible\"\n");
  EXPECT_NE(no_endpoint.message.find("needs an `endpoint`"), std::string::npos);

  Error twice = LoadError(
      "[[models]]\nid = \"x\"\nprovider = \"openai\"\n[[models]]\nid = \"x\"\nprovider = "
      "\"openai\"\n");
  EXPECT_NE(twice.message.find("bad.toml:4: model id 'x' appears twice"), std::string::npos)
      << twice.message;

  Error negative = LoadError("[[models]]\nid = \"x\"\nprovider = \"openai\"\nmax_concurrency = -1\n");
  EXPECT_NE(negative.message.find("non-negative integer"), std::string::npos);
}

TEST(RegistryTest, EnabledFalseHidesAnEarlierEntry) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.AddToml(kDefaults, "defaults.toml").has_value());
  ASSERT_TRUE(registry
                  .AddToml("[[models]]\nid = \"beta\"\nprovider = \"anthropic\"\nenabled = false\n",
                           "user.toml")
                  .has_value());
  EXPECT_FALSE(registry.Find("beta").has_value());
  EXPECT_TRUE(registry.Find("alpha").has_value());
}

TEST(RegistryTest, MissingExtraFileIsAnError) {
  RegistryPaths paths;
  paths.extra_files = {"/nonexistent/kforge-models.toml"};
  auto registry = ModelRegistry::Load(paths);
  ASSERT_FALSE(registry.has_value());
  EXPECT_EQ(registry.error().code, ErrorCode::kNotFound);
  EXPECT_NE(registry.error().message.find("/nonexistent/kforge-models.toml"), std::string::npos);
}

TEST(RegistryTest, ShippedDefaultRegistryLoads) {
  RegistryPaths paths;
  paths.default_file = fs::path(KFORGE_SOURCE_HOME) / "examples" / "models.toml";
  ASSERT_TRUE(fs::exists(*paths.default_file));
  auto registry = ModelRegistry::Load(paths);
  ASSERT_TRUE(registry.has_value()) << registry.error().ToString();
  bool kinds[5] = {false, false, false, false, false};
  for (const auto& entry : registry->entries()) kinds[static_cast<int>(entry.provider)] = true;
  for (bool seen : kinds) EXPECT_TRUE(seen);
  EXPECT_TRUE(registry->Find("inbox").has_value());
}

TEST(ProviderFactoryTest, MissingKeyNamesTheVariable) {
  ModelEntry entry;
  entry.id = "alpha";
  entry.provider = ProviderKind::kOpenAi;
  entry.api_key_env = "KFORGE_TEST_UNSET_KEY";
  ProviderFactoryOptions options;
  options.get_env = [](const std::string&) { return std::nullopt; };
  auto provider = NewProviderForModel(entry, options);
  ASSERT_FALSE(provider.has_value());
  EXPECT_EQ(provider.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(provider.error().message.find("$KFORGE_TEST_UNSET_KEY"), std::string::npos);

  entry.key_required = false;
  EXPECT_TRUE(NewProviderForModel(entry, options).has_value());
}

TEST(ProviderFactoryTest, KeysReadAreRedactedEverywhere) {
  ModelEntry entry;
  entry.id = "alpha";
  entry.provider = ProviderKind::kAnthropic;
  entry.api_key_env = "ANTHROPIC_API_KEY";
  const std::string key = "corp-gateway-key-5f8e2d1c";
  ProviderFactoryOptions options;
  options.get_env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "ANTHROPIC_API_KEY") return key + "\n";
    return std::nullopt;
  };
  auto read = ReadApiKey(entry, options);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, key);  // trailing newline of `export X=$(cat file)` removed
  EXPECT_EQ(Redact("log line with " + key), "log line with [REDACTED]");
  auto provider = NewProviderForModel(entry, options);
  ASSERT_TRUE(provider.has_value());
  EXPECT_EQ((*provider)->Info().provider, "anthropic");
  EXPECT_EQ((*provider)->Info().endpoint, "https://api.anthropic.com");
}

}  // namespace
}  // namespace kforge::llm
