#include "kmsg/kmsg.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace gputriage::kmsg {
namespace {

using namespace std::string_literals;

std::vector<Record> ParseAll(std::string_view bytes, ParseStats* stats,
                             ParseStats (*parse)(std::string_view, const RecordSink&)) {
  std::vector<Record> out;
  *stats = parse(bytes, [&](Record&& r) { out.push_back(std::move(r)); });
  return out;
}

TEST(ParseKmsgRecordTest, ReadsHeaderMessageAndDictionary) {
  std::optional<Record> r = ParseKmsgRecord(
      "4,1234,87373517,-;NVRM: Xid (PCI:0000:00:06): 43\n"
      " SUBSYSTEM=pci\n"
      " DEVICE=+pci:0000:00:06.0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->monotonic_us, 87373517u);
  EXPECT_EQ(r->priority, 4);
  EXPECT_EQ(r->facility, 0);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:00:06): 43");
  EXPECT_EQ(r->subsystem, "pci");
  EXPECT_EQ(r->device, "+pci:0000:00:06.0");
}

TEST(ParseKmsgRecordTest, SplitsFacilityFromLevelAndIgnoresExtraFields) {
  // Written by a process through /dev/kmsg: facility 1 (user), level 4; caller id field.
  std::optional<Record> r = ParseKmsgRecord("12,5,1,c,caller=T812;hello\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 1);
  EXPECT_EQ(r->priority, 4);
  EXPECT_EQ(r->message, "hello");
  EXPECT_TRUE(r->subsystem.empty());
}

TEST(ParseKmsgRecordTest, UndoesHexEscapesOnly) {
  std::optional<Record> r = ParseKmsgRecord(R"(6,1,2,-;a\x09b\x5cc caf\xc3\xa9 \xZZ \x4 \\ end\)");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->message, "a\tb\\c caf\xc3\xa9 \\xZZ \\x4 \\\\ end\\");
}

TEST(ParseKmsgRecordTest, KeepsTheMessageOfATruncatedRecord) {
  std::optional<Record> r = ParseKmsgRecord("6,9,10,-;NVRM: Xid (PCI:0000:00:06): 4");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:00:06): 4");
}

TEST(ParseKmsgRecordTest, AcceptsTheLargestNumbers) {
  std::optional<Record> r = ParseKmsgRecord("2047,18446744073709551615,18446744073709551615,-;m\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 255);
  EXPECT_EQ(r->priority, 7);
  EXPECT_EQ(r->seq, UINT64_MAX);
  EXPECT_EQ(r->monotonic_us, UINT64_MAX);
}

TEST(ParseKmsgRecordTest, RejectsMalformedHeaders) {
  const std::string cases[] = {
      "",
      "\n",
      "6,1,2;three fields",
      "6,1,2,-",  // no ';' (truncated header)
      "6,1,2",    // truncated in the timestamp
      "x,1,2,-;prio not a number",
      "6,-1,2,-;negative seq",
      "6,1,2.5,-;fractional timestamp",
      "6, 1,2,-;space in a number",
      "2048,1,2,-;facility beyond u8",
      "6,18446744073709551616,2,-;seq overflows",
      "6,1,99999999999999999999999,-;timestamp overflows",
      ",,,;all fields empty",
      " SUBSYSTEM=pci",  // a continuation line alone
      "\xff\xfe\x00;\x01"s,
  };
  for (const std::string& bytes : cases) {
    EXPECT_FALSE(ParseKmsgRecord(bytes)) << "accepted: " << bytes;
  }
}

TEST(ParseKmsgBufferTest, CountsRecordsAndMalformedOnesInOrder) {
  ParseStats stats;
  std::vector<Record> records = ParseAll(
      "6,1,10,-;first\n"
      " SUBSYSTEM=acpi\n"
      " DEVICE=+acpi:PNP0A08:00\n"
      "\n"
      "garbage line\n"
      " SUBSYSTEM=lost\n"  // continues the malformed record: not counted again
      "6,2,20,-;second\n"
      "4,3,30\n"  // malformed: no message
      "6,4,40,-;truncated last mess",
      &stats, ParseKmsgBuffer);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.malformed, 2u);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].message, "first");
  EXPECT_EQ(records[0].subsystem, "acpi");
  EXPECT_EQ(records[0].device, "+acpi:PNP0A08:00");
  EXPECT_EQ(records[1].message, "second");
  EXPECT_TRUE(records[1].subsystem.empty());
  EXPECT_EQ(records[2].seq, 4u);
  EXPECT_EQ(records[2].message, "truncated last mess");
}

TEST(ParseKmsgBufferTest, CountsAnOrphanContinuationAsMalformed) {
  ParseStats stats;
  std::vector<Record> records =
      ParseAll(" SUBSYSTEM=pci\n DEVICE=+pci:0000:00:06.0\n6,1,1,-;ok\n", &stats, ParseKmsgBuffer);
  EXPECT_EQ(stats.records, 1u);
  EXPECT_EQ(stats.malformed, 1u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].device.empty());
}

TEST(ParseKmsgBufferTest, EmptyInputHasNoRecords) {
  ParseStats stats;
  EXPECT_TRUE(ParseAll("", &stats, ParseKmsgBuffer).empty());
  EXPECT_EQ(stats.records, 0u);
  EXPECT_EQ(stats.malformed, 0u);
}

TEST(ParseKmsgBufferTest, SurvivesBinaryGarbage) {
  std::mt19937 random(12345);
  std::string bytes(1 << 16, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  // Splice valid records in between so the parser has to resynchronise.
  bytes.insert(1000, "\n6,77,5,-;NVRM: between garbage\n");
  ParseStats stats;
  std::vector<Record> records = ParseAll(bytes, &stats, ParseKmsgBuffer);
  bool found = false;
  for (const Record& r : records) found |= r.seq == 77u && r.message == "NVRM: between garbage";
  EXPECT_TRUE(found);
  EXPECT_GT(stats.malformed, 0u);
  EXPECT_EQ(stats.records, records.size());
}

TEST(ParseSyslogBufferTest, ReadsPriorityTimestampAndCallerId) {
  ParseStats stats;
  std::vector<Record> records = ParseAll(
      "<4>[   87.373517] NVRM: Xid (PCI:0000:00:06): 43, pid=719\n"
      "<6>[    0.000000][     T0] Linux version 6.18\n"
      "<14>[    1.5][C3] user line\r\n"
      "<3>no timestamp\n"
      "\n"
      "[    2.000000] no priority\n"
      "<x>[    2.000000] bad priority\n"
      "<2048>[    2.000000] priority out of range\n"
      "<6>[99999999999999999999.000000] huge time\n",
      &stats, ParseSyslogBuffer);
  EXPECT_EQ(stats.records, 5u);
  EXPECT_EQ(stats.malformed, 3u);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].priority, 4);
  EXPECT_EQ(records[0].monotonic_us, 87373517u);
  EXPECT_FALSE(records[0].seq);
  EXPECT_EQ(records[0].message, "NVRM: Xid (PCI:0000:00:06): 43, pid=719");
  EXPECT_EQ(records[1].monotonic_us, 0u);
  EXPECT_EQ(records[1].message, "Linux version 6.18");
  EXPECT_EQ(records[2].facility, 1);
  EXPECT_EQ(records[2].priority, 6);
  EXPECT_EQ(records[2].monotonic_us, 1500000u);
  EXPECT_EQ(records[2].message, "user line");
  EXPECT_FALSE(records[3].monotonic_us);
  EXPECT_EQ(records[3].message, "no timestamp");
  // A timestamp that does not fit stays part of the message; the record has no time.
  EXPECT_FALSE(records[4].monotonic_us);
  EXPECT_EQ(records[4].message, "[99999999999999999999.000000] huge time");
}

TEST(ParseAnyBufferTest, PicksTheFormatFromTheFirstByte) {
  ParseStats stats;
  std::vector<Record> records = ParseAll("\n<4>[ 1.000000] syslog\n", &stats, ParseAnyBuffer);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].seq);
  records = ParseAll("4,9,1,-;kmsg\n", &stats, ParseAnyBuffer);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].seq, 9u);
}

}  // namespace
}  // namespace gputriage::kmsg
