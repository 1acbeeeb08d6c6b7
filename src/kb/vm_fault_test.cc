#include "kb/vm_fault.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "catalog/catalog.h"
#include "core/text.h"

namespace gputriage::kb {
namespace {

const catalog::VmFaultLayout& Layout() { return catalog::BuiltinCatalog().value()->vm_fault; }

std::vector<VmFault> Assemble(const std::string& fixture) {
  std::ifstream in(std::string(GT_FIXTURES_DIR) + "/kernel_log/" + fixture);
  EXPECT_TRUE(in) << fixture;
  std::stringstream text;
  text << in.rdbuf();
  VmFaultAssembler assembler(Layout());
  std::vector<VmFault> out;
  uint64_t n = 0;
  const std::string content = text.str();  // the lines are views into it
  for (std::string_view line : core::Split(content, '\n')) assembler.Line(line, ++n, fixture, &out);
  assembler.Finish(&out);
  return out;
}

// Every printed field of a GFX9 block, and the status word decoded by hand from the table's bit
// layout agrees with what the driver printed.
TEST(VmFault, Gfx9BlockIsOneEventWithEveryField) {
  std::vector<VmFault> faults = Assemble("amdgpu-gfxhub0-no-retry-pagefault-cpc-gfx902-apu-rocm4.3.txt");
  ASSERT_EQ(faults.size(), 1u);
  const VmFault& f = faults[0];
  EXPECT_EQ(f.hub, "gfxhub0");
  EXPECT_EQ(f.retry, "no-retry");
  EXPECT_EQ(f.vmid, 8u);
  EXPECT_EQ(f.pasid, 32772u);
  EXPECT_EQ(f.process, "clinfo");
  EXPECT_EQ(f.pid, 1382);
  EXPECT_EQ(f.address, 0u);
  EXPECT_EQ(f.status, 0x00840A51u);
  EXPECT_EQ(f.client, "CPC");
  EXPECT_EQ(f.client_id, 0x5u);
  EXPECT_EQ(f.more_faults, 1u);
  EXPECT_EQ(f.walker_error, 0u);
  EXPECT_EQ(f.permission_faults, 5u);
  EXPECT_EQ(f.mapping_error, 0u);
  EXPECT_EQ(f.rw, 1u);
  EXPECT_FALSE(f.fields_from_status);
  EXPECT_EQ(f.lines, 9);
  EXPECT_EQ(f.line_number, 2u);
  EXPECT_EQ(f.Describe(),
            "amdgpu VM fault on gfxhub0 (no-retry): write by CPC (0x5) at page 0x0, vmid 8 pasid 32772, "
            "process clinfo pid 1382, permission faults 0x5, more faults followed");

  // The same block with only the header, address and status (the field lines rate-limited).
  VmFaultAssembler assembler(Layout());
  std::vector<VmFault> out;
  assembler.Line(
      "[  199.015019] amdgpu 0000:07:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:173 vmid:8 "
      "pasid:32772, for process clinfo pid 1382 thread clinfo pid 1382)",
      1, "x", &out);
  assembler.Line(
      "[  199.015026] amdgpu 0000:07:00.0: amdgpu:   in page starting at address 0x0000000000000000 from IH client "
      "0x1b (UTCL2)",
      2, "x", &out);
  assembler.Line("[  199.015035] amdgpu 0000:07:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00840A51", 3, "x", &out);
  EXPECT_TRUE(assembler.open());
  assembler.Line("[  199.100000] some other line", 4, "x", &out);
  EXPECT_FALSE(assembler.open());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].fields_from_status);
  EXPECT_EQ(out[0].client_id, f.client_id);
  EXPECT_EQ(out[0].more_faults, f.more_faults);
  EXPECT_EQ(out[0].walker_error, f.walker_error);
  EXPECT_EQ(out[0].permission_faults, f.permission_faults);
  EXPECT_EQ(out[0].mapping_error, f.mapping_error);
  EXPECT_EQ(out[0].rw, f.rw);
}

// journalctl -r prints newest first: the field lines come before their header.
TEST(VmFault, NewestFirstLogsAttachFieldsToTheHeaderBelow) {
  std::vector<VmFault> faults = Assemble("amdgpu-gfxhub0-no-retry-pagefault-xorg-journalctl-reverse-order-qubes.txt");
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].line_number, 3u);
  EXPECT_EQ(faults[0].address, 0x0000800104041000u);
  EXPECT_EQ(faults[0].lines, 2);
  EXPECT_EQ(faults[1].line_number, 12u);
  EXPECT_EQ(faults[1].address, 0x0000800104044000u);
  EXPECT_EQ(faults[1].client, "CB");
  EXPECT_EQ(faults[1].status, 0u);
  EXPECT_EQ(faults[1].rw, 0u);
  EXPECT_EQ(faults[1].lines, 9);
  EXPECT_EQ(faults[1].process, "Xorg");
}

TEST(VmFault, Gfx11SdmaFaultsWithoutAProcess) {
  std::vector<VmFault> faults = Assemble("amdgpu-gfxhub-pagefault-sdma-journalctl-rx7800xt-gfx1101-kernel6.7rc1.txt");
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].hub, "gfxhub");
  EXPECT_EQ(faults[0].vmid, 0u);
  EXPECT_EQ(faults[0].client, "SDMA0");
  EXPECT_EQ(faults[1].client, "SDMA1");
  EXPECT_EQ(faults[0].pid, 0);
  EXPECT_NE(faults[0].Describe().find("no process"), std::string::npos) << faults[0].Describe();
  std::vector<VmFault> old =
      Assemble("amdgpu-mmhub0-no-retry-pagefault-old-format-no-amdgpu-prefix-vega64-journalctl.txt");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].hub, "mmhub0");
  EXPECT_EQ(old[0].process, "plasmashell");
  EXPECT_EQ(old[0].status, 0u);
}

}  // namespace
}  // namespace gputriage::kb
