#include "collect/env/env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gputriage::env {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

TEST(IsGpuVariable, PrefixesAndExactNames) {
  for (const char* name : {"HIP_VISIBLE_DEVICES",
                           "HIPBLASLT_LOG_LEVEL",
                           "HIPCC_VERBOSE",
                           "HSA_OVERRIDE_GFX_VERSION",
                           "AMD_LOG_LEVEL",
                           "AMD_SERIALIZE_KERNEL",
                           "ROCR_VISIBLE_DEVICES",
                           "ROCM_PATH",
                           "ROCBLAS_LAYER",
                           "MIOPEN_FIND_MODE",
                           "CUDA_VISIBLE_DEVICES",
                           "CUDA_LAUNCH_BLOCKING",
                           "CUDNN_LOGINFO_DBG",
                           "CUBLAS_WORKSPACE_CONFIG",
                           "CUBLASLT_LOG_LEVEL",
                           "NCCL_DEBUG",
                           "RCCL_MSCCL_ENABLE",
                           "NVIDIA_VISIBLE_DEVICES",
                           "__NV_PRIME_RENDER_OFFLOAD",
                           "PYTORCH_CUDA_ALLOC_CONF",
                           "TORCH_NCCL_BLOCKING_WAIT",
                           "TORCHINDUCTOR_CACHE_DIR",
                           "XLA_FLAGS",
                           "TF_FORCE_GPU_ALLOW_GROWTH",
                           "JAX_PLATFORMS",
                           "TRITON_CACHE_DIR",
                           "GPU_MAX_HW_QUEUES",
                           "GPU_DEVICE_ORDINAL",
                           "LD_LIBRARY_PATH",
                           "LD_PRELOAD"}) {
    EXPECT_TRUE(IsGpuVariable(name)) << name;
  }
}

TEST(IsGpuVariable, OtherVariablesAreNotCollected) {
  for (const char* name : {"HOME", "PATH", "USER", "SHELL", "PWD", "HF_TOKEN", "GITHUB_TOKEN", "OMP_NUM_THREADS",
                           "LD_BIND_NOW", "LD_LIBRARY_PATH_EXTRA", "TF_VAR_db_password", "TF_TOKEN_app_terraform_io",
                           "cuda_visible_devices", "MY_CUDA_HOME", ""}) {
    EXPECT_FALSE(IsGpuVariable(name)) << name;
  }
}

TEST(Collect, SelectsSortsAndRedacts) {
  const std::vector<std::string> environment = {
      "HOME=/home/ml",
      "PATH=/usr/local/bin:/usr/bin",
      "NCCL_DEBUG=INFO",
      "LD_PRELOAD=/opt/lib/libtrace.so",
      "CUDA_VISIBLE_DEVICES=0,1",
      "HF_TOKEN=hf_notcollected",
      "TORCH_HUB_TOKEN=abc123",
      "HSA_OVERRIDE_GFX_VERSION=10.3.0",
      "TRITON_REMOTE_CACHE=redis://cache:s3cr3t@10.1.2.3:6379/0",
      "NCCL_AUTH_TOKEN=",
      "no-equals-sign",
      "=empty-name",
  };
  core::Section section = Collect(environment);
  const core::Json& data = section.data;
  EXPECT_EQ(data["count_total"], 12);
  EXPECT_EQ(data["variables"], core::Json::parse(R"({
              "CUDA_VISIBLE_DEVICES": "0,1",
              "HSA_OVERRIDE_GFX_VERSION": "10.3.0",
              "LD_PRELOAD": "/opt/lib/libtrace.so",
              "NCCL_AUTH_TOKEN": "",
              "NCCL_DEBUG": "INFO",
              "TORCH_HUB_TOKEN": "<redacted>",
              "TRITON_REMOTE_CACHE": "redis://cache:<redacted>@10.1.2.3:6379/0"
            })"));
  EXPECT_EQ(data["redacted"], core::Json::parse(R"(["TORCH_HUB_TOKEN", "TRITON_REMOTE_CACHE"])"));
  EXPECT_TRUE(section.not_collected.empty());
  EXPECT_TRUE(section.findings.empty());
  // The serialised order is by name (also what the schema promises).
  std::vector<std::string> names;
  for (const auto& item : data["variables"].items()) names.push_back(item.key());
  EXPECT_THAT(names, ElementsAre("CUDA_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION", "LD_PRELOAD", "NCCL_AUTH_TOKEN",
                                 "NCCL_DEBUG", "TORCH_HUB_TOKEN", "TRITON_REMOTE_CACHE"));
}

TEST(Collect, ValueTokenUnderInnocentNameIsRedacted) {
  core::Section section =
      Collect({"CUDA_CACHE_NOTE=see token=AKIAIOSFODNN7EXAMPLE", "NCCL_COMMENT=AKIAIOSFODNN7EXAMPLE"});
  EXPECT_EQ(section.data["variables"]["CUDA_CACHE_NOTE"], "see token=<redacted>");
  EXPECT_EQ(section.data["variables"]["NCCL_COMMENT"], "<redacted>");
  EXPECT_EQ(section.data["redacted"], core::Json::parse(R"(["CUDA_CACHE_NOTE", "NCCL_COMMENT"])"));
}

TEST(Collect, FirstOccurrenceWinsLikeGetenv) {
  core::Section section = Collect({"NCCL_DEBUG=WARN", "NCCL_DEBUG=INFO"});
  EXPECT_EQ(section.data["variables"]["NCCL_DEBUG"], "WARN");
  EXPECT_EQ(section.data["count_total"], 2);
}

TEST(Collect, InvalidUtf8IsSanitisedAndSerialisable) {
  core::Section section = Collect({std::string("CUDA_\xff=a\xc3(b\x01"), "HIP_OK=caf\xc3\xa9"});
  const core::Json& variables = section.data["variables"];
  EXPECT_EQ(variables["CUDA_\xEF\xBF\xBD"], "a\xEF\xBF\xBD(b\xEF\xBF\xBD");
  EXPECT_EQ(variables["HIP_OK"], "caf\xc3\xa9");
  EXPECT_NO_THROW((void)section.data.dump());
}

TEST(Collect, EmptyEnvironment) {
  core::Section section = Collect({});
  EXPECT_EQ(section.data["count_total"], 0);
  EXPECT_EQ(section.data["variables"], core::Json::object());
  EXPECT_EQ(section.data["redacted"], core::Json::array());
}

TEST(CurrentEnvironment, SeesThisProcess) {
  ASSERT_EQ(setenv("GPU_TRIAGE_ENV_TEST", "42", 1), 0);
  std::vector<std::string> environment = CurrentEnvironment();
  EXPECT_THAT(environment, Contains("GPU_TRIAGE_ENV_TEST=42"));
  EXPECT_EQ(Collect(environment).data["variables"]["GPU_TRIAGE_ENV_TEST"], "42");
  unsetenv("GPU_TRIAGE_ENV_TEST");
}

}  // namespace
}  // namespace gputriage::env
