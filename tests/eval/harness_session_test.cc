// The parent side of the judge (runner/HARNESS.md): arena, channel, freezer and HarnessSession,
// against the real kforge-harness-cpu and real compiled candidates.
#include "kforge/eval/harness_session.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "kforge/core/child_process.h"
#include "kforge/core/files.h"
#include "kforge/eval/arena.h"
#include "kforge/eval/freezer.h"
#include "kforge/eval/harness_binary.h"
#include "kforge/eval/harness_channel.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A fresh folder every user can read (the harness runs as nobody when the tests run as root).
fs::path TempFolder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("kforge-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all & ~fs::perms::others_write & ~fs::perms::group_write);
  return dir;
}

TEST(ArenaTest, RegionsAreAlignedAndBounded) {
  auto arena = Arena::Create(1000);
  ASSERT_TRUE(arena);
  EXPECT_GE((*arena)->size(), 1000u);
  auto a = (*arena)->Allocate(10);
  auto b = (*arena)->Allocate(10);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(b->offset, 64u);
  const std::uint64_t mark = (*arena)->used();
  ASSERT_TRUE((*arena)->Allocate(100));
  (*arena)->ResetTo(mark);
  EXPECT_EQ((*arena)->Allocate(1)->offset, 128u);
  auto too_big = (*arena)->Allocate(1 << 20);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, ErrorCode::kResourceExhausted);
  std::memset((*arena)->Bytes(*a).data(), 7, 10);
  ASSERT_TRUE((*arena)->Grow(1 << 20));
  EXPECT_EQ(static_cast<int>((*arena)->Bytes(*a)[9]), 7) << "growing keeps the contents";
  EXPECT_TRUE((*arena)->Allocate(1 << 19));
}

TEST(HarnessChannelTest, MessagesKeepTheirBoundariesAndTheLimitHolds) {
  auto channel = HarnessChannel::Create();
  ASSERT_TRUE(channel);
  const int child = channel->child_fd();
  ASSERT_TRUE(channel->Send("{\"a\":1}"));
  char buf[64] = {};
  ASSERT_EQ(::recv(child, buf, sizeof(buf), 0), 7);
  ASSERT_EQ(::send(child, "one", 3, 0), 3);
  ASSERT_EQ(::send(child, "two", 3, 0), 3);
  EXPECT_EQ(*channel->Receive(Clock::now() + milliseconds(500)), "one");
  EXPECT_EQ(*channel->Receive(Clock::now() + milliseconds(500)), "two");
  auto none = channel->Receive(Clock::now() + milliseconds(50));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kTimeout);
  const std::string big(kMaxHarnessMessage + 10, 'x');
  ASSERT_EQ(::send(child, big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  auto cut = channel->Receive(Clock::now() + milliseconds(500));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, ErrorCode::kParse);
  EXPECT_FALSE(channel->Send(big));
  channel->CloseChildEnd();
  auto closed = channel->Receive(Clock::now() + milliseconds(500));
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code, ErrorCode::kUnavailable);
}

// --- the freeze, with each method this machine offers -------------------------------------

std::vector<FreezeMethod> MethodsHere() {
  std::vector<FreezeMethod> methods;
  for (auto m : {FreezeMethod::kCgroupV1, FreezeMethod::kCgroupV2, FreezeMethod::kSignals}) {
    if (Freezer::Create(m)) methods.push_back(m);
  }
  return methods;
}

std::uintmax_t SizeOf(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

class FreezerTest : public ::testing::TestWithParam<FreezeMethod> {};

// Writers in the child, in a grandchild that made its own session and in one that forked away
// from it: after Freeze nothing of them runs; after Thaw they all run again.
TEST_P(FreezerTest, NothingOfTheChildRunsWhileFrozen) {
  auto freezer = Freezer::Create(GetParam());
  ASSERT_TRUE(freezer) << freezer.error().message;
  const fs::path dir = TempFolder("freeze");
  const std::string loop = "while :; do echo x >> ";
  const bool catches_orphans = GetParam() != FreezeMethod::kSignals;
  std::string script = loop + (dir / "a").string() + "; done & setsid sh -c '" + loop +
                       (dir / "b").string() + "; done' & ";
  if (catches_orphans) script += "(sh -c '" + loop + (dir / "c").string() + "; done' &) ; ";
  script += "wait";
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.cgroup_procs = (*freezer)->procs_file();
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child) << child.error().message;
  (*freezer)->Attach((*child)->pid());
  std::vector<fs::path> files = {dir / "a", dir / "b"};
  if (catches_orphans) files.push_back(dir / "c");
  for (int i = 0; i < 500; ++i) {
    bool all = true;
    for (const auto& f : files) all = all && SizeOf(f) > 0;
    if (all) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE((*freezer)->Freeze(Clock::now() + std::chrono::seconds(5)));
    EXPECT_GE((*freezer)->frozen_processes(), static_cast<int>(files.size()));
    std::vector<std::uintmax_t> before;
    for (const auto& f : files) before.push_back(SizeOf(f));
    std::this_thread::sleep_for(milliseconds(100));
    for (std::size_t i = 0; i < files.size(); ++i) {
      EXPECT_EQ(SizeOf(files[i]), before[i]) << files[i] << " grew while frozen (round " << round
                                             << ", " << FreezeMethodName(GetParam()) << ")";
    }
    ASSERT_TRUE((*freezer)->Thaw());
    std::this_thread::sleep_for(milliseconds(100));
    for (std::size_t i = 0; i < files.size(); ++i) {
      EXPECT_GT(SizeOf(files[i]), before[i]) << files[i] << " did not run again after the thaw";
    }
  }
  (*freezer)->KillAll();  // also what left the process group
  (*child)->Kill();
  freezer->reset();
  std::this_thread::sleep_for(milliseconds(50));
  if (catches_orphans) {
    const auto size = SizeOf(dir / "c");
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(SizeOf(dir / "c"), size) << "the orphan outlived its cgroup";
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Methods, FreezerTest, ::testing::ValuesIn(MethodsHere()),
                         [](const auto& param) {
                           std::string n(FreezeMethodName(param.param));
                           std::erase(n, '-');
                           return n;
                         });

TEST(FreezerTest, SignalsAlwaysWorkAndTheEnvironmentPicksAMethod) {
  EXPECT_TRUE(Freezer::Create(FreezeMethod::kSignals));
  ::setenv("KFORGE_FREEZE", "signals", 1);
  auto f = Freezer::Create();
  ::unsetenv("KFORGE_FREEZE");
  ASSERT_TRUE(f);
  EXPECT_EQ((*f)->method(), FreezeMethod::kSignals);
  ::setenv("KFORGE_FREEZE", "ice", 1);
  auto bad = Freezer::Create();
  ::unsetenv("KFORGE_FREEZE");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("KFORGE_FREEZE"), std::string::npos);
}

// --- the session with the real cpu harness -------------------------------------------------

// Compiles a candidate like the cpp backend does (g++, the ABI header).
fs::path CompileCandidate(const fs::path& dir, const std::string& name, const std::string& source) {
  const fs::path src = dir / (name + ".cpp");
  const fs::path so = dir / (name + ".so");
  EXPECT_TRUE(WriteFile(src, source));
  ProcessSpec spec;
  spec.argv = {"g++", "-O2", "-std=c++17", "-fopenmp", "-shared", "-fPIC", "-I",
               std::string(KFORGE_SOURCE_HOME) + "/runner/kforge_runner/abi", "-o", so.string(),
               src.string()};
  auto r = RunProcess(spec);
  EXPECT_TRUE(r && r->state == ProcessState::kDone) << (r ? r->stderr_text : r.error().message);
  ::chmod(so.c_str(), 0755);
  return so;
}

constexpr const char* kRelu = R"(
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor* in, int, kforge_tensor* out, int, void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (long i = 0; i < kforge_numel(&in[0]); ++i) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
})";

LoadRequest Native(const fs::path& so) {
  LoadRequest r;
  r.kind = "native";
  r.artifact = so;
  return r;
}

class HarnessSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto binary = HarnessBinary("cpu");
    if (!binary) GTEST_SKIP() << binary.error().message;
    binary_ = *binary;
    dir_ = TempFolder("session");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<HarnessSession> Start() {
    HarnessLaunch launch;
    launch.argv = {binary_.string()};
    launch.policy.scratch_dir = dir_ / "scratch";
    fs::create_directories(launch.policy.scratch_dir);
    fs::permissions(launch.policy.scratch_dir, fs::perms::all);
    launch.policy.visible_paths = {dir_};
    auto s = HarnessSession::Start(launch);
    EXPECT_TRUE(s) << s.error().message;
    if (!s) return nullptr;
    (*s)->set_timeout(std::chrono::seconds(20));
    auto hello = (*s)->Hello({.device = "cpu", .arena_bytes = 1 << 20});
    EXPECT_TRUE(hello) << hello.error().message << "\n" << hello.error().diagnostics;
    if (hello) {
      EXPECT_EQ(hello->protocol, 2);
      EXPECT_EQ(hello->harness, "kforge-harness cpu");
    }
    return std::move(*s);
  }

  ArenaTensor Floats(HarnessSession& s, const std::vector<float>& values) {
    TensorSpec spec;
    spec.name = "x";
    spec.dtype = "float32";
    spec.shape = {static_cast<std::int64_t>(values.size())};
    auto t = s.Place(spec);
    EXPECT_TRUE(t);
    std::memcpy(s.Bytes(*t).data(), values.data(), values.size() * 4);
    return *t;
  }

  static std::vector<float> AsFloats(const HostTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  }

  HarnessResult<CallReply> CallOnce(HarnessSession& s, const std::vector<float>& x) {
    const ArenaTensor in = Floats(s, x);
    auto out = s.Place(in.spec);
    auto after = s.arena().Allocate(in.region.bytes);
    return s.Call({.inputs = {in}, .outputs = {*out}, .inputs_after = {*after}, .reuse = false});
  }

  fs::path binary_;
  fs::path dir_;
};

TEST_F(HarnessSessionTest, CallsTheCandidateAndReturnsFrozenCopies) {
  auto s = Start();
  ASSERT_TRUE(s);
  const fs::path so = CompileCandidate(dir_, "relu", kRelu);
  ASSERT_TRUE(s->Load(Native(so)));
  auto r = CallOnce(*s, {-1, 2, -3, 4});
  ASSERT_TRUE(r) << r.error().message << r.error().diagnostics;
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(AsFloats(r->outputs[0]), (std::vector<float>{0, 2, 0, 4}));
  ASSERT_EQ(r->inputs_after.size(), 1u);
  EXPECT_EQ(AsFloats(r->inputs_after[0]), (std::vector<float>{-1, 2, -3, 4}));
  EXPECT_GT(r->parent_seconds, 0);
  // A second call, in buffers at new addresses, and the address probe's reuse.
  auto again = CallOnce(*s, {5, -6});
  ASSERT_TRUE(again);
  EXPECT_EQ(AsFloats(again->outputs[0]), (std::vector<float>{5, 0}));
}

TEST_F(HarnessSessionTest, WhatTheCallLeavesUnwrittenIsPoison) {
  auto s = Start();
  ASSERT_TRUE(s);
  const fs::path so = CompileCandidate(dir_, "half", R"(
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor* in, int, kforge_tensor* out, int, void*) {
  float* y = static_cast<float*>(out[0].data);
  for (long i = 0; i < kforge_numel(&in[0]) / 2; ++i) y[i] = 1;
  return 0;
})");
  ASSERT_TRUE(s->Load(Native(so)));
  auto r = CallOnce(*s, {1, 1, 1, 1});
  ASSERT_TRUE(r);
  const auto y = AsFloats(r->outputs[0]);
  EXPECT_EQ(y.at(0), 1);
  EXPECT_TRUE(std::isnan(y.at(2)) && std::isnan(y.at(3)));
}

TEST_F(HarnessSessionTest, FailuresAreTheirVerdictStatuses) {
  {
    auto s = Start();
    ASSERT_TRUE(s);
    auto load = s->Load(Native(dir_ / "missing.so"));
    ASSERT_FALSE(load);
    EXPECT_EQ(load.error().kind, HarnessProblem::Kind::kFailure);
    EXPECT_EQ(load.error().status, "compile_error");
  }
  {
    auto s = Start();
    ASSERT_TRUE(s);
    const fs::path so = CompileCandidate(dir_, "three", R"(
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*) { return 3; })");
    ASSERT_TRUE(s->Load(Native(so)));
    auto r = CallOnce(*s, {1});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, HarnessProblem::Kind::kFailure);
    EXPECT_EQ(r.error().status, "runtime_error");
    EXPECT_NE(r.error().diagnostics.find("returned 3"), std::string::npos);
    EXPECT_FALSE(s->ended()) << "a failure the harness reports leaves it running";
  }
  {
    auto s = Start();
    ASSERT_TRUE(s);
    const fs::path so = CompileCandidate(dir_, "crash", R"(
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*) {
  *(volatile int*)nullptr = 1; return 0; })");
    ASSERT_TRUE(s->Load(Native(so)));
    auto r = CallOnce(*s, {1});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, HarnessProblem::Kind::kEnded);
    EXPECT_EQ(r.error().process.term_signal, SIGSEGV);
    EXPECT_TRUE(s->ended());
  }
  {
    auto s = Start();
    ASSERT_TRUE(s);
    s->set_timeout(milliseconds(300));
    const fs::path so = CompileCandidate(dir_, "hang", R"(
#include "kforge_kernel.h"
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*) {
  for (volatile int i = 0;; ) (void)i; return 0; })");
    ASSERT_TRUE(s->Load(Native(so)));
    auto r = CallOnce(*s, {1});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, HarnessProblem::Kind::kTimedOut);
  }
}

// Candidate code cannot start a process: fork fails inside the harness (seccomp), threads work.
TEST_F(HarnessSessionTest, TheHarnessForbidsForkButNotThreads) {
  auto s = Start();
  ASSERT_TRUE(s);
  const fs::path so = CompileCandidate(dir_, "fork", R"(
#include "kforge_kernel.h"
#include <cerrno>
#include <thread>
#include <unistd.h>
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor* out, int, void*) {
  float* y = static_cast<float*>(out[0].data);
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  y[0] = pid < 0 ? static_cast<float>(errno) : -1.0f;
  std::thread t([&] { y[1] = 42; });
  t.join();
  return 0;
})");
  ASSERT_TRUE(s->Load(Native(so)));
  auto r = CallOnce(*s, {0, 0});
  ASSERT_TRUE(r) << r.error().message << r.error().diagnostics;
  const auto y = AsFloats(r->outputs[0]);
  EXPECT_EQ(y.at(0), static_cast<float>(EPERM)) << "fork must fail with EPERM";
  EXPECT_EQ(y.at(1), 42);
}

// A thread the candidate leaves running writes the rest of the output after the call has
// returned: the parent's copy is taken frozen, at the reply, so it shows what the call left.
TEST_F(HarnessSessionTest, LateWritesAfterTheReplyAreNotJudged) {
  auto s = Start();
  ASSERT_TRUE(s);
  const fs::path so = CompileCandidate(dir_, "late", R"(
#include "kforge_kernel.h"
#include <chrono>
#include <thread>
extern "C" int kforge_forward(const kforge_tensor* in, int, kforge_tensor* out, int, void*) {
  float* y = static_cast<float*>(out[0].data);
  const long n = kforge_numel(&in[0]);
  for (long i = 0; i < n / 2; ++i) y[i] = 1;
  std::thread([y, n] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (long i = n / 2; i < n; ++i) y[i] = 1;
  }).detach();
  return 0;
})");
  ASSERT_TRUE(s->Load(Native(so)));
  auto r = CallOnce(*s, std::vector<float>(1000, 1));
  ASSERT_TRUE(r);
  const auto y = AsFloats(r->outputs[0]);
  EXPECT_TRUE(std::isnan(y.at(999))) << "the late half must read as poison";
}

TEST_F(HarnessSessionTest, EmptySamplesBeforeLoadAndTimedSamplesAfter) {
  auto s = Start();
  ASSERT_TRUE(s);
  const ArenaTensor in = Floats(*s, std::vector<float>(256, -1));
  auto out = s->Place(in.spec);
  ASSERT_TRUE(out);
  ASSERT_TRUE(s->PrepareTiming({.sets = {TimingSet{{in}, {*out}}}, .clock = "cpu"}));
  for (int i = 0; i < 5; ++i) {
    auto e = s->Sample({.set = 0, .mode = "cpu", .spin_s = 0});
    ASSERT_TRUE(e) << e.error().message << e.error().diagnostics;
    EXPECT_GE(e->seconds, 0);
    EXPECT_GE(e->parent_seconds, e->seconds);
  }
  const fs::path so = CompileCandidate(dir_, "relu", kRelu);
  ASSERT_TRUE(s->Load(Native(so)));
  auto t = s->Sample({.set = 0, .mode = "cpu", .spin_s = 0});
  ASSERT_TRUE(t);
  auto copies = s->FreezeAndCopy({*out});
  ASSERT_TRUE(copies);
  EXPECT_EQ(AsFloats((*copies)[0]), std::vector<float>(256, 0));
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// A stream handle the adapter cannot provide is refused with a line that says what it provides
// (a SYCL candidate must never get NULL for its queue).
TEST_F(HarnessSessionTest, RefusesAStreamHandleItCannotProvide) {
  auto s = Start();
  ASSERT_TRUE(s);
  LoadRequest load = Native(CompileCandidate(dir_, "relu", kRelu));
  load.stream_handle = "sycl-queue";
  auto r = s->Load(load);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, HarnessProblem::Kind::kFailure);
  EXPECT_EQ(r.error().status, "infra_error");
  EXPECT_NE(r.error().diagnostics.find("stream_handle none"), std::string::npos)
      << r.error().diagnostics;
}

// Replies are tied to their command: a reply without the command's id ends the session as a
// protocol break (a forged or stale reply is never taken for the answer).
TEST_F(HarnessSessionTest, AReplyWithoutTheCommandsIdIsAProtocolBreak) {
  auto s = Start();
  ASSERT_TRUE(s);
  const fs::path so = CompileCandidate(dir_, "forge", R"(
#include "kforge_kernel.h"
#include <sys/socket.h>
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*) {
  const char reply[] = "{\"ok\": true}";
  send(3, reply, sizeof(reply) - 1, 0);
  return 0;
})");
  ASSERT_TRUE(s->Load(Native(so)));
  auto r = CallOnce(*s, {1});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, HarnessProblem::Kind::kProtocol);
  EXPECT_NE(r.error().message.find("id"), std::string::npos) << r.error().message;
  EXPECT_TRUE(s->ended());
}

// `max_wait` bounds only the wait for `hello`: a harness that answers may live longer (a warm
// slot's harness serves for minutes), each command under its own timeout.
TEST_F(HarnessSessionTest, TheFirstCommandsDeadlineEndsAtHello) {
  HarnessLaunch launch;
  launch.argv = {binary_.string()};
  launch.policy.scratch_dir = dir_ / "scratch";
  fs::create_directories(launch.policy.scratch_dir);
  fs::permissions(launch.policy.scratch_dir, fs::perms::all);
  launch.policy.visible_paths = {dir_};
  launch.max_wait = std::chrono::seconds(1);
  auto s = HarnessSession::Start(launch);
  ASSERT_TRUE(s) << s.error().message;
  (*s)->set_timeout(std::chrono::seconds(20));
  ASSERT_TRUE((*s)->Hello({.device = "cpu", .arena_bytes = 1 << 20}));
  std::this_thread::sleep_for(milliseconds(1600));
  ASSERT_TRUE((*s)->Load(Native(CompileCandidate(dir_, "relu", kRelu))));
  auto r = CallOnce(**s, {-1, 2});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(AsFloats(r->outputs[0]), (std::vector<float>{0, 2}));
}

// A harness kept in a folder the sandbox would hide (a private /tmp) is still started: the session
// shows its program's folder to the sandbox.
TEST_F(HarnessSessionTest, AHarnessInTheHostsTmpStarts) {
  const fs::path copy = dir_ / "bin" / binary_.filename();
  fs::create_directories(copy.parent_path());
  fs::copy_file(binary_, copy);
  fs::permissions(dir_ / "bin", fs::perms::all & ~fs::perms::others_write & ~fs::perms::group_write);
  HarnessLaunch launch;
  launch.argv = {copy.string()};
  launch.policy.scratch_dir = dir_ / "scratch";
  fs::create_directories(launch.policy.scratch_dir);
  fs::permissions(launch.policy.scratch_dir, fs::perms::all);
  auto s = HarnessSession::Start(launch);
  ASSERT_TRUE(s) << s.error().message;
  (*s)->set_timeout(std::chrono::seconds(20));
  auto hello = (*s)->Hello({.device = "cpu", .arena_bytes = 1 << 20});
  ASSERT_TRUE(hello) << hello.error().message << "\n" << hello.error().diagnostics;
  EXPECT_EQ(hello->protocol, 2);
}

}  // namespace
}  // namespace kforge
