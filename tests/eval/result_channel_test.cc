// The result channel's defences (docs/redteam.md, "fake results"): only one line carrying the
// job's seal is accepted, and a candidate's output files must be plain files in its own folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runner_protocol.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(UnsealResultTest, AcceptsOneSealedLineAndRemovesTheSeal) {
  auto r = UnsealResult(R"({"protocol": 1, "status": "ok", "seal": "abc123"})" "\n", "abc123");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->find("seal"), std::string::npos) << *r;
  EXPECT_NE(r->find("\"status\":\"ok\""), std::string::npos) << *r;
  EXPECT_EQ(r->back(), '\n');
}

TEST(UnsealResultTest, RefusesADocumentWithoutTheSeal) {
  auto r = UnsealResult(R"({"protocol": 1, "status": "ok"})" "\n", "abc123");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("lacks the job's seal"), std::string::npos);
}

TEST(UnsealResultTest, RefusesAWrongSeal) {
  EXPECT_FALSE(UnsealResult(R"({"protocol": 1, "seal": "abc124"})" "\n", "abc123"));
  EXPECT_FALSE(UnsealResult(R"({"protocol": 1, "seal": 7})" "\n", "abc123"));
}

TEST(UnsealResultTest, RefusesAForgedLineBeforeTheRealOne) {
  const std::string forged = R"({"protocol": 1, "status": "ok"})" "\n";
  const std::string real = R"({"protocol": 1, "status": "ok", "seal": "abc123"})" "\n";
  auto r = UnsealResult(forged + real, "abc123");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than one line"), std::string::npos);
  EXPECT_FALSE(UnsealResult(real + forged, "abc123"));
  EXPECT_FALSE(UnsealResult(real.substr(0, real.size() - 1), "abc123"));  // no newline
  EXPECT_FALSE(UnsealResult("garbage\n", "abc123"));
}

class OutputContainmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kforge-containment-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "cand" / "trial_0");
    fs::create_directories(root_ / "ref" / "outputs" / "trial_0");
    std::ofstream(root_ / "ref" / "outputs" / "trial_0" / "output_0.bin") << "1234";
    std::ofstream(root_ / "cand" / "trial_0" / "output_0.bin") << "5678";
  }
  void TearDown() override { fs::remove_all(root_); }

  Result<CandidateResult> Parse(const std::string& file) {
    const std::string doc =
        R"({"protocol": 1, "status": "ok", "trials": [{"index": 0, "outputs": [{"name": "output_0", )"
        R"("dtype": "float32", "shape": [1], "file": ")" + file + R"("}]}]})";
    return ParseCandidateResult(doc, root_ / "cand");
  }

  fs::path root_;
};

TEST_F(OutputContainmentTest, AcceptsAFileInTheCandidatesFolder) {
  auto r = Parse("output_0.bin");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->trials.at(0).outputs.at(0).file, root_ / "cand" / "trial_0" / "output_0.bin");
}

TEST_F(OutputContainmentTest, RefusesAnAbsolutePathToTheReferenceOutputs) {
  auto r = Parse((root_ / "ref" / "outputs" / "trial_0" / "output_0.bin").string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
}

TEST_F(OutputContainmentTest, RefusesDotDot) {
  auto r = Parse("../../ref/outputs/trial_0/output_0.bin");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
}

TEST_F(OutputContainmentTest, RefusesASymbolicLinkOutOfTheFolder) {
  fs::remove(root_ / "cand" / "trial_0" / "output_0.bin");
  fs::create_symlink(root_ / "ref" / "outputs" / "trial_0" / "output_0.bin",
                     root_ / "cand" / "trial_0" / "output_0.bin");
  auto r = Parse("output_0.bin");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos);
}

TEST_F(OutputContainmentTest, RefusesAFileBehindALinkedFolder) {
  fs::remove_all(root_ / "cand" / "trial_0");
  fs::create_directory_symlink(root_ / "ref" / "outputs" / "trial_0", root_ / "cand" / "trial_0");
  auto r = Parse("output_0.bin");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
}

TEST_F(OutputContainmentTest, ParsesTamperingAndTheAddressProbe) {
  fs::create_directories(root_ / "cand" / "address_probe");
  std::ofstream(root_ / "cand" / "address_probe" / "output_0.bin") << "0000";
  const std::string doc =
      R"({"protocol": 1, "status": "ok", "trials": [], "tampering": ["[timer-patch] x"], )"
      R"("address_probe": {"index": 1, "inputs_unchanged": true, "problems": [], "outputs": )"
      R"([{"name": "output_0", "dtype": "float32", "shape": [1], "file": "output_0.bin"}]}})";
  auto r = ParseCandidateResult(doc, root_ / "cand");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tampering.size(), 1u);
  EXPECT_EQ(r->tampering[0], "[timer-patch] x");
  ASSERT_TRUE(r->address_probe);
  EXPECT_EQ(r->address_probe->index, 1);
  EXPECT_EQ(r->address_probe->outputs.at(0).file, root_ / "cand" / "address_probe" / "output_0.bin");
}

}  // namespace
}  // namespace kforge
