#include "store_builder.h"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

namespace kforge::report::testing {
namespace {

using nlohmann::json;

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r) throw std::runtime_error(fmt::format("{}: {}", what, r.error().message));
  return std::move(*r);
}

json Stats(double median, const char* clock = "perf_counter") {
  return {{"clock", clock},         {"median_s", median},       {"mean_s", median * 1.01},
          {"min_s", median * 0.97}, {"p10_s", median * 0.98},   {"p90_s", median * 1.03},
          {"rel_std", 0.004},       {"samples", 120},           {"stopped_by", "noise"}};
}

json Opt(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

}  // namespace

std::string VerdictJson(const VerdictSpec& s) {
  json j;
  j["verdict_version"] = 1;
  j["status"] = s.status;
  j["message"] = s.message;
  j["diagnostics"] = s.diagnostics;
  j["task"] = {{"name", "t"}, {"origin", "suite.toml#t"}};
  j["target"] = "cpu/cpp";
  j["candidate"] = {{"path", "candidate.cc"}, {"kind", "native"}, {"mode", "kforge"}};
  j["precision"] = {{"policy", s.policy}, {"atol", s.atol}, {"rtol", s.rtol}};
  j["trials"] = json::array();
  for (int i = 0; i < s.trials; ++i) {
    j["trials"].push_back({{"index", i},
                           {"distribution", i == 1 ? "normal" : i == 3 ? "uniform" : "task"},
                           {"ok", s.status == "correct"},
                           {"max_abs_error", 1.2e-6},
                           {"max_rel_error", 3.4e-6},
                           {"fraction_bad", 0.0},
                           {"inputs_unchanged", true},
                           {"problem", ""}});
  }
  j["degenerate"] = {{"flagged", s.degenerate},
                     {"all_zero", s.degenerate},
                     {"constant", s.degenerate},
                     {"constant_passes", false},
                     {"nondeterministic", false}};
  j["guardrail_flags"] = json::array();
  j["seconds"] = {{"compile", 0.8}, {"reference", 1.1}, {"candidate", 0.3}, {"total", 2.4}};
  j["compile_cache_hit"] = false;
  j["isolation"] = {{"sandbox", "bubblewrap: no network, read-only root"},
                    {"observed", {{"network_blocked", true}, {"root_read_only", true}, {"user", "nobody"}}}};
  j["environment"] = {{"python", "3.11.2"}, {"torch", "1.13.1"}, {"device_name", "cpu"}, {"triton", nullptr}};
  if (s.timed) {
    json t = {{"candidate", s.candidate_median_s ? Stats(*s.candidate_median_s) : json(nullptr)},
              {"candidate_error", ""},
              {"eager_baseline", s.eager_median_s ? Stats(*s.eager_median_s) : json(nullptr)},
              {"eager_baseline_error", ""},
              {"speedup_vs_eager", Opt(s.speedup_vs_eager)}};
    if (s.new_timing_fields) {
      t["compile_baseline"] = s.compile_median_s ? Stats(*s.compile_median_s) : json(nullptr);
      t["compile_max_autotune_baseline"] = nullptr;
      t["speedup_vs_compile"] = Opt(s.speedup_vs_compile);
      t["speedup_vs_best_baseline"] = Opt(s.speedup_vs_best_baseline);
      t["sol_fraction"] = Opt(s.sol_fraction);
      t["held_for_review"] = s.held_for_review;
      t["review_reason"] = s.review_reason;
    }
    j["timing"] = t;
  } else {
    j["timing"] = nullptr;
  }
  return j.dump(2);
}

StoreBuilder::StoreBuilder(const std::filesystem::path& run_dir, const std::string& run_id,
                           const std::string& model)
    : run_id_(run_id) {
  store_ = Must(store::RunStore::Open(run_dir), "open store");
  store::RunRecord run;
  run.id = run_id;
  run.kind = store::RunKind::kRun;
  run.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  run.command_line = "kforge run suite.toml#t --target cpu/cpp --model " + model;
  run.config_json = json{{"model", model}, {"target", "cpu/cpp"}}.dump();
  Must(store_->AddRun(run), "add run");
}

std::string StoreBuilder::NextId(const char* prefix) { return fmt::format("{}-{:016x}", prefix, ++counter_); }

std::string StoreBuilder::Task(const std::string& name, const std::string& policy,
                               const std::string& extra_metadata_json) {
  store::TaskRecord t;
  t.id = NextId("task");
  t.run_id = run_id_;
  t.name = name;
  t.source_hash = Must(store_->PutArtifact("class Model: pass  # " + name + "\n"), "put task");
  json meta = json::parse(extra_metadata_json);
  meta["origin"] = "suite.toml#" + name;
  meta["policy"] = policy;
  t.metadata_json = meta.dump();
  t.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  return Must(store_->AddTask(t), "add task").id;
}

std::string StoreBuilder::Candidate(const std::string& task_id, std::int64_t sample, std::int64_t iteration,
                                    const std::string& source, const std::optional<std::string>& parent,
                                    const std::optional<std::string>& llm_call) {
  store::CandidateRecord c;
  c.id = NextId("cand");
  c.run_id = run_id_;
  c.task_id = task_id;
  c.parent_id = parent;
  c.llm_call_id = llm_call;
  c.sample = sample;
  c.iteration = iteration;
  c.pass_kind = iteration == 0 ? store::PassKind::kFunctional : store::PassKind::kOptimization;
  c.target = "cpu/cpp";
  c.source_hash = Must(store_->PutArtifact(source), "put source");
  c.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  return Must(store_->AddCandidate(c), "add candidate").id;
}

std::string StoreBuilder::Evaluate(const std::string& candidate_id, const VerdictSpec& spec) {
  store::EvaluationRecord e;
  e.id = NextId("evl");
  e.run_id = run_id_;
  e.candidate_id = candidate_id;
  e.target = "cpu/cpp";
  e.device = "cpu";
  e.status = Must(store::ParseEvaluationStatus(spec.status), "status");
  e.verdict_json = VerdictJson(spec);
  e.wall_s = 2.5;
  e.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  return Must(store_->AddEvaluation(e), "add evaluation").id;
}

std::string StoreBuilder::LlmCall(std::int64_t input_tokens, std::int64_t output_tokens, double cost_usd) {
  store::LlmCallRecord c;
  c.id = NextId("llm");
  c.run_id = run_id_;
  c.agent = "generation";
  c.model_id = "model-a";
  c.prompt_hash = Must(store_->PutArtifact("prompt"), "put prompt");
  c.input_tokens = input_tokens;
  c.output_tokens = output_tokens;
  c.cost_usd = cost_usd;
  c.request_fingerprint = c.id;
  c.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  return Must(store_->AddLlmCall(c), "add llm call").id;
}

void StoreBuilder::Recommend(const std::string& candidate_id, const std::string& json_text,
                             const std::optional<std::string>& llm_call) {
  store::RecommendationRecord r;
  r.id = NextId("rec");
  r.run_id = run_id_;
  r.candidate_id = candidate_id;
  r.llm_call_id = llm_call;
  r.recommendation_json = json_text;
  r.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  Must(store_->AddRecommendation(r), "add recommendation");
}

void StoreBuilder::Profile(const std::string& evaluation_id, const std::string& summary) {
  store::ProfileRecord p;
  p.id = NextId("prof");
  p.evaluation_id = evaluation_id;
  p.tool = "ncu";
  p.raw_hash = Must(store_->PutArtifact("raw " + summary), "put raw");
  p.summary_hash = Must(store_->PutArtifact(summary), "put summary");
  p.created_at = store::Timestamp(std::chrono::milliseconds(clock_ms_++));
  Must(store_->AddProfile(p), "add profile");
}

void StoreBuilder::Finish() {
  auto done = store_->FinishRun(run_id_, store::RunStatus::kFinished,
                                store::Timestamp(std::chrono::milliseconds(clock_ms_++)));
  if (!done) throw std::runtime_error(done.error().message);
}

namespace {

// ~60 lines of a plausible kernel; `variant` changes a few lines (tile size, unroll, a comment).
std::string SyntheticSource(int task, int sample, int iteration) {
  std::string s = fmt::format("// synthetic kernel for task {} (sample {})\n#include <cstddef>\n", task, sample);
  s += "extern \"C\" int kforge_kernel(const float* x, float* y, std::size_t n) {\n";
  for (int line = 0; line < 56; ++line) {
    if (line % 9 == (iteration % 9)) {
      s += fmt::format("  constexpr int kTile{} = {};  // iteration {}\n", line, 16 << (iteration % 4), iteration);
    } else {
      s += fmt::format("  for (std::size_t i = {}; i < n; i += {}) y[i] = x[i] * {}.0f;\n", line, line + 1, line % 7);
    }
  }
  s += "  return 0;\n}\n";
  return s;
}

}  // namespace

void FillSyntheticRun(StoreBuilder& b, const SyntheticOptions& o) {
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::int64_t total = static_cast<std::int64_t>(o.tasks) * o.samples * o.iterations;
  std::int64_t written = 0;
  const char* failures[] = {"compile_error", "mismatch", "runtime_error", "timeout", "guardrail"};
  for (int t = 0; t < o.tasks; ++t) {
    const std::string policy = t % 10 == 9 ? "mixed" : "strict";
    const std::string meta = t % 3 == 0 ? fmt::format("{{\"flops\": {}, \"bytes\": {}}}", (t + 1) * 1e9, 4e8) : "{}";
    const std::string task = b.Task(fmt::format("task_{:04}_{}", t, t % 5 == 0 ? "gemm" : "fused"), policy, meta);
    const bool degenerate = t % 97 == 13;
    const double difficulty = unit(rng);
    for (int s = 0; s < o.samples; ++s) {
      std::optional<std::string> parent;
      double speed = 0.5 + unit(rng);
      for (int i = 0; i < o.iterations; ++i) {
        const std::string call = b.LlmCall(2000 + i * 10, 800, 0.004);
        const std::string cand = b.Candidate(task, s, i, SyntheticSource(t, s, i), parent, call);
        VerdictSpec v;
        v.policy = policy;
        if (policy == "mixed") v.atol = v.rtol = 1e-2;
        v.degenerate = degenerate;
        v.new_timing_fields = t % 2 == 0;
        if (unit(rng) < difficulty * 0.7) {
          v.status = failures[static_cast<std::size_t>(i + t) % 5];
          v.message = fmt::format("candidate failed: {} at line {}", v.status, i % 50);
          v.diagnostics = "error: expected ';' before '}' token\n  y[i] = x[i] * 2.0f\n         ^";
          v.timed = false;
        } else {
          speed *= 0.9 + 0.25 * unit(rng);
          const double eager = 1e-3 * (1 + t % 7);
          v.candidate_median_s = eager / speed;
          v.eager_median_s = eager;
          v.speedup_vs_eager = speed;
          if (v.new_timing_fields) {
            v.compile_median_s = eager * 0.8;
            v.speedup_vs_compile = speed * 0.8;
            v.speedup_vs_best_baseline = speed * 0.8;
            v.sol_fraction = std::min(1.0, 0.05 + 0.2 * speed * unit(rng));
            v.held_for_review = speed > 10 && unit(rng) < 0.5;
            if (v.held_for_review) v.review_reason = "speedup above 10x: held for review";
          }
        }
        const std::string evl = b.Evaluate(cand, v);
        if (i == o.iterations - 1 && s == 0 && t % 50 == 0) {
          b.Profile(evl, "dram throughput 71%, sm throughput 22%: memory bound");
          b.Recommend(cand, R"({"recommendations":[{"title":"vectorize loads","detail":"use float4"}]})");
        }
        parent = cand;
        ++written;
        if (o.progress != nullptr && written % 1000 == 0) o.progress(written, total);
      }
    }
  }
  b.Finish();
}

}  // namespace kforge::report::testing
