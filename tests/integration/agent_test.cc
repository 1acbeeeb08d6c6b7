// `gputriage agent` as it runs on a node: a real agent process follows the real /dev/kmsg; real
// Xid and amdgpu lines naming a real process in a real Slurm-shaped cgroup become events tied to
// its job, on the events file, in the counter served on /metrics, and in `gputriage events`.
// Needs root (writing /dev/kmsg, making cgroups); skipped otherwise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/klog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/json_parse.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "integration_util.h"
#include "run_cli.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

// A child process started with `argv` and `env`, its stderr in `err_path`; killed at the end.
struct AgentChild {
  pid_t pid = -1;
  void Start(std::vector<std::string> argv, const std::vector<std::string>& env, const std::string& err_path) {
    pid = fork();
    if (pid == 0) {
      int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (err >= 0) dup2(err, 2);
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) dup2(null, 0), dup2(null, 1);
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
  }
  int Stop(int sig = SIGTERM) {
    if (pid <= 0) return -1;
    kill(pid, sig);
    int status = 0;
    for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~AgentChild() { Stop(SIGKILL); }
};

// A cgroup v1 (pids) or v2 directory shaped as Slurm's, holding `pid`; removed at the end.
struct SlurmCgroup {
  std::string root, leaf;
  bool Make(int pid) {
    for (const char* base : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      if (!fs::exists(std::string(base) + "/cgroup.procs")) continue;
      root = std::string(base) + "/gt-agent-test-" + std::to_string(getpid());
      leaf = root + "/slurm/uid_0/job_4242/step_0";
      std::error_code ec;
      fs::create_directories(leaf, ec);
      if (ec) continue;
      std::ofstream(leaf + "/cgroup.procs") << pid << std::flush;
      if (ReadAll("/proc/" + std::to_string(pid) + "/cgroup").find("job_4242") != std::string::npos) {
        parent = base;
        return true;
      }
      Remove();
    }
    return false;
  }
  void Remove() {
    if (root.empty()) return;
    for (std::string dir = leaf; dir.size() >= root.size(); dir = fs::path(dir).parent_path().string()) {
      std::string procs = ReadAll(dir + "/cgroup.procs");
      for (size_t at = 0; at < procs.size();) {
        size_t nl = procs.find('\n', at);
        std::ofstream(parent + "/cgroup.procs") << procs.substr(at, nl - at) << std::flush;
        at = nl == std::string::npos ? procs.size() : nl + 1;
      }
      ::rmdir(dir.c_str());
    }
    root.clear();
  }
  ~SlurmCgroup() { Remove(); }
  std::string parent;
};

std::string Curl(const std::string& url) {
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(10000);
  auto r = core::RunWithTimeout({"curl", "-sf", url}, ro);
  return r.ok() ? r->stdout_data : "";
}

TEST(Agent, KernelLogRecordsBecomeEventsTiedToTheJobAndCounted) {
  if (::geteuid() != 0 || ::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  testing::TempDir tmp;
  const std::string events = tmp / "events.jsonl", agent_err = tmp / "agent.err";
  AgentChild agent;
  agent.Start({GT_GPUTRIAGE_BIN, "agent", "--listen", "127.0.0.1:0", "--events-file", events, "--interval", "0.2"}, {},
              agent_err);
  std::string url;
  for (int i = 0; i < 1000 && url.empty(); ++i) {
    std::string said = ReadAll(agent_err);
    size_t at = said.find("serving http://");
    if (at != std::string::npos) url = said.substr(at + 8, said.find("/metrics", at) + 8 - at - 8);
    if (url.empty()) usleep(10000);
  }
  ASSERT_FALSE(url.empty()) << ReadAll(agent_err);
  // Before anything happened: the counters are there, at zero.
  EXPECT_NE(Curl(url).find("gputriage_kernel_log_records_lost_total 0\n"), std::string::npos) << Curl(url);

  // The job: a real process with Slurm's rank variables, in a Slurm-shaped cgroup.
  AgentChild job;
  job.Start({"sleep", "60"}, {"SLURM_PROCID=3", "LOCAL_RANK=1"}, tmp / "job.err");
  SlurmCgroup cgroup;
  bool in_cgroup = cgroup.Make(job.pid);
  std::ofstream("/dev/kmsg") << "NVRM: Xid (PCI:0000:00:06): 31, pid=" << job.pid
                             << ", name=sleep, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS\n"
                             << std::flush;
  std::ofstream("/dev/kmsg") << "amdgpu 0000:03:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:8 "
                                "pasid:32769, for process sleep pid "
                             << job.pid << " thread sleep pid " << job.pid << ")\n"
                             << std::flush;
  std::ofstream("/dev/kmsg") << "gputriage agent test: an unrelated line\n" << std::flush;
  // This job's events (other tests running beside this one may write records of their own).
  std::vector<Json> lines;
  for (int i = 0; i < 1000 && lines.size() < 2; ++i) {
    lines.clear();
    const std::string text = ReadAll(events);
    for (std::string_view line : core::Split(text, '\n')) {
      Json event = line.empty() ? Json() : Json::parse(line, nullptr, false);
      if (event.is_object() && event.value("pid", 0) == job.pid) lines.push_back(std::move(event));
    }
    if (lines.size() < 2) usleep(10000);
  }
  ASSERT_EQ(lines.size(), 2u) << ReadAll(events) << ReadAll(agent_err);
  const Json& xid = lines[0];
  EXPECT_EQ(xid.value("error_type", ""), "xid_31");
  EXPECT_EQ(xid.value("kind", ""), "kernel_log");
  EXPECT_EQ(xid.value("pid", 0), job.pid);
  EXPECT_EQ(xid.value("pci_bus_id", ""), "0000:00:06.0");
  EXPECT_NE(xid.value("executable", "").find("sleep"), std::string::npos) << xid.dump();
  EXPECT_EQ(xid.value("rank", ""), "3");
  EXPECT_EQ(xid.value("local_rank", ""), "1");
  for (const char* key : {"time", "host", "kind", "error_type", "gpu", "pid", "job", "pod", "bundle"}) {
    EXPECT_TRUE(xid.contains(key)) << key;
  }
  EXPECT_EQ(lines[1].value("error_type", ""), "amdgpu_vm_fault");
  if (in_cgroup) {
    EXPECT_EQ(xid.value("job", ""), "4242") << xid.dump();
    EXPECT_EQ(xid.value("job_step", ""), "0") << xid.dump();
    EXPECT_EQ(lines[1].value("job", ""), "4242");
  }
  std::string metrics = Curl(url);
  std::string job_label = in_cgroup ? "4242" : "";
  EXPECT_NE(
      metrics.find("gputriage_gpu_errors_total{error_type=\"xid_31\",gpu=\"\",UUID=\"\",pci_bus_id=\"0000:00:06.0\","
                   "job=\"" +
                   job_label + "\",pod=\"\",namespace=\"\"} 1\n"),
      std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("gputriage_agent_events_written_total 0\n"), std::string::npos) << metrics;

  // `gputriage events` reads them back, by job.
  auto read = testing::RunCli(GT_GPUTRIAGE_BIN, {"events", "--events-file", events, "--json"});
  EXPECT_EQ(read.status, 0) << read.err;
  Json all = Json::parse(read.out, nullptr, false);
  ASSERT_TRUE(all.is_object()) << read.out;
  EXPECT_GE(all["events"].size(), 2u);
  if (in_cgroup) {
    auto by_job = testing::RunCli(GT_GPUTRIAGE_BIN, {"events", "--events-file", events, "--job", "4242"});
    EXPECT_NE(by_job.out.find("xid_31"), std::string::npos) << by_job.out;
    auto other = testing::RunCli(GT_GPUTRIAGE_BIN, {"events", "--events-file", events, "--job", "1"});
    EXPECT_EQ(other.out, "no events\n");
  }
  EXPECT_EQ(agent.Stop(SIGTERM), 0) << ReadAll(agent_err);
}

// A free TCP port on 127.0.0.1 (bound, read back, released).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Starts the agent on a free port; its base URL ("http://127.0.0.1:N"), "" when it did not come up.
std::string StartAgent(AgentChild& agent, const std::string& events, const std::string& err) {
  agent.Start({GT_GPUTRIAGE_BIN, "agent", "--listen", "127.0.0.1:0", "--events-file", events, "--interval", "0.2"}, {},
              err);
  for (int i = 0; i < 1000; ++i) {
    std::string said = ReadAll(err);
    size_t at = said.find("serving http://");
    if (at != std::string::npos) return said.substr(at + 8, said.find("/metrics", at) - at - 8);
    usleep(10000);
  }
  return "";
}

// The real Prometheus server (Debian's package), started here on 127.0.0.1, scrapes the agent;
// its query API returns the counter, up by one after a real Xid line reached /dev/kmsg. Needs
// prometheus (scripts/install-deps --servers; CI sets GPUTRIAGE_TEST_SERVERS=required) and root.
TEST(Agent, TheRealPrometheusServerScrapesTheErrorCounter) {
  if (::geteuid() != 0 || ::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  const char* required = std::getenv("GPUTRIAGE_TEST_SERVERS");
  if (::access("/usr/bin/prometheus", X_OK) != 0) {
    if (required != nullptr && std::string(required) == "required") FAIL() << "prometheus is not installed";
    GTEST_SKIP() << "prometheus is not installed (scripts/install-deps --servers)";
  }
  testing::TempDir tmp;
  AgentChild agent;
  std::string url = StartAgent(agent, tmp / "events.jsonl", tmp / "agent.err");
  ASSERT_FALSE(url.empty()) << ReadAll(tmp / "agent.err");
  int prom_port = FreePort();
  ASSERT_GT(prom_port, 0);
  std::ofstream(tmp / "prometheus.yml") << "global:\n  scrape_interval: 1s\n"
                                        << "scrape_configs:\n  - job_name: gputriage\n    static_configs:\n"
                                        << "      - targets: ['" << url.substr(7) << "']\n";
  AgentChild prometheus;
  prometheus.Start(
      {"/usr/bin/prometheus", "--config.file=" + (tmp / "prometheus.yml"), "--storage.tsdb.path=" + (tmp / "tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      {}, tmp / "prometheus.err");
  const std::string api = "http://127.0.0.1:" + std::to_string(prom_port);
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    ready = Curl(api + "/-/ready").find("Ready") != std::string::npos;
    if (!ready) usleep(100000);
  }
  ASSERT_TRUE(ready) << ReadAll(tmp / "prometheus.err");
  AgentChild job;
  job.Start({"sleep", "60"}, {}, tmp / "job.err");
  // Each record ends with a newline, as a driver's do: the kernel keeps a record without one open
  // for continuation lines, and readers see it only when the next record comes.
  std::ofstream("/dev/kmsg") << "NVRM: Xid (PCI:0000:7f:00): 79, pid=" << job.pid
                             << ", name=sleep, GPU has fallen off the bus.\n"
                             << std::flush;
  // The counter as Prometheus stored it, through its HTTP query API.
  // A bus id no other test uses: the series is this test's alone.
  const std::string query = api +
                            "/api/v1/query?query=gputriage_gpu_errors_total%7Berror_type%3D%22xid_79%22%2C"
                            "pci_bus_id%3D%220000%3A7f%3A00.0%22%7D";
  std::string answer;
  for (int i = 0; i < 300; ++i) {
    answer = Curl(query);
    if (answer.find("\"1\"]") != std::string::npos) break;
    usleep(100000);
  }
  Json j = Json::parse(answer, nullptr, false);
  ASSERT_TRUE(j.is_object()) << answer;
  if (j["data"]["result"].empty()) {
    ADD_FAILURE() << "all series: " << Curl(api + "/api/v1/query?query=gputriage_gpu_errors_total")
                  << "\nevents: " << ReadAll(tmp / "events.jsonl") << "\nmetrics: " << Curl(url + "/metrics")
                  << "\nagent: " << ReadAll(tmp / "agent.err") << "\nurl: " << url;
  }
  EXPECT_EQ(j.value("status", ""), "success") << answer;
  ASSERT_EQ(j["data"]["result"].size(), 1u) << answer;
  const Json& series = j["data"]["result"][0];
  EXPECT_EQ(series["metric"].value("__name__", ""), "gputriage_gpu_errors_total");
  EXPECT_EQ(series["metric"].value("error_type", ""), "xid_79");
  EXPECT_EQ(series["metric"].value("pci_bus_id", ""), "0000:7f:00.0");
  EXPECT_EQ(series["value"][1], "1") << answer;
  prometheus.Stop();
  EXPECT_EQ(agent.Stop(), 0);
}

// The kernel's ring buffer wraps while the agent cannot read (stopped with SIGSTOP here; a
// stalled node in life): the agent counts what it lost, resynchronises and goes on — a record
// written after it resumes is an event. Writes twice the ring's size of records to /dev/kmsg.
TEST(Agent, AnOverrunKernelLogIsCountedAndTheAgentGoesOn) {
  // Flooding the ring evicts every other test's kernel-log records: ctest runs it alone
  // (agent_kmsg_overrun, RUN_SERIAL, which sets this variable); the shards skip it.
  if (std::getenv("GPUTRIAGE_TEST_KMSG_OVERRUN") == nullptr) GTEST_SKIP() << "run alone by ctest (agent_kmsg_overrun)";
  if (::geteuid() != 0 || ::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  int ring = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (ring <= 0 || ring > (64 << 20)) GTEST_SKIP() << "the kernel log's size is unknown";
  testing::TempDir tmp;
  AgentChild agent;
  std::string url = StartAgent(agent, tmp / "events.jsonl", tmp / "agent.err");
  ASSERT_FALSE(url.empty()) << ReadAll(tmp / "agent.err");
  ASSERT_EQ(kill(agent.pid, SIGSTOP), 0);
  const std::string filler(180, 'x');
  int written = 0;
  for (long bytes = 0; bytes < 2L * ring; bytes += static_cast<long>(filler.size()) + 40) {
    // A new open each time: /dev/kmsg rate-limits each opener to a burst of writes.
    std::ofstream("/dev/kmsg") << "gputriage agent overrun test " << written++ << " " << filler << "\n" << std::flush;
  }
  ASSERT_EQ(kill(agent.pid, SIGCONT), 0);
  std::ofstream("/dev/kmsg") << "NVRM: Xid (PCI:0000:00:06): 48, pid=1, name=init, An uncorrectable double bit "
                                "error (DBE) has been detected on GPU in the framebuffer\n"
                             << std::flush;
  std::string metrics;
  for (int i = 0; i < 500; ++i) {
    metrics = Curl(url + "/metrics");
    if (metrics.find("error_type=\"xid_48\"") != std::string::npos) break;
    usleep(20000);
  }
  EXPECT_NE(metrics.find("error_type=\"xid_48\""), std::string::npos) << metrics;
  const std::string sample = "\ngputriage_kernel_log_records_lost_total ";
  size_t at = metrics.find(sample);
  ASSERT_NE(at, std::string::npos) << metrics;
  double lost = std::atof(metrics.c_str() + at + sample.size());
  EXPECT_GT(lost, 0) << metrics << " after " << written << " records into a " << ring << "-byte ring";
  EXPECT_EQ(agent.Stop(), 0);
}

// logrotate's way: the events file is moved aside and the agent told with SIGHUP; events go to a
// new file of the same name, and the moved one keeps what it had.
TEST(Agent, SighupReopensTheEventsFileAfterItWasMoved) {
  if (::geteuid() != 0 || ::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  testing::TempDir tmp;
  const std::string events = tmp / "events.jsonl", rotated = tmp / "events.jsonl.1";
  AgentChild agent;
  ASSERT_FALSE(StartAgent(agent, events, tmp / "agent.err").empty()) << ReadAll(tmp / "agent.err");
  auto xid = [](const char* bus, int code) {
    std::ofstream("/dev/kmsg") << "NVRM: Xid (PCI:" << bus << "): " << code << ", pid=1, name=init, test\n"
                               << std::flush;
  };
  auto wait_for = [](const std::string& path, const std::string& text) {
    for (int i = 0; i < 1000 && ReadAll(path).find(text) == std::string::npos; ++i) usleep(10000);
    return ReadAll(path).find(text) != std::string::npos;
  };
  xid("0000:7e:00", 62);
  ASSERT_TRUE(wait_for(events, "\"xid_62\"")) << ReadAll(tmp / "agent.err");
  ASSERT_EQ(::rename(events.c_str(), rotated.c_str()), 0);
  ASSERT_EQ(kill(agent.pid, SIGHUP), 0);
  ASSERT_TRUE(wait_for(tmp / "agent.err", "reopened")) << ReadAll(tmp / "agent.err");
  xid("0000:7e:00", 63);
  EXPECT_TRUE(wait_for(events, "\"xid_63\"")) << ReadAll(tmp / "agent.err");
  EXPECT_EQ(ReadAll(events).find("xid_62"), std::string::npos);
  EXPECT_EQ(ReadAll(rotated).find("xid_63"), std::string::npos);
  EXPECT_NE(ReadAll(rotated).find("xid_62"), std::string::npos);
  EXPECT_EQ(agent.Stop(), 0);
}

TEST(Agent, BadOptionsAndAnAddressInUseAreRefusedClearly) {
  testing::TempDir tmp;
  auto bad = testing::RunCli(GT_GPUTRIAGE_BIN, {"agent", "--listen", "nowhere"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("not ADDR:PORT"), std::string::npos) << bad.err;
  auto interval = testing::RunCli(GT_GPUTRIAGE_BIN, {"agent", "--interval", "0"});
  EXPECT_EQ(interval.status, 2);
  auto kmsg = testing::RunCli(GT_GPUTRIAGE_BIN, {"agent", "--listen", "127.0.0.1:0", "--kmsg", tmp / "none"});
  EXPECT_EQ(kmsg.status, 2);
  EXPECT_NE(kmsg.err.find("kernel log " + (tmp / "none")), std::string::npos) << kmsg.err;
  auto events = testing::RunCli(GT_GPUTRIAGE_BIN, {"events", "--events-file", tmp / "none.jsonl"});
  EXPECT_EQ(events.status, 2);
  EXPECT_NE(events.err.find(tmp / "none.jsonl"), std::string::npos) << events.err;
}

}  // namespace
}  // namespace gputriage
