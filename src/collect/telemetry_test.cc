#include "collect/telemetry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace gputriage::collect {
namespace {

TEST(TelemetryStream, SamplesAreMadeRelativeToTheOrigin) {
  core::TelemetryRecording r = ParseTelemetryStream(
      "# source=nvml period_s=0.5\n"
      "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons\n"
      "1000.250,0,40,120.0,1980,3201,512.0,\n"
      "1000.750,0,41,130.0,1980,3201,600.0,sw_power_cap\n"
      "1001.2",  // cut by the stop: not a sample
      1000.0);
  EXPECT_EQ(r.source, "nvml");
  EXPECT_TRUE(r.note.empty()) << r.note;
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_NEAR(r.samples[0].t_s, 0.25, 1e-9);
  EXPECT_NEAR(r.samples[1].t_s, 0.75, 1e-9);
  EXPECT_EQ(r.samples[1].phase, "run");
}

TEST(TelemetryStream, NoGpuSaysWhy) {
  core::TelemetryRecording r = ParseTelemetryStream("# none: no GPU to sample: NVML: cannot load x\n", 0);
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(r.note, "no GPU to sample: NVML: cannot load x");
  EXPECT_EQ(ParseTelemetryStream("", 0).note,
            "the sampler wrote nothing (it did not start, or ended before its first sample)");
}

// The real helper process: a program that cannot be started, and one (the shell, standing in for
// a sampler stuck in the driver) that ignores SIGTERM and is ended within the bound.
TEST(TelemetrySession, AHelperThatCannotStartIsNamed) {
  auto session = StartTelemetry({"/nonexistent/gputriage-probe"}, 0.5);
  core::TelemetryRecording r = session->Stop(0);
  EXPECT_TRUE(r.samples.empty());
  EXPECT_NE(r.note.find("/nonexistent/gputriage-probe"), std::string::npos) << r.note;
}

// A job that ends before the sampler has said anything (it starts slowly under ASan on a loaded
// machine): Stop waits for its first line, so the bundle says why there is no telemetry.
TEST(TelemetrySession, StopWaitsForTheSamplersFirstLine) {
  auto session =
      StartTelemetry({"/bin/sh", "-c", "sleep 0.4; echo '# none: no GPU to sample: NVML: x'; exec sleep 30"}, 0.5);
  auto begin = std::chrono::steady_clock::now();
  core::TelemetryRecording r = session->Stop(0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(r.note, "no GPU to sample: NVML: x");
  EXPECT_LT(took, 15.0);  // far from the helper's 30 s, on any load
}

TEST(TelemetrySession, AHelperIgnoringSigtermIsKilledAndItsSamplesKept) {
  // sh -c SCRIPT telemetry --period 0.5: $0 is "telemetry"; the script prints a sampler's output.
  std::string script =
      "trap '' TERM; echo '# source=nvml period_s=0.5'; "
      "echo 't_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons'; "
      "echo '5.000,0,50,,,,,'; while :; do sleep 0.05; done";
  auto session = StartTelemetry({"/bin/sh", "-c", script}, 0.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto begin = std::chrono::steady_clock::now();
  core::TelemetryRecording r = session->Stop(4.0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(took, 6.0);  // about 2 s (SIGTERM, then SIGKILL), with room for a loaded machine
  ASSERT_EQ(r.samples.size(), 1u) << r.note;
  EXPECT_NEAR(r.samples[0].t_s, 1.0, 1e-9);
  EXPECT_EQ(r.samples[0].temperature_c, 50);
}

}  // namespace
}  // namespace gputriage::collect
