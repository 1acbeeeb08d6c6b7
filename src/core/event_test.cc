#include "core/event.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

// The events file's one author (the agent) and its reader agree, and the contract's keys are
// always there: a golden line read back gives the same event and writes the same line.
TEST(GpuEvent, GoldenLineRoundTrips) {
  const std::string golden =
      R"({"action":"Reset the GPU.","bundle":null,"error_type":"xid_31","gpu":0,"gpu_uuid":"GPU-5e3c",)"
      R"("host":"node7","job":"4242","job_step":"0","kind":"kernel_log","kmsg_seq":812,"local_rank":"1",)"
      R"("meaning":"GPU memory page fault","message":"NVRM: Xid (PCI:0000:00:06): 31, pid=719, name=python3",)"
      R"("pci_bus_id":"0000:00:06.0","pid":719,"pod":null,"rank":"3","severity":"error",)"
      R"("time":"2026-12-08T01:02:03.456Z"})";
  auto event = EventFromJson(golden, "events.jsonl:1");
  ASSERT_TRUE(event.ok()) << event.error().message;
  EXPECT_EQ(event->error_type, "xid_31");
  EXPECT_EQ(event->gpu, 0);
  EXPECT_EQ(event->pid, 719);
  EXPECT_EQ(event->job, "4242");
  EXPECT_EQ(event->pod, std::nullopt);
  EXPECT_EQ(event->bundle, std::nullopt);
  EXPECT_EQ(ToJson(*event).dump(), golden);
  auto again = EventFromJson(ToJson(*event).dump(), "again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *event);
}

TEST(GpuEvent, ContractKeysAreNullWhenUnknown) {
  GpuEvent e{.time = "2026-12-08T00:00:00.000Z", .host = "h", .kind = "kernel_log", .error_type = "oom_killer"};
  Json j = ToJson(e);
  for (const char* key : {"gpu", "pid", "job", "pod", "bundle"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_FALSE(j.contains("gpu_uuid"));
}

TEST(GpuEvent, ALineThatIsNoEventNamesItsSource) {
  EXPECT_EQ(EventFromJson("[1]", "e:3").error().message, "e:3: a JSON array, not an event");
  EXPECT_EQ(EventFromJson(R"({"time":"t","host":"h","kind":"k"})", "e:4").error().message,
            "e:4: not an event (no \"error_type\" string)");
  EXPECT_FALSE(EventFromJson("{\"time\":", "e:5").ok());
}

}  // namespace
}  // namespace gputriage::core
