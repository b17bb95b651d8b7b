// The HTML report in a browser: it opens in headless Chromium (Debian's chromium), its
// four charts render (the page's data-charts-rendered marker, raised only for a canvas with
// painted pixels), and a screenshot is taken and is not blank. Without chromium the test fails
// and says what to install: CI installs it (scripts/setup-debian.sh).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "kforge/core/files.h"
#include "kforge/report/html_report.h"
#include "kforge/report/report_writer.h"
#include "scratch_dir.h"
#include "store_builder.h"

namespace kforge::report {
namespace {

namespace fs = std::filesystem;

// The chromium binary: $KFORGE_CHROMIUM, else chromium on PATH; empty when there is none.
std::string FindChromium() {
  if (const char* env = std::getenv("KFORGE_CHROMIUM"); env != nullptr && *env != '\0') return env;
  for (const char* name : {"chromium", "chromium-browser"}) {
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", name).c_str()) == 0) return name;
  }
  return "";
}

int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

TEST(ReportBrowser, ChartsRenderInHeadlessChromiumAndTheScreenshotIsNotBlank) {
  const std::string chromium = FindChromium();
  ASSERT_FALSE(chromium.empty())
      << "chromium not found: this acceptance test needs Debian's chromium (apt-get install "
         "chromium; scripts/setup-debian.sh installs it) or KFORGE_CHROMIUM=/path/to/chromium";
  auto chartjs = LoadChartJs("");
  ASSERT_TRUE(chartjs.has_value()) << chartjs.error().message;

  testing::ScratchDir dir;
  {
    testing::StoreBuilder builder(dir.path() / "run", "run-browser");
    testing::SyntheticOptions options;
    options.tasks = 12;
    options.samples = 2;
    options.iterations = 6;
    testing::FillSyntheticRun(builder, options);
  }
  auto opened = OpenRunForReading(dir.path() / "run", "");
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  auto data = LoadRunData(*opened);
  ASSERT_TRUE(data.has_value());
  const auto metrics = ComputeMetrics(*data);
  ReportOptions options;
  options.out_dir = dir.path() / "report";
  options.csv = options.json = false;
  auto files = WriteReport(*opened, *data, metrics, options);
  ASSERT_TRUE(files.has_value()) << files.error().message;
  ASSERT_TRUE(files->warnings.empty()) << files->warnings.front();

  const fs::path index = options.out_dir / "index.html";
  const fs::path dom = dir.path() / "dom.html";
  const fs::path png = dir.path() / "report.png";
  const std::string common = fmt::format(
      "timeout 120 {} --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --user-data-dir={} --virtual-time-budget=10000 --window-size=1280,1800",
      chromium, (dir.path() / "profile").string());
  ASSERT_EQ(Shell(fmt::format("{} --dump-dom file://{} > {} 2> {}", common, index.string(), dom.string(),
                            (dir.path() / "dump.log").string())),
            0)
      << ReadFile(dir.path() / "dump.log").value_or("");
  auto text = ReadFile(dom);
  ASSERT_TRUE(text.has_value());
  // The markers are attributes of <body> (the script's own text mentions them too).
  std::smatch body_tag;
  ASSERT_TRUE(std::regex_search(*text, body_tag, std::regex("<body[^>]*>")))
      << "no <body> in the DOM: " << text->substr(0, 400);
  const std::string body = body_tag[0].str();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(body, match, std::regex("data-charts-rendered=\"(\\d+)\"")))
      << "the page's script did not run: " << body;
  EXPECT_EQ(match[1].str(), std::to_string(kIndexCharts))
      << "charts rendered: " << match[1].str() << " of " << kIndexCharts;
  EXPECT_EQ(body.find("data-charts-error"), std::string::npos) << body;

  ASSERT_EQ(Shell(fmt::format("{} --screenshot={} file://{} > {} 2>&1", common, png.string(), index.string(),
                            (dir.path() / "shot.log").string())),
            0)
      << ReadFile(dir.path() / "shot.log").value_or("");
  ASSERT_TRUE(fs::exists(png)) << ReadFile(dir.path() / "shot.log").value_or("");
  EXPECT_GT(fs::file_size(png), 20000u);
  const fs::path stats = dir.path() / "png.txt";
  ASSERT_EQ(Shell(fmt::format("python3 {}/tests/report/png_stats.py {} > {}", KFORGE_SOURCE_HOME,
                            png.string(), stats.string())),
            0);
  std::istringstream in(ReadFile(stats).value_or(""));
  int width = 0, height = 0, colors = 0;
  double non_white = 0;
  in >> width >> height >> colors >> non_white;
  EXPECT_EQ(width, 1280);
  EXPECT_EQ(height, 1800);
  EXPECT_GT(colors, 50) << "the screenshot has too few colours to hold charts";
  EXPECT_GT(non_white, 0.02) << "the screenshot is nearly blank";
  // Kept beside the build for a person to look at.
  std::error_code ec;
  fs::copy_file(png, fs::path(KFORGE_BINARY_DIR) / "report-screenshot.png",
                fs::copy_options::overwrite_existing, ec);
}

}  // namespace
}  // namespace kforge::report
