#include <gtest/gtest.h>

#include <set>

#include "agent/agent.h"
#include "agent/kernel_events.h"
#include "agent/metrics.h"
#include "capture_tree.h"
#include "catalog/catalog.h"
#include "core/text.h"
#include "kmsg/kmsg.h"

namespace gputriage::agent {
namespace {

// Each line of a captured log (dmesg's "[  87.373517] MESSAGE" or journalctl's "... kernel:
// MESSAGE") as the record /dev/kmsg would give the agent.
std::vector<core::GpuEvent> EventsOf(const std::string& fixture, const EventContext& context) {
  std::vector<core::GpuEvent> events;
  const std::string text = testing::ReadCapture(fixture);
  for (std::string_view line : core::Split(text, '\n')) {
    kmsg::Record record;
    if (size_t k = line.find("kernel: "); k != std::string_view::npos) {
      line.remove_prefix(k + 8);
    }
    if (line.starts_with("[") && line.find("] ") != std::string_view::npos) line.remove_prefix(line.find("] ") + 2);
    record.message = std::string(line);
    if (auto e = EventFromRecord(record, context, 1765155600.0)) events.push_back(std::move(*e));
  }
  return events;
}

EventContext TestContext() {
  EventContext context;
  auto catalog = catalog::BuiltinCatalog();
  EXPECT_TRUE(catalog.ok());
  context.catalog = catalog.ok() ? *catalog : nullptr;
  context.host = "node7";
  context.gpus["0000:00:06.0"] = {0, "GPU-f8927f9f-3fc0-9d3c-d988-96d14e74e8c4"};
  context.job_of = [](int pid) {
    core::JobAttribution job;
    if (pid == 719) {
      job.slurm_job = "4242";
      job.slurm_step = "0";
      job.rank = "3";
    }
    return job;
  };
  return context;
}

// The H200's real kernel log of a planted out-of-bounds kernel: the Xid lines become events with
// the catalog's meaning, the GPU, the process and its job; the driver's other lines do not.
TEST(KernelEvents, RealXidRecordsOfTheH200BecomeEventsTiedToTheirJob) {
  std::vector<core::GpuEvent> events = EventsOf("kernel_log/h200-dmesg-xid31-xid43.txt", TestContext());
  ASSERT_FALSE(events.empty());
  std::set<std::string> types;
  for (const core::GpuEvent& e : events) types.insert(e.error_type);
  EXPECT_TRUE(types.count("xid_43")) << *types.begin();
  EXPECT_TRUE(types.count("xid_31"));
  for (const core::GpuEvent& e : events) EXPECT_EQ(e.error_type.rfind("xid_", 0), 0u) << e.message;
  const core::GpuEvent& first = events.front();
  EXPECT_EQ(first.error_type, "xid_43");
  EXPECT_EQ(first.host, "node7");
  EXPECT_EQ(first.kind, "kernel_log");
  EXPECT_EQ(first.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(first.gpu, 0);
  EXPECT_EQ(first.gpu_uuid, "GPU-f8927f9f-3fc0-9d3c-d988-96d14e74e8c4");
  EXPECT_EQ(first.pid, 719);
  EXPECT_EQ(first.job, "4242");
  EXPECT_EQ(first.job_step, "0");
  EXPECT_EQ(first.rank, "3");
  EXPECT_FALSE(first.meaning.empty());
  EXPECT_FALSE(first.action.empty());
  EXPECT_EQ(first.time, "2025-12-08T01:00:00.000Z");
}

TEST(KernelEvents, AmdgpuFaultsResetsAndBootChatter) {
  std::vector<core::GpuEvent> faults =
      EventsOf("kernel_log/amdgpu-gfxhub-pagefault-sdma-journalctl-rx7800xt-gfx1101-kernel6.7rc1.txt", TestContext());
  ASSERT_FALSE(faults.empty());
  bool vm_fault = false;
  for (const core::GpuEvent& e : faults) {
    vm_fault = vm_fault || e.error_type == "amdgpu_vm_fault";
    EXPECT_NE(e.message.find("amdgpu"), std::string::npos) << e.error_type << ": " << e.message;
  }
  EXPECT_TRUE(vm_fault);
  EXPECT_EQ(faults.front().pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(faults.front().gpu, std::nullopt);  // a GPU the context does not know: its bus id only
  // Boot-time initialisation says nothing happened.
  for (const core::GpuEvent& e : EventsOf("kernel_log/amdgpu-boot-init-ctime-2gpu-rx7900gre-gfx1100-raphael-igpu-kfd-"
                                          "nodes-ip-blocks-kernel6.18.txt",
                                          TestContext())) {
    ADD_FAILURE() << e.error_type << ": " << e.message;
  }
}

TEST(Metrics, ExpositionFormatCountsAndEscapes) {
  Metrics m;
  m.Declare("gputriage_gpu_errors_total", "counter", "GPU errors");
  m.Add("gputriage_gpu_errors_total", {{"error_type", "xid_31"}, {"job", "a\"b\\c\nd"}}, 1);
  m.Add("gputriage_gpu_errors_total", {{"error_type", "xid_31"}, {"job", "a\"b\\c\nd"}}, 1);
  m.Add("gputriage_undeclared", {}, 5);
  m.Declare("g", "gauge", "a gauge");
  m.Set("g", {}, 0.25);
  m.Set("g", {}, 0.5);
  EXPECT_EQ(m.Render(),
            "# HELP g a gauge\n# TYPE g gauge\ng 0.5\n"
            "# HELP gputriage_gpu_errors_total GPU errors\n# TYPE gputriage_gpu_errors_total counter\n"
            "gputriage_gpu_errors_total{error_type=\"xid_31\",job=\"a\\\"b\\\\c\\nd\"} 2\n");
}

TEST(Agent, ListenAddresses) {
  EXPECT_EQ(ParseListenAddress("127.0.0.1:9402")->second, 9402);
  EXPECT_EQ(ParseListenAddress("[::1]:80")->first, "::1");
  EXPECT_FALSE(ParseListenAddress("9402").ok());
  EXPECT_FALSE(ParseListenAddress("host:").ok());
  EXPECT_FALSE(ParseListenAddress("host:70000").ok());
  EXPECT_EQ(ParseListenAddress("127.0.0.1:0")->second, 0);  // any free port
  EXPECT_FALSE(ParseListenAddress("host:80x").ok());
}

}  // namespace
}  // namespace gputriage::agent
