// ACA error banks from a real MI300X kernel log (ROCm/legacy-rocm-build#4021), decoded with the
// layout of kb/tables/amd-ras.yaml.
#include "kb/aca.h"

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "catalog/catalog.h"
#include "core/text.h"

namespace gputriage::kb {
namespace {

std::vector<AcaBank> AssembleAca(std::string_view text) {
  AcaAssembler assembler(catalog::BuiltinCatalog().value()->aca);
  uint64_t n = 0;
  for (std::string_view line : core::SplitLines(text)) assembler.Line(line, ++n, "dmesg");
  return assembler.Finish();
}

TEST(AcaBanks, TwoPoisonedSmuBanksOfAnMi300x) {
  std::vector<AcaBank> banks = AssembleAca(gputriage::testing::ReadFixture(
      "kernel_log/amdgpu-mi300x-athub-uncorrectable-aca-hardware-error-entries-multi-gpu-eventid.txt",
      {.missing_fails_test = true}));
  ASSERT_EQ(banks.size(), 2u);
  const AcaBank& first = banks[0];
  EXPECT_EQ(first.device, "0000:42:00.0");
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.registers.size(), 5u);
  EXPECT_EQ(first.registers.at("STATUS"), 0x98000800003e0000u);
  // STATUS: VAL (63), EN, MISCV, POISON (43) set; UC (61) clear; ERRORCODEEXT (21:16) 0x3e.
  EXPECT_TRUE(first.valid);
  EXPECT_FALSE(first.uncorrected);
  EXPECT_TRUE(first.poisoned);
  EXPECT_EQ(first.error_code_ext, 0x3eu);
  // IPID 0x0001000138430400: HARDWAREID 0x01, MCATYPE 0x01 -> SMU.
  EXPECT_EQ(first.ip, "SMU");
  EXPECT_EQ(first.Describe(), "ACA bank 00 of 0000:42:00.0 from SMU: valid, poisoned data (POISON), ERRORCODEEXT 0x3e");
  core::Json json = ToJson(first);
  EXPECT_EQ(json["error_code_ext"], 0x3e);
  EXPECT_EQ(json["registers"]["STATUS"], "0x98000800003e0000");
  EXPECT_EQ(json["ip"], "SMU");
  EXPECT_EQ(banks[1].device, "0000:55:00.0");
  EXPECT_EQ(banks[1].registers.size(), 4u);
  EXPECT_EQ(banks[1].ip, "SMU");
}

TEST(AcaBanks, NewerFormatAndGarbageAroundIt) {
  std::vector<AcaBank> banks = AssembleAca(
      "amdgpu 0000:05:00.0: {3}[Hardware Error]: ACA[01/02].STATUS=0xb000000000000000\n"
      "amdgpu 0000:05:00.0: {3}[Hardware Error]: ACA[01/02].IPID=0x0000009600000000\n"
      "amdgpu 0000:05:00.0: {3}[Hardware Error]: ACA[02/02].STATUS=0x8000000000000000\n"
      "aca entry[00].STATUS=0xzz\n"
      "unrelated =0x12\n");
  ASSERT_EQ(banks.size(), 2u);
  EXPECT_TRUE(banks[0].uncorrected);  // 0xb: VAL, UC, EN
  EXPECT_EQ(banks[0].ip, "UMC");
  EXPECT_EQ(banks[1].index, 2);
  EXPECT_TRUE(banks[1].valid);
  EXPECT_EQ(banks[1].ip, "");
  EXPECT_TRUE(banks[0].NotCorrected());
  EXPECT_FALSE(banks[1].NotCorrected());  // VAL alone: a corrected error
}

}  // namespace
}  // namespace gputriage::kb
