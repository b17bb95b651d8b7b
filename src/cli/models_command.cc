#include "models_command.h"
#include "exit_codes.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/files.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/redact.h"
#include "kforge/llm/registry.h"

namespace kforge {
namespace {

using llm::ModelEntry;
using llm::ModelRegistry;
using llm::ProviderKind;

constexpr std::chrono::milliseconds kProbeTimeout{1500};

struct ModelsFlags {
  std::vector<std::string> files;
  std::string id;
  bool no_probe = false;  // list without opening TCP connections to the endpoints
};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "kforge models: %s\n", llm::Redact(message).c_str());
  throw CLI::RuntimeError(1);
}

Result<ModelRegistry> LoadRegistry(const ModelsFlags& flags, const CLI::App& root) {
  std::vector<std::filesystem::path> files(flags.files.begin(), flags.files.end());
  if (const CLI::Option* global = root.get_option_no_throw("--models"); global != nullptr) {
    for (const auto& file : global->results()) files.emplace_back(file);
  }
  return ModelRegistry::Load(llm::DefaultRegistryPaths(std::move(files)));
}

struct Usability {
  std::string key;       // what the key variable looks like
  std::string reason;    // "" when usable
  bool probed = true;    // the endpoint was probed (else: only the key was checked)
};

Usability Assess(const ModelEntry& entry, bool probe) {
  Usability u;
  if (entry.provider == ProviderKind::kInbox) {
    u.key = "-";
    std::error_code ec;
    const auto dir = std::filesystem::absolute(entry.inbox_dir, ec);
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
      u.reason = fmt::format("{} is not a directory", dir.string());
    }
    return u;
  }
  const char* value = entry.api_key_env.empty() ? nullptr : std::getenv(entry.api_key_env.c_str());
  const bool has_key = value != nullptr && value[0] != '\0';
  if (entry.api_key_env.empty()) {
    u.key = "none needed";
  } else if (has_key) {
    u.key = fmt::format("${} set", entry.api_key_env);
  } else {
    u.key = fmt::format("${} {}", entry.api_key_env, entry.key_required ? "missing" : "unset (optional)");
  }
  if (entry.key_required && !has_key) {
    u.reason = fmt::format("set {}", entry.api_key_env);
    return u;
  }
  if (!probe) {
    u.probed = false;
    return u;
  }
  if (auto reachable = llm::ProbeTcpConnect(entry.endpoint, kProbeTimeout); !reachable) {
    u.reason = fmt::format("{} unreachable", llm::Redact(entry.endpoint));
  }
  return u;
}

std::string Price(const ModelEntry& entry) {
  if (entry.pricing.input_usd_per_mtok == 0 && entry.pricing.output_usd_per_mtok == 0) return "free";
  return fmt::format("${:g}/${:g}", entry.pricing.input_usd_per_mtok,
                     entry.pricing.output_usd_per_mtok);
}

void ListModels(const ModelsFlags& flags, const CLI::App& root) {
  auto registry = LoadRegistry(flags, root);
  if (!registry) Fail(registry.error().message);
  if (registry->files_read().empty()) {
    Fail("no model registry found; create $XDG_CONFIG_HOME/kforge/models.toml or pass --models "
         "FILE (docs/llm.md shows the format)");
  }
  const auto& entries = registry->entries();
  std::vector<std::future<Usability>> checks;
  checks.reserve(entries.size());
  for (const auto& entry : entries) {
    checks.push_back(std::async(std::launch::async,
                                [&entry, probe = !flags.no_probe] { return Assess(entry, probe); }));
  }
  std::printf("registry: %s\n\n", fmt::format("{}", fmt::join(registry->files_read(), ", ")).c_str());
  std::printf("%s\n", fmt::format("{:<20} {:<18} {:<34} {:<6} {:<14} {:<30} {}", "ID", "PROVIDER",
                                  "MODEL", "VISION", "$/MTOK IN/OUT", "KEY", "USABLE NOW")
                          .c_str());
  int usable = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ModelEntry& e = entries[i];
    const Usability u = checks[i].get();
    usable += u.reason.empty() ? 1 : 0;
    const std::string verdict = !u.reason.empty() ? "no: " + u.reason
                                : u.probed        ? std::string("yes")
                                                  : std::string("key ok, endpoint not probed");
    std::printf("%s\n",
                fmt::format("{:<20} {:<18} {:<34} {:<6} {:<14} {:<30} {}", e.id,
                            llm::ProviderKindName(e.provider), e.model, e.vision ? "yes" : "no",
                            Price(e), u.key, verdict)
                    .c_str());
  }
  if (flags.no_probe) {
    std::printf("\n%d of %zu have what they need here (endpoints not probed). `kforge models "
                "check ID` makes one tiny call.\n",
                usable, entries.size());
  } else {
    std::printf("\n%d of %zu usable now. `kforge models check ID` makes one tiny call.\n",
                usable, entries.size());
  }
}

void CheckModel(const ModelsFlags& flags, const CLI::App& root) {
  auto registry = LoadRegistry(flags, root);
  if (!registry) Fail(registry.error().message);
  auto entry = registry->Find(flags.id);
  if (!entry) Fail(entry.error().message);
  if (entry->provider == ProviderKind::kInbox) {
    const auto dir = std::filesystem::absolute(entry->inbox_dir);
    if (auto made = MakeDirs(dir); !made) Fail(made.error().message);
    std::printf("ok: inbox '%s' writes prompts to %s and reads answers from there\n",
                entry->id.c_str(), dir.string().c_str());
    return;
  }
  auto provider = llm::NewProviderForModel(*entry, llm::ProviderFactoryOptions{});
  if (!provider) Fail(provider.error().message);
  llm::Request request;
  request.messages = {llm::Message::User("Reply with the single word OK.")};
  request.max_tokens = 64;
  llm::CallOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto response = (*provider)->Complete(request, options);
  if (!response) Fail(response.error().message);
  std::string text = response->text.substr(0, 60);
  for (char& c : text) c = c == '\n' ? ' ' : c;
  std::printf("ok: '%s' (%s) answered in %lld ms: \"%s\" — %lld input + %lld output tokens%s, "
              "$%.6f\n",
              entry->id.c_str(), response->model.empty() ? entry->model.c_str() : response->model.c_str(),
              static_cast<long long>(response->latency.count()), llm::Redact(text).c_str(),
              static_cast<long long>(response->usage.input_tokens),
              static_cast<long long>(response->usage.output_tokens),
              response->usage.estimated ? " (estimated)" : "", response->cost_usd);
}

}  // namespace

void AddModelsCommand(CLI::App& app) {
  auto flags = std::make_shared<ModelsFlags>();
  CLI::App* models = app.add_subcommand(
      "models",
      "List the LLMs of the model registry and say which are usable now: a model is usable when "
      "its key variable is set (or none is needed) and a TCP connection to its endpoint opens "
      "within 1.5 s. That probe connects to every listed endpoint over TCP (the public API hosts "
      "for the shipped entries) and sends nothing; --no-probe lists without connecting.");
  models->footer(ExitCodesFooter("models"));
  models->add_option("--models", flags->files,
                     "Extra model registry file (TOML), read after the default and user files")
      ->check(CLI::ExistingFile);
  models->add_flag("--no-probe", flags->no_probe,
                   "List without opening TCP connections to the endpoints (only the keys are "
                   "checked)");
  CLI::App* check = models->add_subcommand("check", "Make one tiny call to a model");
  check->add_option("ID", flags->id, "Model id, as listed by `kforge models`")->required();
  check->fallthrough();
  const CLI::App* root = &app;
  models->callback([flags, check, root] {
    if (check->parsed()) return;
    ListModels(*flags, *root);
  });
  check->callback([flags, root] { CheckModel(*flags, *root); });
}

}  // namespace kforge
