#include "kforge/exec/bench_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace kforge::exec {
namespace {

using Clock = std::chrono::steady_clock;

std::string Duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace

BenchProgress::BenchProgress(std::FILE* out, bool tty, std::vector<std::string> task_names,
                             int steps_per_task, std::shared_ptr<llm::Budget> budget)
    : out_(out),
      tty_(tty),
      steps_per_task_(std::max(1, steps_per_task)),
      budget_(std::move(budget)),
      start_(Clock::now()) {
  for (auto& name : task_names) {
    Row row;
    row.name = std::move(name);
    rows_.push_back(std::move(row));
  }
}

void BenchProgress::OnTaskStarted(std::size_t task) {
  rows_[task].state = TaskState::kRunning;
  Draw(false);
}

void BenchProgress::OnStep(std::size_t task, const synth::ProgressEvent& event) {
  Row& row = rows_[task];
  ++row.steps;
  row.last_status = event.status;
  if (!tty_) {
    fmt::print(out_, "[{}] sample {} · iteration {} · {} · {}{}\n", row.name, event.sample,
               event.iteration + 1, event.pass, event.status,
               event.reused ? " · (answer from the store)" : "");
    std::fflush(out_);
    return;
  }
  Draw(false);
}

void BenchProgress::OnTaskFinished(std::size_t task, const TaskOutcome& outcome) {
  Row& row = rows_[task];
  row.state = outcome.state;
  row.correct = outcome.correct();
  row.speedup = outcome.speedup();
  row.apart = outcome.reported_apart();
  if (!tty_) {
    fmt::print(out_, "[{}] {}: {} · {}{} · {}\n", row.name, TaskStateName(outcome.state),
               row.correct ? "correct" : "no correct kernel",
               row.speedup ? fmt::format("{:.2f}x vs eager", *row.speedup) : "no speedup",
               row.apart.empty() ? "" : fmt::format(" ({}; reported apart)", row.apart),
               outcome.stop_reason);
    fmt::print(out_, "{}\n", SummaryLine());
    std::fflush(out_);
    return;
  }
  Draw(true);
}

std::string BenchProgress::SummaryLine() const {
  int finished = 0;
  int correct = 0;
  int apart = 0;
  std::vector<std::pair<double, std::string>> speedups;
  for (const Row& r : rows_) {
    if (r.state == TaskState::kDone || r.state == TaskState::kFailed ||
        r.state == TaskState::kInterrupted) {
      ++finished;
    }
    if (r.correct) ++correct;
    // Degenerate tasks and held timings would top the list with meaningless speedups.
    if (!r.apart.empty()) {
      ++apart;
    } else if (r.speedup) {
      speedups.emplace_back(*r.speedup, r.name);
    }
  }
  std::ranges::sort(speedups, std::greater<>());
  std::string best;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, speedups.size()); ++i) {
    best += fmt::format("{}{:.2f}x {}", i ? ", " : "", speedups[i].first, speedups[i].second);
  }
  std::string money;
  if (budget_) {
    const llm::BudgetSpent spent = budget_->Spent();
    money = fmt::format(" · {} tokens · ${:.4f}", spent.input_tokens + spent.output_tokens,
                        spent.usd);
  }
  if (apart > 0) best += fmt::format("{}({} reported apart)", best.empty() ? "" : " ", apart);
  return fmt::format("{}/{} tasks done · {} correct · best speedups: {}{} · {}", finished,
                     rows_.size(), correct, best.empty() ? "none yet" : best, money,
                     Duration(std::chrono::duration<double>(Clock::now() - start_).count()));
}

void BenchProgress::Draw(bool force) {
  if (!tty_) return;
  const auto now = Clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  // Units of work: a finished task counts whole, a running one by its steps.
  double done = 0;
  for (const Row& r : rows_) {
    done += (r.state == TaskState::kQueued || r.state == TaskState::kRunning)
                ? std::min(r.steps, steps_per_task_)
                : steps_per_task_;
  }
  const double total = static_cast<double>(rows_.size()) * steps_per_task_;
  const double fraction = total > 0 ? done / total : 1.0;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string eta =
      done > 0 && fraction < 1 ? Duration(elapsed * (total - done) / done) : "--";
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string text;
  for (int i = 0; i < drawn_lines_; ++i) text += "\x1b[1A\x1b[2K";  // up one line, clear it
  text += fmt::format("\r[{}{}] {:3.0f}% · ETA {}\n", std::string(filled, '#'),
                      std::string(kWidth - filled, '.'), fraction * 100, eta);
  text += SummaryLine() + "\n";
  int lines = 2;
  constexpr int kMaxRows = 12;
  int shown = 0;
  int hidden = 0;
  for (const Row& r : rows_) {
    if (r.state != TaskState::kRunning) continue;
    if (shown == kMaxRows) {
      ++hidden;
      continue;
    }
    text += fmt::format("  {:<40} step {}/{} · {}\x1b[K\n", r.name.substr(0, 40), r.steps,
                        steps_per_task_, r.last_status.empty() ? "generating" : r.last_status);
    ++shown;
    ++lines;
  }
  if (hidden > 0) {
    text += fmt::format("  … and {} more running\n", hidden);
    ++lines;
  }
  drawn_lines_ = lines;
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

void BenchProgress::Finish() { Draw(true); }

}  // namespace kforge::exec
