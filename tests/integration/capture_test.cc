// `gputriage capture PID` on real running programs (tests/crashers/hung_job.c): the bundle names
// the functions every thread waits in, and the process goes on afterwards, answering on its pipe;
// the refusals (no such process, a zombie, another tracer, gputriage's parent) say why.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/model.h"
#include "integration_util.h"
#include "run_cli.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

const std::string kHungJob = std::string(GT_CRASHERS_DIR) + "/hung_job";

// A line from `fd`, waiting at most `timeout_ms`; "" on timeout or EOF.
std::string ReadLine(int fd, int timeout_ms) {
  std::string line;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return "";
    char c;
    if (read(fd, &c, 1) != 1) return "";
    if (c == '\n') return line;
    line.push_back(c);
  }
}

// A /proc/PID/stat state letter of a thread: R, S, D, T (stopped), t (tracing stop), Z...
char ThreadState(int pid, int tid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

std::string StatusField(int pid, const std::string& key) {
  std::istringstream in(ReadAll("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

// A child running `argv` with its stdin and stdout on pipes to us; killed and reaped at the end.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Child() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  int from() const { return from_; }
  bool Send(const std::string& text) {
    return write(to_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }
  void CloseStdin() {
    close(to_);
    to_ = -1;
  }
  // The exit status once it ends (within `timeout_ms`); -1 when it does not.
  int Wait(int timeout_ms) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      usleep(10000);
    }
    return -1;
  }

 private:
  int pid_ = -1, to_ = -1, from_ = -1;
  bool reaped_ = false;
};

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gt_capture_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  testing::CliOutput Capture(std::vector<std::string> args) {
    args.insert(args.begin(), "capture");
    return testing::RunCli(GT_GPUTRIAGE_BIN, args, {"GPUTRIAGE_HOME=" + dir_ + "/home"});
  }
  std::string dir_;
};

bool AnyFrameNamed(const Json& thread, const std::string& function) {
  for (const Json& f : thread.value("frames", Json::array())) {
    if (f.value("function", "") == function) return true;
  }
  return false;
}

TEST_F(CaptureTest, TakesEveryThreadsStackAndTheProcessGoesOn) {
  Child job({kHungJob, "3"});
  ASSERT_GT(job.pid(), 0);
  ASSERT_EQ(ReadLine(job.from(), 10000), "ready " + std::to_string(job.pid()));
  auto r = Capture({"--json", "--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(job.pid())});
  ASSERT_EQ(r.status, 0) << r.err;
  Json out = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["pid"], job.pid());
  EXPECT_EQ(out["capture"]["threads_stopped"], 4);
  EXPECT_EQ(out["capture"]["threads_not_stopped"], 0);
  EXPECT_EQ(out["capture"]["detached"], true);
  EXPECT_EQ(out["classification"]["kind"], "captured-running");
  ASSERT_TRUE(out["bundle"].is_string()) << r.out;
  const std::string bundle = out["bundle"];
  EXPECT_NE(bundle.find("-hung_job-" + std::to_string(job.pid())), std::string::npos) << bundle;
  for (const Json& t : out["threads"])
    EXPECT_TRUE(t["top"].is_string()) << "every thread has an innermost frame: " << t;

  // analyze of a capture: the main thread is listed as such, not as a crashed one.
  testing::CliOutput analyzed =
      testing::RunCli(GT_GPUTRIAGE_BIN, {"analyze", bundle}, {"GPUTRIAGE_HOME=" + dir_ + "/home"});
  EXPECT_NE(analyzed.out.find("thread " + std::to_string(job.pid()) + " \"hung_job\" (main thread):"),
            std::string::npos)
      << analyzed.out;
  EXPECT_EQ(analyzed.out.find("(crashed)"), std::string::npos) << analyzed.out;

  // The bundle: every thread's stack, named.
  Json process = Json::parse(ReadAll(bundle + "/process.json"), nullptr, false);
  Json manifest = Json::parse(ReadAll(bundle + "/manifest.json"), nullptr, false);
  ASSERT_TRUE(process.is_object() && manifest.is_object());
  ASSERT_EQ(process["threads"].size(), 4u) << process.dump(1);
  EXPECT_EQ(process["threads"][0]["tid"], job.pid()) << "the main thread first";
  EXPECT_TRUE(AnyFrameNamed(process["threads"][0], "hung_main_serve")) << process["threads"][0].dump(1);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(AnyFrameNamed(process["threads"][i], "hung_worker_wait")) << process["threads"][i].dump(1);
  }
  EXPECT_EQ(process["classification"]["kind"], "captured-running");
  EXPECT_EQ(process["timed_out"], false);
  EXPECT_TRUE(process["exit_status"].is_null()) << "a running process has no exit status";
  EXPECT_EQ(manifest["capture"]["method"], "ptrace-seize");
  EXPECT_EQ(manifest["capture"]["pid"], job.pid());
  EXPECT_EQ(manifest["capture"]["exited_during_capture"], false);
  EXPECT_EQ(manifest["capture"]["was_stopped"], false);
  EXPECT_FALSE(manifest.contains("exit_status"));
  EXPECT_EQ(manifest["classification"]["kind"], "captured-running");
  EXPECT_EQ(manifest["classification"]["category"], "hang-timeout");
  EXPECT_EQ(manifest["files"]["process.json"]["present"], true);
  EXPECT_EQ(manifest["files"]["stdout.tail"]["present"], false);
  EXPECT_EQ(manifest["files"]["libraries.json"]["present"], true);
  EXPECT_EQ(manifest["files"]["snapshot.json"]["reason"], "--no-snapshot");

  // Let go: no thread is stopped or traced, and the process answers.
  for (const Json& t : process["threads"]) {
    int tid = t["tid"];
    char state = ThreadState(job.pid(), tid);
    EXPECT_NE(state, 't') << "thread " << tid << " left in a tracing stop";
    EXPECT_NE(state, 'T') << "thread " << tid << " left stopped";
    EXPECT_EQ(StatusField(tid, "TracerPid"), "\t0") << "thread " << tid;
  }
  ASSERT_TRUE(job.Send("ping\n"));
  EXPECT_EQ(ReadLine(job.from(), 5000), "pong 1");
  ASSERT_TRUE(job.Send("ping\n"));
  EXPECT_EQ(ReadLine(job.from(), 5000), "pong 2");
  job.CloseStdin();
  EXPECT_EQ(job.Wait(5000), 0) << "it ends as it would have";
}

TEST_F(CaptureTest, SummaryOnStderrNamesTheThreadsAndTheBundle) {
  Child job({kHungJob, "1"});
  ASSERT_EQ(ReadLine(job.from(), 10000), "ready " + std::to_string(job.pid()));
  auto r = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(job.pid())});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("gputriage: captured pid " + std::to_string(job.pid()) + " (hung_job): 2 threads stopped for"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("then detached; it keeps running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hung_worker_wait"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  bundle: " + dir_ + "/bundles/"), std::string::npos) << r.err;
  ASSERT_TRUE(job.Send("x\n"));
  EXPECT_EQ(ReadLine(job.from(), 5000), "pong 1");
}

// Failed before: `analyze` of the core `capture --core` writes (a process that was running, no
// signal) said "SIG0 was sent by another process".
TEST_F(CaptureTest, TheCoreOfARunningProcessIsNotReadAsASignal) {
  Child job({kHungJob, "1"});
  ASSERT_EQ(ReadLine(job.from(), 10000), "ready " + std::to_string(job.pid()));
  auto r = Capture({"--json", "--core", "--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(job.pid())});
  ASSERT_EQ(r.status, 0) << r.err;
  Json out = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  std::string core = out.value("bundle", "") + "/core.zst";
  ASSERT_TRUE(fs::exists(core)) << r.out << r.err;
  auto analyzed = testing::RunCli(GT_GPUTRIAGE_BIN, {"analyze", core}, {"GPUTRIAGE_HOME=" + dir_ + "/home"});
  EXPECT_EQ(analyzed.out.find("SIG0"), std::string::npos) << analyzed.out;
  EXPECT_EQ(analyzed.out.find("was sent by"), std::string::npos) << analyzed.out;
  auto json = testing::RunCli(GT_GPUTRIAGE_BIN, {"analyze", "--json", core}, {"GPUTRIAGE_HOME=" + dir_ + "/home"});
  EXPECT_EQ(json.out.find("\"signal\": 0"), std::string::npos) << json.out;
  EXPECT_EQ(json.out.find("SIG0"), std::string::npos) << json.out;
}

TEST_F(CaptureTest, NoSuchProcess) {
  // A pid that was just freed: a child that exited and was reaped.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  auto r = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(gone)});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.err, "gputriage: pid " + std::to_string(gone) + ": no such process (/proc/" + std::to_string(gone) +
                       " does not exist)\n");
  EXPECT_FALSE(fs::exists(dir_ + "/bundles"));
}

TEST_F(CaptureTest, NoSuchProcessUnderJsonIsAJsonError) {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  auto r = Capture({"--json", "--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(gone)});
  EXPECT_EQ(r.status, 4);
  EXPECT_EQ(r.out, "");
  Json error = Json::parse(r.err, nullptr, false);
  ASSERT_TRUE(error.is_object()) << r.err;
  EXPECT_EQ(error["error"]["code"], "not-captured");
  EXPECT_EQ(error["error"]["exit_code"], 4);
}

TEST_F(CaptureTest, AZombieHasNothingToCapture) {
  pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  // Not reaped until the end: a zombie meanwhile.
  for (int i = 0; i < 500 && ThreadState(zombie, zombie) != 'Z'; ++i) usleep(2000);
  auto r = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(zombie)});
  waitpid(zombie, nullptr, 0);
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.err.find("is a zombie: it has exited and waits for its parent (pid " + std::to_string(getpid())),
            std::string::npos)
      << r.err;
}

TEST_F(CaptureTest, AProcessAlreadyTracedNamesItsTracer) {
  Child parent({kHungJob, "traced-child"});
  std::string line = ReadLine(parent.from(), 10000);
  ASSERT_EQ(line.rfind("child ", 0), 0u) << line;
  int child = std::stoi(line.substr(6));
  for (int i = 0; i < 500 && StatusField(child, "TracerPid") == "\t0"; ++i) usleep(2000);
  auto r = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(child)});
  kill(child, SIGKILL);
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.err.find("cannot capture pid " + std::to_string(child) + " (hung_job): it is already traced by pid " +
                       std::to_string(parent.pid()) + " (hung_job)"),
            std::string::npos)
      << r.err;
}

TEST_F(CaptureTest, AProcessSeizedByAnotherTracerNamesIt) {
  Child job({kHungJob, "1"});
  ASSERT_EQ(ReadLine(job.from(), 10000), "ready " + std::to_string(job.pid()));
  ASSERT_EQ(ptrace(PTRACE_SEIZE, job.pid(), nullptr, nullptr), 0) << std::strerror(errno);
  auto r = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(job.pid())});
  ptrace(PTRACE_DETACH, job.pid(), nullptr, nullptr);  // running: fails; the kill below ends it
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.err.find("already traced by pid " + std::to_string(getpid())), std::string::npos) << r.err;
}

TEST_F(CaptureTest, RefusesItsParentAndBadPids) {
  // The test runs gputriage: the test is its parent.
  auto parent = Capture({"--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(getpid())});
  EXPECT_EQ(parent.status, 2) << parent.err;
  EXPECT_NE(parent.err.find("is gputriage's parent, which is waiting for gputriage to finish"), std::string::npos)
      << parent.err;
  auto word = Capture({"--no-snapshot", "abc"});
  EXPECT_EQ(word.status, 2);
  EXPECT_EQ(word.err, "gputriage: capture: 'abc' is not a process id (a positive number)\n");
  auto zero = Capture({"--no-snapshot", "0"});
  EXPECT_EQ(zero.status, 2);
}

TEST_F(CaptureTest, TreeCapturesTheDescendants) {
  // sh with hung_job as its child in the foreground (not exec'd: a command follows it).
  Child sh({"/bin/sh", "-c", kHungJob + " 2; echo done"});
  // The job's "ready" line comes through the shared stdout.
  std::string ready = ReadLine(sh.from(), 10000);
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  int job = std::stoi(ready.substr(6));
  auto r = Capture({"--json", "--tree", "--no-snapshot", "--bundle-dir", dir_ + "/bundles", std::to_string(sh.pid())});
  ASSERT_EQ(r.status, 0) << r.err;
  Json out = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["capture"]["pids"], Json::array({sh.pid(), job}));
  Json process = Json::parse(ReadAll(out["bundle"].get<std::string>() + "/process.json"), nullptr, false);
  ASSERT_EQ(process["hang_dumps"].size(), 1u);
  EXPECT_EQ(process["hang_dumps"][0]["pid"], job);
  bool worker = false;
  for (const Json& t : process["hang_dumps"][0]["threads"]) worker = worker || AnyFrameNamed(t, "hung_worker_wait");
  EXPECT_TRUE(worker) << process["hang_dumps"][0].dump(1);
  EXPECT_NE(ThreadState(job, job), 't');
  kill(job, SIGKILL);
}

}  // namespace
}  // namespace gputriage
