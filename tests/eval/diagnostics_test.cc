#include "kforge/eval/diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kforge {
namespace {

TEST(DiagnosticsTest, KeepsFirstErrorsDropsTemplateChains) {
  std::string log =
      "/tmp/build/candidate.cu(12): error: identifier \"idex\" is undefined\n"
      "      out[idex] = x;\n"
      "          ^\n"
      "In instantiation of 'void f<T>() [with T = float]':\n"
      "   required from here\n"
      "/tmp/build/candidate.cu(20): warning: unused variable\n"
      "/tmp/build/candidate.cu(30): note: see declaration\n"
      "/tmp/build/candidate.cu(40): error: expected a \";\"\n"
      "2 errors detected in the compilation of \"candidate.cu\".\n";
  std::string trimmed = TrimDiagnostics(log, "/tmp/build");
  EXPECT_EQ(trimmed.find("candidate.cu(12): error: identifier \"idex\""), 0u) << trimmed;
  EXPECT_NE(trimmed.find("out[idex]"), std::string::npos);
  EXPECT_NE(trimmed.find("expected a \";\""), std::string::npos);
  EXPECT_EQ(trimmed.find("instantiation"), std::string::npos);
  EXPECT_EQ(trimmed.find("warning"), std::string::npos);
  EXPECT_EQ(trimmed.find("note:"), std::string::npos);
  EXPECT_EQ(trimmed.find("/tmp/build"), std::string::npos);
}

TEST(DiagnosticsTest, BoundsErrorsAndLines) {
  std::string log;
  for (int i = 0; i < 200; ++i) {
    log += "k.cu(" + std::to_string(i) + "): error: something broke number " + std::to_string(i) +
           "\n  context line\n";
  }
  TrimOptions options;
  options.max_errors = 3;
  std::string trimmed = TrimDiagnostics(log, "", options);
  EXPECT_NE(trimmed.find("number 0"), std::string::npos);
  EXPECT_NE(trimmed.find("number 2"), std::string::npos);
  EXPECT_EQ(trimmed.find("number 3\n"), std::string::npos);
  EXPECT_NE(trimmed.find("197 more errors not shown"), std::string::npos) << trimmed;
  EXPECT_LE(std::count(trimmed.begin(), trimmed.end(), '\n'), 10);
}

TEST(DiagnosticsTest, LogsWithoutErrorLinesKeepTheirHead) {
  std::string trimmed = TrimDiagnostics("ld: cannot find -lfoo\ncollect2: failed\n");
  EXPECT_NE(trimmed.find("cannot find -lfoo"), std::string::npos);
}

TEST(DiagnosticsTest, VeryLongLinesAreCut) {
  std::string log = "x.cpp:1: error: " + std::string(5000, 'a') + "\n";
  EXPECT_LT(TrimDiagnostics(log).size(), 400u);
}

}  // namespace
}  // namespace kforge
