#include "forensics/debug_agent_report.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace gputriage::forensics {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GT_SOURCE_DIR) + "/tests/fixtures/rocm-debug-agent/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The user guide's sample of a wave stopped by s_trap 2: the kernel from the disassembly, the
// source line above the "=>" instruction, and its offset.
TEST(DebugAgentReport, AssertTrapWithWaveAndDisassembly) {
  SanitizerReport r =
      ParseDebugAgentReport(Fixture("rocm-debug-agent-assert-trap-wave-dump-official-sample-rst-indented.txt"));
  ASSERT_EQ(r.errors.size(), 1u);
  const core::SanitizerError& e = r.errors[0];
  EXPECT_EQ(e.kind, "queue error HSA_STATUS_ERROR_EXCEPTION (stopped, reason: ASSERT_TRAP)");
  EXPECT_EQ(e.problem, "An HSAIL operation resulted in a hardware exception.");
  EXPECT_EQ(e.kernel, "vector_add_assert_trap(int*, int*, int*)");
  EXPECT_EQ(e.file, "/rocm-debug-agent/test/vector_add_assert_trap.cpp");
  EXPECT_EQ(e.line, 53);
  EXPECT_EQ(e.pc_offset, "0x7fd4f100d0e8 <+232>");
  EXPECT_FALSE(e.address.has_value());
}

TEST(DebugAgentReport, MemoryFaultEventsOfEveryVersion) {
  SanitizerReport v2 =
      ParseDebugAgentReport(Fixture("rocm-debug-agent-memory-fault-system-event-official-sample-rst-indented.txt"));
  ASSERT_EQ(v2.errors.size(), 1u);
  EXPECT_EQ(v2.errors[0].kind, "system event HSA_AMD_GPU_MEMORY_FAULT_EVENT");
  EXPECT_EQ(v2.errors[0].problem, "page not present or supervisor privilege, write access to a read-only page");
  EXPECT_EQ(v2.errors[0].address, "0x7fbe4cc01000");

  SanitizerReport old =
      ParseDebugAgentReport(Fixture("rocr-debug-agent-2019-rocm2.4-vega56-memory-fault-no-waves.txt"));
  ASSERT_EQ(old.errors.size(), 1u);
  EXPECT_EQ(old.errors[0].kind, "memory access fault at GPU node 2");
  EXPECT_EQ(old.errors[0].address, "0x12345xxx");
  EXPECT_EQ(old.errors[0].problem, "page not present;write access to a read-only page;");

  SanitizerReport waves =
      ParseDebugAgentReport(Fixture("rocr-debug-agent-2020-gfx906-120-wavefronts-first-one-sgprs.txt"));
  ASSERT_EQ(waves.errors.size(), 1u);
  EXPECT_EQ(waves.errors[0].address, "0x7F36437BBxxx");
  EXPECT_EQ(waves.errors[0].problem, "page not present;write access to a read-only page;; 120 wavefront(s) found");
  EXPECT_EQ(waves.errors[0].pc_offset, "0x00007F36D440A844");

  SanitizerReport xnack =
      ParseDebugAgentReport(Fixture("rocr-debug-agent-2018-xnack-error-state-gfx900-exec-status-trapsts-m0.txt"));
  ASSERT_EQ(xnack.errors.size(), 1u);
  EXPECT_EQ(xnack.errors[0].kind, "memory access fault by GPU agent AMD gfx900");
  EXPECT_EQ(xnack.errors[0].pc_offset, "0x0000001101F0B1A4");
}

// Register dumps alone, the job's own output, garbage: no event.
TEST(DebugAgentReport, NothingWithoutTheAgentsEventLines) {
  EXPECT_TRUE(ParseDebugAgentReport(Fixture("rocr-debug-agent-2020-gfx906-per-lane-vgpr-block.txt")).errors.empty());
  EXPECT_TRUE(ParseDebugAgentReport("Address: 0x1234\n=> 0x10 <+4>: s_trap 2\n53  x\n").errors.empty());
  EXPECT_TRUE(ParseDebugAgentReport(std::string("\x00\xff\n\n", 4)).errors.empty());
  SanitizerReport huge_line = ParseDebugAgentReport("Queue error (X)\n" + std::string(100000, '7') + "  y\n");
  ASSERT_EQ(huge_line.errors.size(), 1u);  // a line number too long to be one is not taken
  EXPECT_FALSE(huge_line.errors[0].line.has_value());
}

}  // namespace
}  // namespace gputriage::forensics
