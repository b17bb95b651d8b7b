#include "kforge/exec/bench_progress.h"

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

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

// The terminal's width in columns (80 when it cannot be read).
int Columns(std::FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// `line` cut to `columns` characters (UTF-8 code points), so that no line of the view wraps: a
// wrapped line is one the next redraw does not clear.
std::string Fit(const std::string& line, int columns) {
  int seen = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (seen == columns - 1) return line.substr(0, i) + "…";
    ++seen;
  }
  return line;
}

}  // namespace

// The default logger's sinks swapped for one that prints through Note() while the live view is
// shown: a log line written straight to the terminal would sit inside the view and stay there.
struct BenchProgress::LogRedirect {
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    explicit Sink(BenchProgress* progress) : progress_(progress) {}

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      spdlog::memory_buf_t formatted;
      formatter_->format(msg, formatted);
      std::string line(formatted.data(), formatted.size());
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      progress_->Note(line);
    }
    void flush_() override {}

   private:
    BenchProgress* progress_;
  };

  explicit LogRedirect(BenchProgress* progress) : logger(spdlog::default_logger()) {
    if (!logger) return;
    saved = logger->sinks();
    auto sink = std::make_shared<Sink>(progress);
    sink->set_pattern("[%H:%M:%S.%e] [%l] %v");
    logger->sinks() = {sink};
  }
  ~LogRedirect() {
    if (logger) logger->sinks() = saved;
  }

  std::shared_ptr<spdlog::logger> logger;
  std::vector<spdlog::sink_ptr> saved;
};

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
  if (!tty_) return;
  log_redirect_ = std::make_unique<LogRedirect>(this);
  clock_ = std::jthread([this](std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested() && !finished_) {
      tick_.wait_for(lock, std::chrono::seconds(1));
      if (!finished_) DrawLocked(true);
    }
  });
}

BenchProgress::~BenchProgress() { Finish(); }

void BenchProgress::OnTaskStarted(std::size_t task) {
  std::lock_guard lock(mu_);
  rows_[task].state = TaskState::kRunning;
  DrawLocked(false);
}

void BenchProgress::OnStep(std::size_t task, const synth::ProgressEvent& event) {
  std::lock_guard lock(mu_);
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
  DrawLocked(false);
}

void BenchProgress::OnActivity(std::size_t task, std::string_view activity) {
  std::lock_guard lock(mu_);
  rows_[task].activity = std::string(activity);
  DrawLocked(false);
}

void BenchProgress::OnTaskFinished(std::size_t task, const TaskOutcome& outcome) {
  std::lock_guard lock(mu_);
  Row& row = rows_[task];
  row.state = outcome.state;
  row.activity.clear();
  row.correct = outcome.correct();
  row.speedup = outcome.speedup();
  row.apart = outcome.reported_apart();
  row.paused = outcome.awaiting_answer;
  PrintLocked(fmt::format(
      "[{}] {}: {} · {}{} · {}", row.name,
      row.paused ? std::string_view("paused") : TaskStateName(outcome.state),
      row.correct ? "correct" : "no correct kernel",
      row.speedup ? fmt::format("{:.2f}x vs eager", *row.speedup) : "no speedup",
      row.apart.empty() ? "" : fmt::format(" ({}; reported apart)", row.apart),
      outcome.stop_reason));
  if (!tty_) {
    fmt::print(out_, "{}\n", SummaryLineLocked());
    std::fflush(out_);
    return;
  }
  DrawLocked(true);
}

void BenchProgress::Note(const std::string& line) {
  std::lock_guard lock(mu_);
  PrintLocked(line);
  DrawLocked(true);
}

std::string BenchProgress::SummaryLine() const {
  std::lock_guard lock(mu_);
  return SummaryLineLocked();
}

std::string BenchProgress::SummaryLineLocked() const {
  int done = 0;
  int paused = 0;
  int stopped = 0;
  int failed = 0;
  int correct = 0;
  int apart = 0;
  std::vector<std::pair<double, std::string>> speedups;
  for (const Row& r : rows_) {
    done += r.state == TaskState::kDone ? 1 : 0;
    paused += r.state == TaskState::kInterrupted && r.paused ? 1 : 0;
    stopped += r.state == TaskState::kInterrupted && !r.paused ? 1 : 0;
    failed += r.state == TaskState::kFailed ? 1 : 0;
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
  std::string counts = fmt::format("{}/{} tasks done", done, rows_.size());
  if (paused > 0) counts += fmt::format(" · {} paused (waiting for answers)", paused);
  if (stopped > 0) counts += fmt::format(" · {} stopped (resumable)", stopped);
  if (failed > 0) counts += fmt::format(" · {} failed", failed);
  return fmt::format("{} · {} correct · best speedups: {}{} · {}", counts, correct,
                     best.empty() ? "none yet" : best, money,
                     Duration(std::chrono::duration<double>(Clock::now() - start_).count()));
}

void BenchProgress::ClearLocked() {
  std::string text;
  for (int i = 0; i < drawn_lines_; ++i) text += "\x1b[1A\x1b[2K";  // up one line, clear it
  text += "\r";
  std::fputs(text.c_str(), out_);
  drawn_lines_ = 0;
}

void BenchProgress::PrintLocked(const std::string& line) {
  if (tty_) ClearLocked();
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void BenchProgress::DrawLocked(bool force) {
  if (!tty_ || finished_) return;
  const auto now = Clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const int columns = Columns(out_);
  // Units of work: a task done counts whole, any other by its steps.
  double units = 0;
  for (const Row& r : rows_) {
    units += r.state == TaskState::kDone ? steps_per_task_ : std::min(r.steps, steps_per_task_);
  }
  const double total = static_cast<double>(rows_.size()) * steps_per_task_;
  const double fraction = total > 0 ? units / total : 1.0;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string eta =
      units > 0 && fraction < 1 ? Duration(elapsed * (total - units) / units) : "--";
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::vector<std::string> lines;
  lines.push_back(fmt::format("[{}{}] {:3.0f}% · ETA {}", std::string(filled, '#'),
                              std::string(kWidth - filled, '.'), fraction * 100, eta));
  lines.push_back(SummaryLineLocked());
  constexpr int kMaxRows = 12;
  int hidden = 0;
  for (const Row& r : rows_) {
    if (r.state != TaskState::kRunning) continue;
    if (static_cast<int>(lines.size()) - 2 == kMaxRows) {
      ++hidden;
      continue;
    }
    std::string doing = r.activity;
    if (doing.empty()) doing = r.last_status.empty() ? "starting" : "after " + r.last_status;
    lines.push_back(fmt::format("  {:<40} step {}/{} · {}", r.name.substr(0, 40),
                                std::min(r.steps + 1, steps_per_task_), steps_per_task_, doing));
  }
  if (hidden > 0) lines.push_back(fmt::format("  … and {} more running", hidden));
  ClearLocked();
  std::string text;
  for (const auto& line : lines) text += Fit(line, columns) + "\x1b[K\n";
  drawn_lines_ = static_cast<int>(lines.size());
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

void BenchProgress::Finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    DrawLocked(true);
    finished_ = true;
  }
  tick_.notify_all();
  if (clock_.joinable()) {
    clock_.request_stop();
    clock_.join();
  }
  log_redirect_.reset();
}

}  // namespace kforge::exec
