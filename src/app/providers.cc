#include "kforge/app/providers.h"

#include <filesystem>
#include <string>
#include <vector>

#include "kforge/llm/cassette.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/registry.h"
#include "kforge/prompt/measured_text.h"

namespace kforge::app {

namespace fs = std::filesystem;

Result<Providers> MakeProviders(const ModelSource& args, bool resuming,
                                const std::shared_ptr<llm::Budget>& budget) {
  const std::string analysis_id = args.analysis_model.empty() ? args.model : args.analysis_model;
  Providers out;
  if (!args.replay.empty()) {
    // With "numbers", the prompts' measured parts (timings, profiles, device facts) may differ
    // too: a replay on another machine measures differently.
    auto cassette =
        llm::Cassette::Load(args.replay,
                            args.replay_match == "numbers" ? llm::ReplayMatch::kNumbersMayDiffer
                                                           : llm::ReplayMatch::kExact,
                            MaskMeasuredText);
    if (!cassette) return std::unexpected(cassette.error());
    out.generation = llm::NewBudgetedProvider(
        std::shared_ptr<llm::Provider>(llm::NewReplayProvider(*cassette, args.model)), budget);
    out.analysis =
        analysis_id == args.model
            ? out.generation
            : std::shared_ptr<llm::Provider>(llm::NewBudgetedProvider(
                  std::shared_ptr<llm::Provider>(llm::NewReplayProvider(*cassette, analysis_id)),
                  budget));
    return out;
  }
  std::vector<fs::path> extra(args.models.begin(), args.models.end());
  auto registry = llm::ModelRegistry::Load(llm::DefaultRegistryPaths(extra));
  if (!registry) return std::unexpected(registry.error());
  llm::ProviderFactoryOptions options;
  options.budget = budget;
  options.inbox_wait = args.inbox_wait;
  std::shared_ptr<llm::CassetteWriter> writer;
  if (!args.record.empty()) {
    // A resumed run appends its new calls to the run's cassette (the calls it answers from the
    // store were recorded by the part that made them), so the cassette stays the whole
    // conversation after any number of resumes.
    auto created = resuming ? llm::CassetteWriter::Open(args.record, args.record_note)
                            : llm::CassetteWriter::Create(args.record, args.record_note);
    if (!created) return std::unexpected(created.error());
    writer = *created;
    out.recording = args.record;
  }
  auto make = [&](const std::string& id) -> Result<std::shared_ptr<llm::Provider>> {
    auto entry = registry->Find(id);
    if (!entry) return std::unexpected(entry.error());
    auto provider = llm::NewProviderForModel(*entry, options);
    if (!provider) return std::unexpected(provider.error());
    if (!writer) return *provider;
    return std::shared_ptr<llm::Provider>(llm::NewRecordingProvider(*provider, writer));
  };
  auto generation = make(args.model);
  if (!generation) return std::unexpected(generation.error());
  out.generation = *generation;
  if (analysis_id == args.model) {
    out.analysis = out.generation;
  } else {
    auto analysis = make(analysis_id);
    if (!analysis) return std::unexpected(analysis.error());
    out.analysis = *analysis;
  }
  return out;
}

}  // namespace kforge::app
