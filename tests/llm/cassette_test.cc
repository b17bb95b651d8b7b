// Cassettes: record from a local server, replay byte-exactly, and name the first divergence.
#include "kforge/llm/cassette.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "kforge/llm/fingerprint.h"
#include "kforge/llm/openai.h"
#include "kforge/llm/redact.h"
#include "scripted_provider.h"
#include "temp_dir.h"
#include "test_server.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using testing::ScriptedProvider;
using testing::TempDir;
using testing::TestServer;
using testing::UserRequest;

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Request Conversation(const std::string& last) {
  Request r;
  r.messages = {Message::System("You write CUDA kernels."), Message::User(last)};
  r.temperature = 0.0;
  r.max_tokens = 256;
  return r;
}

// Records one Conversation(prompt) per prompt into a new cassette at `path`, each answered by
// "re: " and the prompt.
void RecordEchoes(const std::filesystem::path& path, std::initializer_list<const char*> prompts) {
  auto echo = std::make_shared<ScriptedProvider>(
      [](const Request& r, const CallOptions&) -> Result<Response> {
        Response response;
        response.text = "re: " + r.messages.back().Text();
        response.raw_body = response.text;
        return response;
      },
      "gen");
  auto writer = CassetteWriter::Create(path);
  ASSERT_TRUE(writer.has_value());
  auto recorder = NewRecordingProvider(echo, *writer);
  for (const char* prompt : prompts) {
    ASSERT_TRUE(recorder->Complete(Conversation(prompt), {}).has_value()) << prompt;
  }
}

TEST(CassetteTest, RecordedFromALocalServerReplaysIdentically) {
  TestServer ts;
  std::atomic<int> hits{0};
  ts.server().Post("/v1/chat/completions", [&](const httplib::Request& req,
                                               httplib::Response& res) {
    const int n = ++hits;
    const json body = json::parse(req.body);
    // Odd spacing and unicode: the replayed body must be byte-identical, not re-serialised.
    res.set_content("{ \"model\" : \"local-model\",\n  \"choices\":[{\"message\":{\"content\":" +
                        json("answer " + std::to_string(n) + " to " +
                             body["messages"][1]["content"].get<std::string>() + " — ✓")
                            .dump() +
                        "},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":" +
                        std::to_string(10 + n) + ",\"completion_tokens\":5} }",
                    "application/json");
  });
  TempDir dir;
  const auto path = dir.path() / "run.cassette.jsonl";
  auto live = std::shared_ptr<Provider>(
      NewOpenAiCompatibleProvider(testing::FastConfig(ts.url() + "/v1", ""), NewCurlTransport()));
  std::vector<Response> recorded;
  {
    auto writer = CassetteWriter::Create(path);
    ASSERT_TRUE(writer.has_value()) << writer.error().ToString();
    auto recorder = NewRecordingProvider(live, *writer);
    for (const char* prompt : {"write relu", "make it faster", "write relu"}) {
      auto r = recorder->Complete(Conversation(prompt), CallOptions{});
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      recorded.push_back(*r);
    }
  }
  ASSERT_EQ(hits.load(), 3);

  auto cassette = Cassette::Load(path);
  ASSERT_TRUE(cassette.has_value()) << cassette.error().ToString();
  auto replay = NewReplayProvider(*cassette, "test-model");
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    const char* prompt = i == 1 ? "make it faster" : "write relu";
    auto r = replay->Complete(Conversation(prompt), CallOptions{});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->raw_body, recorded[i].raw_body) << i;  // byte-exact
    EXPECT_EQ(r->text, recorded[i].text) << i;          // identical requests in recorded order
    EXPECT_EQ(r->usage.input_tokens, recorded[i].usage.input_tokens);
    EXPECT_EQ(r->usage.output_tokens, recorded[i].usage.output_tokens);
    EXPECT_EQ(r->finish_reason, "stop");
    EXPECT_EQ(r->model, "local-model");
  }
  EXPECT_EQ(hits.load(), 3);  // replay never touched the server
  EXPECT_EQ((*cassette)->Unserved(), 0);

  // The documented format: header line, then entries with fingerprint and metadata.
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(json::parse(line)["kforge_cassette"], 1);
  std::getline(in, line);
  const json entry = json::parse(line);
  EXPECT_EQ(entry["index"], 0);
  EXPECT_EQ(entry["model_id"], "test-model");
  EXPECT_EQ(entry["provider"], "openai_compatible");
  EXPECT_EQ(entry["model"], "wire-model");
  EXPECT_NE(entry["answered_by"].get<std::string>().find("local-model"), std::string::npos);
  EXPECT_FALSE(entry["recorded_at"].get<std::string>().empty());
  EXPECT_EQ(entry["fingerprint"], RequestFingerprint(Conversation("write relu"), "test-model"));
  EXPECT_EQ(entry["request"]["messages"][1]["content"][0]["text"], "write relu");
}

// A resumed run appends to its cassette: after several parts (one killed in the middle of a
// write) the file holds every answer once, with consecutive indices, and replays them all.
TEST(CassetteTest, OpenAppendsAcrossResumesAndDropsALineCutShort) {
  TempDir dir;
  const auto path = dir.path() / "run.cassette.jsonl";
  RecordEchoes(path, {"one"});
  auto echo = std::make_shared<ScriptedProvider>(
      [](const Request& r, const CallOptions&) -> Result<Response> {
        Response response;
        response.text = "re: " + r.messages.back().Text();
        return response;
      },
      "gen");
  for (const char* prompt : {"two", "three"}) {
    auto writer = CassetteWriter::Open(path);
    ASSERT_TRUE(writer.has_value()) << writer.error().message;
    ASSERT_TRUE(NewRecordingProvider(echo, *writer)->Complete(Conversation(prompt), {}));
  }
  std::ofstream(path, std::ios::app) << R"({"fingerprint":"half a li)";  // killed mid-write
  {
    auto writer = CassetteWriter::Open(path);
    ASSERT_TRUE(writer.has_value()) << writer.error().message;
    ASSERT_TRUE(NewRecordingProvider(echo, *writer)->Complete(Conversation("four"), {}));
  }
  std::istringstream lines(Slurp(path));
  std::string line;
  std::getline(lines, line);  // header
  std::vector<int> indices;
  while (std::getline(lines, line)) indices.push_back(json::parse(line).at("index").get<int>());
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 3}));
  auto cassette = Cassette::Load(path);
  ASSERT_TRUE(cassette.has_value()) << cassette.error().message;
  for (const char* prompt : {"one", "two", "three", "four"}) {
    auto served = (*cassette)->Serve("gen", Conversation(prompt));
    ASSERT_TRUE(served.has_value()) << served.error().message;
    EXPECT_EQ(served->text, std::string("re: ") + prompt);
  }
  EXPECT_EQ((*cassette)->Unserved(), 0);

  std::ofstream(dir.path() / "other.jsonl") << "{\"not\":\"a cassette\"}\n";
  auto refused = CassetteWriter::Open(dir.path() / "other.jsonl");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kParse);
}

TEST(CassetteTest, DivergingRunNamesTheFirstDifferingRequest) {
  TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  RecordEchoes(path, {"step one", "step two: use tiles of 32", "step three"});
  auto cassette = Cassette::Load(path);
  ASSERT_TRUE(cassette.has_value());
  auto replay = NewReplayProvider(*cassette, "gen");
  ASSERT_TRUE(replay->Complete(Conversation("step one"), {}).has_value());
  auto diverged = replay->Complete(Conversation("step two: use tiles of 64"), {});
  ASSERT_FALSE(diverged.has_value());
  const std::string& m = diverged.error().message;
  EXPECT_EQ(diverged.error().code, ErrorCode::kNotFound);
  EXPECT_NE(m.find("replay diverged at request 2 to model 'gen'"), std::string::npos) << m;
  EXPECT_NE(m.find("#1"), std::string::npos) << m;  // the recorded request it should have been
  EXPECT_NE(m.find("messages[1].content[0].text"), std::string::npos) << m;
  EXPECT_NE(m.find("differs at character 23"), std::string::npos) << m;
  EXPECT_NE(m.find("tiles of 32"), std::string::npos) << m;
  EXPECT_NE(m.find("tiles of 64"), std::string::npos) << m;
  // An exact replay names the flag that lets numbers and measured text differ between machines.
  EXPECT_NE(m.find("--replay-match numbers"), std::string::npos) << m;

  // A changed option is named too.
  Request hotter = Conversation("step two: use tiles of 32");
  hotter.temperature = 0.7;
  auto option = replay->Complete(hotter, {});
  ASSERT_FALSE(option.has_value());
  EXPECT_NE(option.error().message.find("temperature: recorded 0.0, now 0.7"), std::string::npos)
      << option.error().message;
}

TEST(CassetteTest, RunningPastTheRecordingIsADivergence) {
  TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  auto inner = std::make_shared<ScriptedProvider>(
      [](const Request&, const CallOptions&) -> Result<Response> { return Response{}; }, "m");
  {
    auto writer = CassetteWriter::Create(path);
    ASSERT_TRUE(writer.has_value());
    ASSERT_TRUE(NewRecordingProvider(inner, *writer)->Complete(UserRequest("a"), {}).has_value());
  }
  auto cassette = Cassette::Load(path);
  ASSERT_TRUE(cassette.has_value());
  auto replay = NewReplayProvider(*cassette, "m");
  ASSERT_TRUE(replay->Complete(UserRequest("a"), {}).has_value());
  auto extra = replay->Complete(UserRequest("a"), {});
  ASSERT_FALSE(extra.has_value());
  EXPECT_NE(extra.error().message.find("replay diverged at request 2"), std::string::npos);
  EXPECT_NE(extra.error().message.find("recorded only 1"), std::string::npos)
      << extra.error().message;
}

TEST(CassetteTest, BinaryBodiesRoundTripAndSecretsAreRedacted) {
  TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  const std::string secret = "sk-cassette-secret-000111222333";
  RegisterSecret(secret);
  const std::string binary("\xff\xfe\x00ok", 5);
  auto inner = std::make_shared<ScriptedProvider>(
      [&](const Request& r, const CallOptions&) -> Result<Response> {
        Response response;
        response.text = r.messages[0].Text() == "bin" ? "b" : "echo " + secret;
        response.raw_body =
            r.messages[0].Text() == "bin" ? binary : "{\"echo\":\"" + secret + "\"}";
        return response;
      },
      "m");
  {
    auto writer = CassetteWriter::Create(path);
    ASSERT_TRUE(writer.has_value());
    auto recorder = NewRecordingProvider(inner, *writer);
    ASSERT_TRUE(recorder->Complete(UserRequest("bin"), {}).has_value());
    ASSERT_TRUE(recorder->Complete(UserRequest("leak"), {}).has_value());
  }
  EXPECT_EQ(Slurp(path).find(secret), std::string::npos);
  auto cassette = Cassette::Load(path);
  ASSERT_TRUE(cassette.has_value()) << cassette.error().ToString();
  auto replay = NewReplayProvider(*cassette, "m");
  auto bin = replay->Complete(UserRequest("bin"), {});
  ASSERT_TRUE(bin.has_value());
  EXPECT_EQ(bin->raw_body, binary);
  auto leak = replay->Complete(UserRequest("leak"), {});
  ASSERT_TRUE(leak.has_value());
  EXPECT_EQ(leak->raw_body, "{\"echo\":\"[REDACTED]\"}");
}

TEST(CassetteTest, LoadRejectsOtherVersionsAndEditedEntries) {
  TempDir dir;
  const auto v2 = dir.path() / "v2.jsonl";
  std::ofstream(v2) << R"({"kforge_cassette":2})"
                    << "\n";
  auto loaded = Cassette::Load(v2);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().message.find("version 2 is not supported"), std::string::npos);
  EXPECT_NE(loaded.error().message.find("v2.jsonl:1"), std::string::npos);

  const auto path = dir.path() / "c.jsonl";
  auto inner = std::make_shared<ScriptedProvider>(
      [](const Request&, const CallOptions&) -> Result<Response> { return Response{}; }, "m");
  {
    auto writer = CassetteWriter::Create(path);
    ASSERT_TRUE(writer.has_value());
    ASSERT_TRUE(NewRecordingProvider(inner, *writer)->Complete(UserRequest("a"), {}).has_value());
  }
  std::string text = Slurp(path);
  text.replace(text.find("\"text\":\"a\""), 10, "\"text\":\"b\"");
  std::ofstream(path, std::ios::trunc) << text;
  auto edited = Cassette::Load(path);
  ASSERT_FALSE(edited.has_value());
  EXPECT_NE(edited.error().message.find("c.jsonl:2"), std::string::npos) << edited.error().message;
  EXPECT_NE(edited.error().message.find("fingerprint"), std::string::npos);
}

TEST(FingerprintTest, IsStableAndSensitiveToEveryField) {
  Request a = Conversation("x");
  EXPECT_EQ(RequestFingerprint(a, "m"), RequestFingerprint(Conversation("x"), "m"));
  EXPECT_NE(RequestFingerprint(a, "m"), RequestFingerprint(a, "other"));
  Request b = a;
  b.stop = {"END"};
  EXPECT_NE(RequestFingerprint(a, "m"), RequestFingerprint(b, "m"));
  Request c = a;
  c.messages[1].parts.push_back(ContentPart::ImageBase64("image/png", "AAAA"));
  Request d = a;
  d.messages[1].parts.push_back(ContentPart::ImageBase64("image/png", "AAAB"));
  EXPECT_NE(RequestFingerprint(c, "m"), RequestFingerprint(d, "m"));
  EXPECT_EQ(CanonicalRequestJson(a, "m"),
            R"({"max_tokens":256,"messages":[{"content":[{"text":"You write CUDA kernels.",)"
            R"("type":"text"}],"role":"system"},{"content":[{"text":"x","type":"text"}],)"
            R"("role":"user"}],"model_id":"m","temperature":0.0})");
}

TEST(CassetteTest, ReplayMayToleratePromptNumbersWhenAsked) {
  TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  RecordEchoes(path, {"write /work/main/examples/task.py",
                      "it took 1.25e-3 s, 3x faster, stopped by noise", "it took 1.02 ms"});
  // By default numbers must match.
  auto exact = Cassette::Load(path);
  ASSERT_TRUE(exact.has_value());
  auto strict = NewReplayProvider(*exact, "gen");
  ASSERT_TRUE(strict->Complete(Conversation("write /work/main/examples/task.py"), {}).has_value());
  EXPECT_FALSE(strict->Complete(Conversation("it took 2.5e-3 s, 2x faster"), {}).has_value());

  auto loaded = Cassette::Load(path, ReplayMatch::kNumbersMayDiffer);
  ASSERT_TRUE(loaded.has_value());
  auto replay = NewReplayProvider(*loaded, "gen");
  // Another checkout of the same file; another file name would not match.
  EXPECT_FALSE(replay->Complete(Conversation("write /tmp/ci/examples/other.py"), {}).has_value());
  ASSERT_TRUE(replay->Complete(Conversation("write /tmp/ci/examples/task.py"), {}).has_value());
  auto measured =
      replay->Complete(Conversation("it took 2.5e-3 s, 2x faster, stopped by timeout"), {});
  ASSERT_TRUE(measured.has_value()) << measured.error().message;
  EXPECT_EQ(measured->text, "re: it took 1.25e-3 s, 3x faster, stopped by noise");  // recorded
  EXPECT_EQ((*loaded)->ServedByShape(), 2);  // the moved path and the measured numbers
  // Words still matter, and so do options.
  EXPECT_FALSE(replay->Complete(Conversation("it took 7 hours"), {}).has_value());
  Request hotter = Conversation("it took 988 us");
  hotter.temperature = 0.7;
  EXPECT_FALSE(replay->Complete(hotter, {}).has_value());
  ASSERT_TRUE(replay->Complete(Conversation("it took 988 us"), {}).has_value());
  EXPECT_EQ((*loaded)->Unserved(), 0);
}

// A replay on another machine measures differently, in words as well as numbers (a profile
// there may call the kernel launch-bound): the loader's mask blanks the measured text, and a
// divergence that remains is reported on the masked texts, where the real difference shows.
TEST(CassetteTest, MeasuredTextMayDifferInWordsWhenTheLoaderMasksIt) {
  TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  RecordEchoes(
      path, {"kernel A\nMEASURED bottleneck: unknown", "kernel B\nMEASURED bottleneck: unknown"});
  // Blanks everything after the "MEASURED" marker (the prompt layer's own mask does this for
  // the sections of its templates).
  const MeasuredTextMask mask = [](std::string_view text) {
    const std::size_t at = text.find("MEASURED");
    return std::string(at == std::string_view::npos ? text : text.substr(0, at)) + "#";
  };
  const Request launch_bound = Conversation("kernel A\nMEASURED bottleneck: launch-bound");

  // Without the mask the words differ, even when numbers may.
  auto numbers_only = Cassette::Load(path, ReplayMatch::kNumbersMayDiffer);
  ASSERT_TRUE(numbers_only.has_value());
  EXPECT_FALSE(NewReplayProvider(*numbers_only, "gen")->Complete(launch_bound, {}).has_value());
  // The mask is for kNumbersMayDiffer only: an exact replay ignores it.
  auto exact = Cassette::Load(path, ReplayMatch::kExact, mask);
  ASSERT_TRUE(exact.has_value());
  EXPECT_FALSE(NewReplayProvider(*exact, "gen")->Complete(launch_bound, {}).has_value());

  auto masked = Cassette::Load(path, ReplayMatch::kNumbersMayDiffer, mask);
  ASSERT_TRUE(masked.has_value());
  auto replay = NewReplayProvider(*masked, "gen");
  auto first = replay->Complete(launch_bound, {});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(first->text, "re: kernel A\nMEASURED bottleneck: unknown");  // recorded
  // What is not measured still matters, and the error shows it rather than a number.
  auto other = replay->Complete(Conversation("kernel C\nMEASURED bottleneck: unknown 1.5 ms"), {});
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message.find("kernel B"), std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find("measured text masked"), std::string::npos)
      << other.error().message;
  EXPECT_EQ(other.error().message.find("1.5"), std::string::npos) << other.error().message;
}

}  // namespace
}  // namespace kforge::llm
