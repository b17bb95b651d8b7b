#include "run_support.h"

#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <random>

namespace kforge {

namespace fs = std::filesystem;

std::string NewRunId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::random_device rd;
  return fmt::format("run-{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return path;
  return fs::absolute(path, ec).lexically_normal().string();
}

void AbsoluteModelSource(app::ModelSource& source) {
  source.replay = Absolute(source.replay);
  if (!source.record.empty())
    source.record = fs::absolute(source.record).lexically_normal().string();
  for (auto& m : source.models) m = Absolute(m);
}

void AddModelSourceOptions(CLI::App* cmd, app::ModelSource* source) {
  cmd->add_option("--models", source->models, "Extra model registry files (TOML)");
  cmd->add_option("--record", source->record, "Record every LLM answer into this cassette (JSONL)");
  cmd->add_option("--record-note", source->record_note,
                  "Who answered the recorded calls, and how (kept in the cassette's header)");
  cmd->add_option("--replay", source->replay,
                  "Answer every LLM call from this cassette instead of calling a model")
      ->check(CLI::ExistingFile);
  cmd->add_option("--replay-match", source->replay_match,
                  "exact: a replayed prompt must equal the recorded one; numbers: numbers, the "
                  "folders of paths and the measured parts of the prompts (timings, profile "
                  "summaries, device facts) may differ, as they do between machines")
      ->default_val("exact")
      ->check(CLI::IsMember({"exact", "numbers"}));
  cmd->add_flag("--inbox-wait", source->inbox_wait,
                "With an inbox model: wait for each answer file instead of stopping");
}

}  // namespace kforge
