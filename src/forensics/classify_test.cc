#include "forensics/classify.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::forensics {
using core::Classification;
using core::FaultLocation;
using core::Frame;
using core::ProcessReport;
using core::ThreadState;
namespace {

Frame F(std::string function, std::string module) {
  Frame f;
  f.function = std::move(function);
  f.module = std::move(module);
  return f;
}

TEST(Classify, FindsGpuErrorsInRealOutput) {
  auto ima = FindOutputError(testing::ReadCapture("run/stderr-cuda-illegal-address.txt"));
  ASSERT_TRUE(ima);
  EXPECT_EQ(ima->kind, "gpu-illegal-address");
  EXPECT_EQ(ima->category, core::Category::kIllegalAddress);
  EXPECT_EQ(ima->line, "[56285] 0.54.236.075 E CUDA error: an illegal memory access was encountered");
  auto assert_ = FindOutputError(testing::ReadCapture("run/stderr-device-assert.txt"));
  ASSERT_TRUE(assert_);
  EXPECT_EQ(assert_->kind, "gpu-device-assert");
  EXPECT_EQ(assert_->category, core::Category::kDeviceAssert);
}

TEST(Classify, FindsGpuErrorsInOutputCapturedOnTheH200) {
  // cuda_oob's far out-of-bounds write comes back as cudaErrorInvalidAddressSpace (CUDA 13,
  // driver 580, H200) with Xid 13 and Xid 31 in the kernel log: an illegal address.
  auto oob = FindOutputError(testing::ReadCapture("run/h200-cuda-oob.stderr.txt"));
  ASSERT_TRUE(oob);
  EXPECT_EQ(oob->kind, "gpu-illegal-address");
  EXPECT_EQ(oob->category, core::Category::kIllegalAddress);
  EXPECT_EQ(oob->line,
            "cuda_oob: cudaDeviceSynchronize: cudaErrorInvalidAddressSpace (operation not "
            "supported on global/shared address space)");
  auto assert_ = FindOutputError(testing::ReadCapture("run/h200-torch-index-add-assert.stderr.txt"));
  ASSERT_TRUE(assert_);
  EXPECT_EQ(assert_->kind, "gpu-device-assert");
  EXPECT_EQ(assert_->line.rfind("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1021: indexFuncSmallIndex: "
                                "block: [0,0,0], thread: [0,0,0] Assertion `dstIndex < dstAddDimSize` failed.",
                                0),
            0u);
}

TEST(Classify, PythonTracebackLastLine) {
  auto e = FindOutputError(
      "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "gpu-out-of-memory");  // the GPU error outranks the exception type
  auto plain = FindOutputError("Traceback (most recent call last):\n  File \"x\"\nKeyError: 'lr'\n");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->kind, "python-exception");
  EXPECT_EQ(plain->line, "KeyError: 'lr'");
  EXPECT_FALSE(FindOutputError("all good\nValueError: not in a traceback\n"));
  EXPECT_FALSE(FindOutputError(""));
}

TEST(Classify, NonZeroExitWithoutAnExplanationIsNotAFailure) {
  FailureContext ctx;
  ctx.exit_code = 3;
  ctx.stderr_tail = "usage: train.py [-h]\n";
  EXPECT_FALSE(Classify(ctx));
  ctx.exit_code = 0;
  ctx.stderr_tail = "CUDA error: out of memory (recovered)\n";
  EXPECT_FALSE(Classify(ctx));
}

TEST(Classify, AbortMessagesFromGlibcAndTheCxxRuntime) {
  ProcessReport p;
  p.signal = SIGABRT;
  p.si_code = SI_TKILL;
  ThreadState t;
  t.frames = {F("__pthread_kill_implementation", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
              F("raise", "/usr/lib/x86_64-linux-gnu/libc.so.6"), F("abort", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
              F("malloc_printerr", "/usr/lib/x86_64-linux-gnu/libc.so.6"), F("release_buffers", "/opt/app/bin/server")};
  p.threads.push_back(t);
  FailureContext ctx;
  ctx.process = &p;
  ctx.stderr_tail = "free(): double free detected in tcache 2\n";
  auto heap = Classify(ctx);
  ASSERT_TRUE(heap);
  EXPECT_EQ(heap->kind, "heap-corruption");
  bool aborting = false;
  for (const auto& e : heap->evidence) aborting |= e.text == "aborting frame: release_buffers (server)";
  EXPECT_TRUE(aborting) << heap->evidence.size();

  ctx.stderr_tail =
      "terminate called after throwing an instance of 'c10::Error'\n"
      "  what():  CUDA error: device-side assert triggered\n";
  auto c10 = Classify(ctx);
  ASSERT_TRUE(c10);
  EXPECT_EQ(c10->kind, "c10-error");
  EXPECT_NE(c10->summary.find("what():  CUDA error: device-side assert triggered"), std::string::npos);

  ctx.stderr_tail = "nothing useful\n";
  EXPECT_EQ(Classify(ctx)->kind, "abort");
  ctx.stderr_tail = "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  auto gpu = Classify(ctx);
  EXPECT_EQ(gpu->kind, "gpu-illegal-address");
  EXPECT_EQ(gpu->category, core::Category::kIllegalAddress);
}

TEST(Classify, SegvInsideAGpuRuntimeLibrary) {
  ProcessReport p;
  p.signal = SIGSEGV;
  p.si_code = SEGV_MAPERR;
  p.fault_address = 0x10;
  p.fault_location = FaultLocation{"null-page", std::nullopt, "null page"};
  ThreadState t;
  t.frames = {F("", "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"),
              F("cudaLaunchKernel", "/opt/app/lib/libcudart.so.13"), F("launch_matmul", "/opt/app/bin/trainer")};
  p.threads.push_back(t);
  FailureContext ctx;
  ctx.process = &p;
  auto c = Classify(ctx);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "fault-in-gpu-runtime");
  EXPECT_NE(c->summary.find("libcuda.so.580.159.04"), std::string::npos);
  EXPECT_EQ(FirstUserFrame(t.frames)->function, "launch_matmul");
}

// A null-page fault is a call through a null function pointer only when the PC is the fault
// address (the fetch of the first instruction faulted). Code that could not be read (a core
// without the executable's text) says nothing about it. Failed before: an empty disassembly was
// taken for a null call.
TEST(Classify, NullCallOnlyWhenThePcIsTheFaultAddress) {
  ProcessReport p;
  p.signal = SIGSEGV;
  p.si_code = SEGV_MAPERR;
  p.fault_address = 0;
  p.fault_location = FaultLocation{"null-page", std::nullopt, "address 0x0: a null pointer was dereferenced"};
  ThreadState t;
  t.registers = {{"rip", 0x55d0c0de1234}};
  p.threads.push_back(t);
  core::Disassembly missing;
  missing.note = "the code at pc 0x55d0c0de1234 is not in the core";
  p.disassembly = missing;
  FailureContext ctx;
  ctx.process = &p;
  auto c = Classify(ctx);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "null-dereference");
  EXPECT_EQ(c->summary, "null pointer dereference (address 0x0)");
  EXPECT_EQ(c->detail,
            "address 0x0: a null pointer was dereferenced (No instruction to show: the code at pc 0x55d0c0de1234 "
            "is not in the core.)");

  p.threads[0].registers = {{"rip", 0}};
  p.disassembly->note = "pc 0x0 is not readable memory";
  c = Classify(ctx);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->summary, "call through a null function pointer");
}

TEST(Classify, SigkillWithAndWithoutTheOomKiller) {
  std::vector<CorrelatedRecord> log(1);
  log[0].record.message = "Memory cgroup out of memory: Killed process 42 (python3)";
  log[0].job_pid = 42;
  log[0].oom_kill = true;
  FailureContext ctx;
  ctx.term_signal = SIGKILL;
  ctx.kernel_log = &log;
  auto oom = Classify(ctx);
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->kind, "oom-killed");
  EXPECT_EQ(oom->category, core::Category::kOom);
  log.clear();
  EXPECT_EQ(Classify(ctx)->kind, "killed");
  ctx.term_signal = SIGTERM;
  EXPECT_EQ(Classify(ctx)->kind, "terminated-by-signal");
}

TEST(Classify, ModulesAndUserFrames) {
  EXPECT_TRUE(IsGpuRuntimeModule("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  EXPECT_TRUE(IsGpuRuntimeModule("/opt/rocm/lib/libamdhip64.so.6"));
  EXPECT_TRUE(IsGpuRuntimeModule("/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"));
  EXPECT_FALSE(IsGpuRuntimeModule("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_FALSE(IsGpuRuntimeModule("/home/me/libcudaish_helper.so"));
  std::vector<Frame> system_only = {F("abort", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                                    F("_PyEval_EvalFrameDefault", "/usr/bin/python3.11")};
  EXPECT_EQ(FirstUserFrame(system_only), nullptr);
}

TEST(Classify, SignaturesIgnoreAddressesAndArguments) {
  ProcessReport p;
  p.signal = SIGSEGV;
  ThreadState t;
  t.frames = {F("ns::Kernel<float>::run(int, float*)", "/a"), F("", "/b"), F("main", "/a"),
              F("__libc_start_call_main", "/usr/lib/libc.so.6"), F("_start", "/a")};
  p.threads.push_back(t);
  Classification c;
  c.kind = "null-dereference";
  EXPECT_EQ(CrashSignature(&p, c), "SIGSEGV/null-dereference ns::Kernel<float>::run main __libc_start_call_main");
  Classification e;
  e.kind = "gpu-out-of-memory";
  e.summary = "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.19 GiB total; pid 1234)";
  EXPECT_EQ(CrashSignature(nullptr, e),
            "gpu-out-of-memory CUDA out of memory. Tried to allocate N.N MiB (GPU N; N.N GiB total; pid N)");
}

TEST(Classify, AFaultSignalSentByAProcessNamesTheSender) {
  ProcessReport p;
  p.pid = 40;
  p.signal = SIGBUS;
  p.si_code = SI_USER;
  p.sender_pid = 40;
  FailureContext ctx;
  ctx.process = &p;
  std::set<int> job = {40, 41};
  ctx.job_pids = &job;
  auto self = Classify(ctx);
  ASSERT_TRUE(self);
  EXPECT_EQ(self->kind, "signal-sent");
  EXPECT_EQ(self->summary, "the process sent SIGBUS to itself (raise(), kill(getpid())), not a memory fault");
  p.sender_pid = 41;
  EXPECT_EQ(Classify(ctx)->summary,
            "SIGBUS was sent by another process of the job (pid 41), not caused by a memory fault");
  p.sender_pid = 7;
  EXPECT_EQ(Classify(ctx)->summary,
            "SIGBUS was sent by another process (pid 7, outside the job), not caused by a memory fault");
  // abort() sends SIGABRT to itself: that stays an abort; from another process it does not.
  p.signal = SIGABRT;
  p.si_code = SI_TKILL;
  p.sender_pid = 40;
  EXPECT_EQ(Classify(ctx)->kind, "abort");
  p.sender_pid = 41;
  EXPECT_EQ(Classify(ctx)->kind, "signal-sent");
}

TEST(Classify, DyingOfSigpipeAfterTheReaderLeftIsNotAFailure) {
  FailureContext ctx;
  ctx.term_signal = SIGPIPE;
  ctx.output_reader_gone = true;
  EXPECT_FALSE(Classify(ctx));
  ctx.output_reader_gone = false;  // a pipe inside the job broke: that is the job's business
  ASSERT_TRUE(Classify(ctx));
  EXPECT_EQ(Classify(ctx)->kind, "terminated-by-signal");
}

}  // namespace
}  // namespace gputriage::forensics
