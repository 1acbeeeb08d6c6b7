#include "kb/python_fault.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/text.h"

namespace gputriage::kb {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GT_FIXTURES_DIR) + "/python/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

PythonFaultAssembler AssemblePythonFault(const std::string& text) {
  PythonFaultAssembler assembler;
  uint64_t n = 0;
  for (std::string_view line : core::Split(text, '\n')) assembler.Line(line, ++n, "stderr.tail");
  return assembler;
}

// A real report (CPython 3.11, two threads): the current thread's stack, innermost first; the
// other thread counted, its frames not mixed in.
TEST(PythonFault, TheCurrentThreadsStackOfARealReport) {
  PythonFaultAssembler a = AssemblePythonFault(Fixture("faulthandler-segv-two-threads.txt"));
  ASSERT_TRUE(a.fault());
  const PythonFault& f = *a.fault();
  EXPECT_EQ(f.error, "Segmentation fault");
  EXPECT_EQ(f.line_number, 2u);
  EXPECT_EQ(f.other_threads, 1);
  EXPECT_EQ(f.thread.rfind("0x", 0), 0u);
  ASSERT_EQ(f.frames.size(), 4u);
  EXPECT_EQ(f.frames[0].function, "string_at");
  EXPECT_EQ(f.frames[0].line, 519u);
  EXPECT_EQ(f.frames[1].file, "/tmp/fhjob.py");
  EXPECT_EQ(f.frames[1].function, "read_at");
  EXPECT_EQ(f.frames[1].line, 6u);
  EXPECT_EQ(f.frames[3].function, "<module>");
  EXPECT_EQ(f.Describe(),
            "Fatal Python error: Segmentation fault; Python was in string_at (ctypes/__init__.py:519), "
            "called from read_at (tmp/fhjob.py:6)");
  EXPECT_TRUE(a.open()) << "a frame line may still follow";
  a.Line("Segmentation fault (core dumped)", 16, "stderr.tail");
  EXPECT_FALSE(a.open());
  EXPECT_EQ(a.fault()->frames.size(), 4u);
}

TEST(PythonFault, AbortWithOneThread) {
  PythonFaultAssembler a = AssemblePythonFault(Fixture("faulthandler-abort.txt"));
  ASSERT_TRUE(a.fault());
  EXPECT_EQ(a.fault()->error, "Aborted");
  EXPECT_EQ(a.fault()->other_threads, 0);
  ASSERT_EQ(a.fault()->frames.size(), 2u);
  EXPECT_EQ(a.fault()->frames[0].function, "stop");
}

// Only the first report is kept; a traceback's frame lines ("line 3, in f", with a comma) are not
// faulthandler frames; the report ends at a line that is neither; "???" line numbers and very deep
// stacks are handled; CRLF endings too.
TEST(PythonFault, EdgesOfTheFormat) {
  PythonFaultAssembler a = AssemblePythonFault(
      "Traceback (most recent call last):\n"
      "  File \"x.py\", line 3, in f\n"
      "Fatal Python error: Bus error\r\n"
      "\r\n"
      "Stack (most recent call first):\r\n"
      "  File \"<frozen>\", line ??? in g\r\n"
      "  File \"x.py\", line 3, in f\r\n"
      "Fatal Python error: Segmentation fault\n");
  ASSERT_TRUE(a.fault());
  EXPECT_EQ(a.fault()->error, "Bus error");
  ASSERT_EQ(a.fault()->frames.size(), 1u);
  EXPECT_EQ(a.fault()->frames[0].line, 0u);
  EXPECT_EQ(a.fault()->frames[0].function, "g");
  EXPECT_FALSE(a.open());

  std::string deep = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n";
  for (int i = 0; i < 100; ++i) deep += "  File \"r.py\", line " + std::to_string(i + 1) + " in r\n";
  deep += "  ...\n";
  PythonFaultAssembler d = AssemblePythonFault(deep);
  ASSERT_TRUE(d.fault());
  EXPECT_EQ(d.fault()->frames.size(), PythonFaultAssembler::kMaxFrames);
  EXPECT_EQ(d.fault()->frames_dropped, 100 - PythonFaultAssembler::kMaxFrames);

  PythonFaultAssembler none =
      AssemblePythonFault("RuntimeError: CUDA error: an illegal memory access was encountered\n");
  EXPECT_FALSE(none.fault());
}

}  // namespace
}  // namespace gputriage::kb
