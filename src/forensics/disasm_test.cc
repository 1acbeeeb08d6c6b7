#include "forensics/disasm.h"

#include <gtest/gtest.h>

namespace gputriage::forensics {
using core::Disassembly;
namespace {

// Memory holding `bytes` at `base`; everything else unreadable.
MemoryReader BufferReader(uint64_t base, std::vector<uint8_t> bytes) {
  return [base, bytes](uint64_t address, size_t length) {
    std::vector<uint8_t> out;
    if (address < base || address >= base + bytes.size()) return out;
    size_t from = static_cast<size_t>(address - base);
    size_t n = std::min(length, bytes.size() - from);
    out.assign(bytes.begin() + from, bytes.begin() + from + n);
    return out;
  };
}

// null_deref() of tests/crashers/crasher.c as gcc -O1 compiled it, then the next function.
const std::vector<uint8_t> kNullDeref = {
    0x48, 0x8b, 0x05, 0x3a, 0x2e, 0x00, 0x00,  // mov rax, qword ptr [rip + 0x2e3a]
    0xc7, 0x00, 0x2a, 0x00, 0x00, 0x00,        // mov dword ptr [rax], 0x2a   <- faults
    0xc3,                                      // ret
    0x55,                                      // push rbp
    0x48, 0x89, 0xe5,                          // mov rbp, rsp
};

TEST(Disasm, MarksTheFaultingInstructionDecodedFromTheFunctionStart) {
  Disassembly d = DisassembleAround(BufferReader(0x1000, kNullDeref), "x86_64", 0x1007, 0x1000, {"sse2"});
  ASSERT_GE(d.instructions.size(), 3u);
  EXPECT_EQ(d.arch, "x86_64");
  EXPECT_EQ(d.instructions[0].address, 0x1000u);
  EXPECT_EQ(d.instructions[0].text, "mov rax, qword ptr [rip + 0x2e3a]");
  EXPECT_FALSE(d.instructions[0].faulting);
  EXPECT_EQ(d.instructions[1].text, "mov dword ptr [rax], 0x2a");
  EXPECT_EQ(d.instructions[1].bytes, "c7 00 2a 00 00 00");
  EXPECT_TRUE(d.instructions[1].faulting);
  EXPECT_EQ(d.instructions[2].text, "ret");
  EXPECT_FALSE(d.note);
  EXPECT_TRUE(d.isa_extensions.empty());
}

TEST(Disasm, WithoutAFunctionStartDecodesFromThePc) {
  Disassembly d = DisassembleAround(BufferReader(0x1000, kNullDeref), "x86_64", 0x1007, std::nullopt, {});
  ASSERT_FALSE(d.instructions.empty());
  EXPECT_TRUE(d.instructions[0].faulting);
  ASSERT_TRUE(d.note);
  EXPECT_NE(d.note->find("start of the function is not known"), std::string::npos);
}

TEST(Disasm, UnreadablePcMeansABadJump) {
  Disassembly d = DisassembleAround(BufferReader(0x1000, kNullDeref), "x86_64", 0, std::nullopt, {});
  EXPECT_TRUE(d.instructions.empty());
  ASSERT_TRUE(d.note);
  EXPECT_EQ(d.note->rfind("pc 0x0 is not readable memory", 0), 0u);
}

TEST(Disasm, NamesTheIsaExtensionAndWhetherThisCpuHasIt) {
  // blcfill esi, esi (AMD TBM), then vpaddd zmm0, zmm0, zmm0 (AVX-512F).
  std::vector<uint8_t> code = {0x8f, 0xe9, 0x48, 0x01, 0xce, 0x62, 0xf1, 0x7d, 0x48, 0xfe, 0xc0};
  Disassembly tbm = DisassembleAround(BufferReader(0x2000, code), "x86_64", 0x2000, 0x2000, {"avx2", "sse2"});
  ASSERT_FALSE(tbm.instructions.empty());
  EXPECT_EQ(tbm.instructions[0].text, "blcfill esi, esi");
  EXPECT_EQ(tbm.isa_extensions, std::vector<std::string>{"tbm"});
  EXPECT_EQ(tbm.missing_on_cpu, std::vector<std::string>{"tbm"});
  Disassembly has = DisassembleAround(BufferReader(0x2000, code), "x86_64", 0x2000, 0x2000, {"tbm"});
  EXPECT_TRUE(has.missing_on_cpu.empty());
  Disassembly avx512 = DisassembleAround(BufferReader(0x2000, code), "x86_64", 0x2005, 0x2000, {"avx2"});
  EXPECT_EQ(avx512.isa_extensions, std::vector<std::string>{"avx512f"});
  EXPECT_EQ(avx512.missing_on_cpu, std::vector<std::string>{"avx512f"});
}

TEST(Disasm, BytesThatDoNotDecodeAreShownRaw) {
  std::vector<uint8_t> junk = {0x06, 0x06, 0x06};  // push es: not an instruction in 64-bit mode
  Disassembly d = DisassembleAround(BufferReader(0x3000, junk), "x86_64", 0x3000, std::nullopt, {});
  ASSERT_EQ(d.instructions.size(), 1u);
  EXPECT_EQ(d.instructions[0].text, "(bad)");
  EXPECT_TRUE(d.instructions[0].faulting);
  EXPECT_EQ(d.instructions[0].bytes, "06 06 06");
}

TEST(Disasm, UnknownArchitectureIsSaid) {
  Disassembly d = DisassembleAround(BufferReader(0x1000, kNullDeref), "EM_243", 0x1000, std::nullopt, {});
  ASSERT_TRUE(d.note);
  EXPECT_EQ(*d.note, "no disassembler for architecture EM_243");
}

TEST(Disasm, CpuFlags) {
  auto flags = ParseCpuFlags("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\nbugs\t\t: x\n");
  EXPECT_EQ(flags, (std::set<std::string>{"fpu", "sse2", "avx2", "avx512f"}));
  EXPECT_EQ(ParseCpuFlags("Features\t: fp asimd sve\n"), (std::set<std::string>{"fp", "asimd", "sve"}));
  EXPECT_TRUE(ParseCpuFlags("").empty());
  EXPECT_EQ(CpuFlagForGroup("avx512"), "avx512f");
  EXPECT_EQ(CpuFlagForGroup("sse41"), "sse4_1");
  EXPECT_EQ(CpuFlagForGroup("jump"), "");
}

}  // namespace
}  // namespace gputriage::forensics
