#include "core/redact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputriage::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kUrlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kHex = "0123456789abcdef";
constexpr std::string_view kUpperBase32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr std::string_view kLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// Deterministic pseudo-random characters: syntactically valid token bodies that are nobody's
// credential. Samples are assembled at run time so that no token-shaped literal sits in the
// source for secret scanners to trip on; GitHub's CRC32 suffix is not computed, so even GitHub's
// own scanner would not take these for real tokens.
std::string Chars(std::string_view alphabet, size_t n, uint32_t seed) {
  std::string out;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    out += alphabet[(state >> 8) % alphabet.size()];
  }
  return out;
}

std::string PemBlock(std::string_view kind) {
  std::string body = "\n";
  for (uint32_t line = 0; line < 4; ++line) {
    body += Chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 64, line);
    body += "\n";
  }
  return "-----BEGIN " + std::string(kind) + "-----" + body + "-----END " + std::string(kind) + "-----";
}

struct TokenSample {
  std::string provider;     // what it is, for failure messages
  std::string rule;         // SecretSpan::rule expected from the value rules
  std::string secret_name;  // a name under which the provider's tools read it
  std::string value;
  // What the value becomes under an innocent name, when not wholly kRedacted.
  std::optional<std::string> redacted_innocent;
};

std::vector<TokenSample> TokenSamples() {
  std::vector<TokenSample> s;
  // GitHub: the five prefixed classic types, 4 + 36 characters; fine-grained PAT, 11 + 82.
  for (std::string_view prefix : {"ghp", "gho", "ghu", "ghs", "ghr"}) {
    s.push_back({"GitHub " + std::string(prefix), "github", "GITHUB_TOKEN",
                 std::string(prefix) + "_" + Chars(kAlnum, 36, prefix[2])});
  }
  s.push_back(
      {"GitHub fine-grained", "github", "GH_TOKEN", "github_pat_" + Chars(kAlnum, 22, 1) + "_" + Chars(kAlnum, 59, 2)});
  s.push_back({"GitLab PAT", "gitlab", "GITLAB_TOKEN", "glpat-" + Chars(kUrlSafe, 20, 3)});
  s.push_back({"GitLab runner", "gitlab", "CI_RUNNER_TOKEN", "glrt-" + Chars(kUrlSafe, 20, 4)});
  s.push_back({"Slack bot", "slack", "SLACK_BOT_TOKEN",
               "xoxb-" + Chars(kDigits, 13, 5) + "-" + Chars(kDigits, 13, 6) + "-" + Chars(kAlnum, 24, 7)});
  s.push_back({"Slack user", "slack", "SLACK_USER_TOKEN",
               "xoxp-" + Chars(kDigits, 12, 8) + "-" + Chars(kDigits, 12, 9) + "-" + Chars(kDigits, 12, 10) + "-" +
                   Chars(kHex, 32, 11)});
  s.push_back({"Slack app", "slack", "SLACK_APP_TOKEN",
               "xapp-1-A" + Chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10, 12) + "-" + Chars(kDigits, 13, 13) + "-" +
                   Chars(kHex, 64, 14)});
  // AWS's own documented example key id, and a temporary (STS) one.
  s.push_back({"AWS example", "aws_access_key_id", "AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"});
  s.push_back({"AWS STS", "aws_access_key_id", "AWS_ACCESS_KEY_ID", "ASIA" + Chars(kUpperBase32, 16, 15)});
  s.push_back({"Google API key", "google_api_key", "GOOGLE_API_KEY", "AIzaSy" + Chars(kUrlSafe, 33, 16)});
  s.push_back({"OpenAI project", "openai", "OPENAI_API_KEY",
               "sk-proj-" + Chars(kUrlSafe, 74, 17) + "T3BlbkFJ" + Chars(kUrlSafe, 74, 18)});
  s.push_back({"OpenAI legacy", "openai", "OPENAI_API_KEY",
               "sk-" + Chars(kAlnum, 20, 19) + "T3BlbkFJ" + Chars(kAlnum, 20, 20)});
  s.push_back({"Anthropic", "anthropic", "ANTHROPIC_API_KEY", "sk-ant-api03-" + Chars(kUrlSafe, 93, 21) + "AA"});
  s.push_back({"Hugging Face", "huggingface", "HF_TOKEN", "hf_" + Chars(kLetters, 34, 22)});
  s.push_back({"npm", "npm", "NPM_TOKEN", "npm_" + Chars(kAlnum, 36, 23)});
  s.push_back({"PyPI", "pypi", "TWINE_PASSWORD", "pypi-AgEIcHlwaS5vcmc" + Chars(kUrlSafe, 160, 24)});
  s.push_back({"Stripe live", "stripe", "STRIPE_SECRET_KEY", "sk_live_" + Chars(kAlnum, 24, 25)});
  s.push_back({"Stripe restricted", "stripe", "STRIPE_KEY", "rk_live_" + Chars(kAlnum, 24, 26)});
  s.push_back({"Stripe test", "stripe", "STRIPE_API_KEY", "sk_test_" + Chars(kAlnum, 24, 27)});
  s.push_back({"W&B (2025 format)", "wandb", "WANDB_API_KEY", "wandb_v1_" + Chars(kUrlSafe, 77, 28)});
  // jwt.io's documented example token.
  s.push_back({"JWT", "jwt", "AUTH_JWT",
               "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikpva"
               "G4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"});
  s.push_back({"PEM RSA", "private_key", "SSH_PRIVATE_KEY", PemBlock("RSA PRIVATE KEY"),
               "-----BEGIN RSA PRIVATE KEY-----<redacted>"});
  s.push_back({"PEM OpenSSH", "private_key", "DEPLOY_KEY", PemBlock("OPENSSH PRIVATE KEY"),
               "-----BEGIN OPENSSH PRIVATE KEY-----<redacted>"});
  s.push_back({"URL password", "url_password", "DATABASE_PASSWORD",
               "postgres://trainer:" + Chars(kAlnum, 16, 29) + "@db.internal:5432/runs",
               "postgres://trainer:<redacted>@db.internal:5432/runs"});
  return s;
}

TEST(TokenSamples, RedactedUnderASecretName) {
  for (const TokenSample& sample : TokenSamples()) {
    ASSERT_TRUE(IsSecretName(sample.secret_name)) << sample.secret_name;
    bool changed = false;
    EXPECT_EQ(RedactValue(sample.secret_name, sample.value, &changed), "<redacted>") << sample.provider;
    EXPECT_TRUE(changed) << sample.provider;
  }
}

TEST(TokenSamples, RedactedByValueUnderAnInnocentName) {
  for (const TokenSample& sample : TokenSamples()) {
    bool changed = false;
    std::string out = RedactValue("CUDA_EXTRA_ARGS", sample.value, &changed);
    EXPECT_EQ(out, sample.redacted_innocent.value_or("<redacted>")) << sample.provider;
    EXPECT_TRUE(changed) << sample.provider;
    // The value rule itself fired, not a key=value fallback.
    std::vector<SecretSpan> spans = FindSecrets(sample.value);
    ASSERT_EQ(spans.size(), 1u) << sample.provider;
    EXPECT_EQ(spans[0].rule, sample.rule) << sample.provider;
  }
}

TEST(TokenSamples, EmbeddedTokenReplacesOnlyItsSpan) {
  for (const TokenSample& sample : TokenSamples()) {
    if (sample.redacted_innocent) continue;  // PEM and URL keep their frame, tested above
    std::string value = "--mirror=cache,sig=" + sample.value + ",retries=3";
    EXPECT_EQ(RedactValue("TORCH_HUB_ARGS", value), "--mirror=cache,sig=<redacted>,retries=3") << sample.provider;
  }
}

TEST(TokenSamples, KnownTokensAreDetected) {
  for (const TokenSample& sample : TokenSamples()) {
    if (sample.rule == "url_password") {
      EXPECT_FALSE(ContainsKnownToken(sample.value)) << "a password is no token format";
    } else {
      EXPECT_TRUE(ContainsKnownToken(sample.value)) << sample.provider;
    }
  }
}

TEST(TokenSamples, TokenGluedToLettersIsNotAToken) {
  // "xghp_..." and "...EXAMPLEX" are other words that happen to contain a token shape.
  std::string github = "ghp_" + Chars(kAlnum, 36, 40);
  EXPECT_FALSE(ContainsKnownToken("x" + github));
  EXPECT_TRUE(ContainsKnownToken("x=" + github));
  EXPECT_FALSE(ContainsKnownToken("AKIAIOSFODNN7EXAMPLEX"));
  EXPECT_FALSE(ContainsKnownToken("task-" + Chars(kAlnum, 40, 41)));
}

TEST(WandbLegacyKey, RedactedOnlyUnderAWandbName) {
  const std::string key = Chars(kHex, 40, 42);
  EXPECT_EQ(RedactValue("WANDB_API_KEY", key), "<redacted>");  // by name
  EXPECT_FALSE(IsSecretName("WANDB_LOGIN"));
  EXPECT_EQ(RedactValue("WANDB_LOGIN", key), "<redacted>");  // by value, WANDB in the name
  EXPECT_EQ(RedactValue("wandb_login", "local-" + key), "<redacted>");
  // Elsewhere 40 hex digits are a commit: kept (see TORCH_COMMIT in Negatives).
  EXPECT_EQ(RedactValue("TORCH_COMMIT", key), key);
  EXPECT_EQ(RedactValue("WANDB_PROJECT", "gpu-burn-in"), "gpu-burn-in");
}

TEST(UrlCredentials, OnlyThePasswordGoes) {
  EXPECT_EQ(RedactText("https://user:hunter2@example.com/org/repo.git"),
            "https://user:<redacted>@example.com/org/repo.git");
  // The last '@' ends the password, as browsers parse it.
  EXPECT_EQ(RedactText("git clone https://bot:p@ss:w0rd@gitlab.example.com/x.git now"),
            "git clone https://bot:<redacted>@gitlab.example.com/x.git now");
  EXPECT_EQ(RedactText("ftp://anonymous:@mirror.example.org/pub"), "ftp://anonymous:@mirror.example.org/pub");
  EXPECT_EQ(RedactText("ssh://git@github.com:22/org/repo"), "ssh://git@github.com:22/org/repo");
  EXPECT_EQ(RedactText("http://localhost:8080/metrics@now"), "http://localhost:8080/metrics@now");
  EXPECT_EQ(RedactValue("NCCL_PROXY_URL", "http://proxy:s3cr3t@10.0.0.1:3128"),
            "http://proxy:<redacted>@10.0.0.1:3128");
}

TEST(IsSecretName, SecretLookingNames) {
  for (const char* name : {"HF_TOKEN",
                           "GITHUB_TOKEN",
                           "HUGGING_FACE_HUB_TOKEN",
                           "CI_JOB_TOKEN",
                           "NPM_AUTH_TOKEN",
                           "SLACK_BOT_TOKEN",
                           "PRIVATE-TOKEN",
                           "accessToken",
                           "WANDB_API_KEY",
                           "OPENAI_API_KEY",
                           "x-api-key",
                           "apiKey",
                           "APIKey",
                           "AWS_SECRET_ACCESS_KEY",
                           "AWS_ACCESS_KEY_ID",
                           "AZURE_CLIENT_SECRET",
                           "DB_PASS",
                           "SMTP_PASS",
                           "MYSQL_PWD",
                           "PGPASSWORD",
                           "db_passwd",
                           "GPG_PASSPHRASE",
                           "DOCKER_AUTH_CONFIG",
                           "Authorization",
                           "Set-Cookie",
                           "REGISTRY_CREDS",
                           "GOOGLE_APPLICATION_CREDENTIALS",
                           "SESSION_KEY",
                           "REQUEST_SIGNATURE",
                           "KAGGLE_KEY",
                           "STRIPE_KEY",
                           "SSH_PRIVATE_KEY",
                           "password",
                           "token",
                           "TORCH_HUB_TOKEN"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
}

TEST(IsSecretName, InnocentNames) {
  for (const char* name : {"HSA_ENABLE_SDMA",
                           "NCCL_IB_HCA",
                           "MIOPEN_USER_DB_PATH",
                           "TOKENIZERS_PARALLELISM",
                           "MAX_TOKENS",
                           "VLLM_MAX_NUM_BATCHED_TOKENS",
                           "EOS_TOKEN",
                           "pad_token_id",
                           "token_ids",
                           "PWD",
                           "OLDPWD",
                           "PASSWORD_FILE",
                           "HF_TOKEN_PATH",
                           "GIT_ASKPASS",
                           "SSH_AUTH_SOCK",
                           "AUTH_TYPE",
                           "XAUTHORITY",
                           "GPU_PASSTHROUGH",
                           "NCCL_BYPASS_CHECK",
                           "CACHE_KEY",
                           "TORCHINDUCTOR_CACHE_KEY",
                           "PUBLIC_KEY",
                           "GPG_KEY",
                           "KEY",
                           "key",
                           "KEYBOARD_LAYOUT",
                           "MONKEY_PATCH",
                           "CUDA_VISIBLE_DEVICES",
                           "HIP_VISIBLE_DEVICES",
                           "LD_PRELOAD",
                           "",
                           "__"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

TEST(RedactValue, SecretNameRedactsTheWholeValueButKeepsEmpty) {
  bool changed = true;
  EXPECT_EQ(RedactValue("NCCL_AUTH_TOKEN", "", &changed), "");
  EXPECT_FALSE(changed);
  EXPECT_EQ(RedactValue("TRITON_PASSWORD", "correct horse battery staple", &changed), "<redacted>");
  EXPECT_TRUE(changed);
  EXPECT_EQ(RedactValue("TRITON_PASSWORD", "<redacted>", &changed), "<redacted>");
  EXPECT_FALSE(changed);
}

struct Negative {
  const char* name;
  const char* value;
};

// Values of ordinary GPU settings that must come through untouched.
TEST(RedactValue, Negatives) {
  const Negative negatives[] = {
      {"CUDA_VISIBLE_DEVICES", "0,1"},
      {"CUDA_VISIBLE_DEVICES", "GPU-5c1e7e5c-93a8-5b2f-0b3c-7e1d2a3b4c5d,MIG-GPU-5c1e7e5c/1/0"},
      {"HSA_OVERRIDE_GFX_VERSION", "10.3.0"},
      {"LD_LIBRARY_PATH", "/opt/rocm/lib:/usr/local/cuda/lib64"},
      {"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_IB_HCA", "mlx5_0,mlx5_1"},
      {"NCCL_SOCKET_IFNAME", "^docker0,lo"},
      {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:512"},
      {"PYTORCH_HIP_ALLOC_CONF", "garbage_collection_threshold:0.6"},
      // A git commit, 40 hex digits like a legacy W&B key: kept outside WANDB_* names.
      {"TORCH_COMMIT", "5b3c9d1e0f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c"},
      {"TORCH_CUDA_ARCH_LIST", "8.0 8.6 9.0+PTX"},
      {"XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false --xla_dump_to=/tmp/xla"},
      {"TF_CPP_MIN_LOG_LEVEL", "2"},
      {"MIOPEN_USER_DB_PATH", "/home/ml/.config/miopen"},
      {"HSA_ENABLE_SDMA", "0"},
      {"GPU_MAX_HW_QUEUES", "4"},
      {"AMD_LOG_LEVEL", "4"},
      {"TRITON_CACHE_DIR", "/scratch/triton"},
      {"HIP_PLATFORM", "amd"},
      {"CUDA_MODULE_LOADING", "LAZY"},
      {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"GPU_DEVICE_ORDINAL", "0"},
      {"AMD_VENDOR_NOTE", "sk-hynix-hbm3e-12hi-stack-rev-b-lot-2024"},
      {"ROCM_PATH", "/opt/rocm-6.2.0"},
      {"CUDA_HOME", "/usr/local/cuda-12.4"},
      {"NCCL_TOPO_FILE", "/etc/nccl/topo.xml"},
      {"TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_ml"},
      {"HIP_LAUNCH_ARGS", "--keep-going --token-limit 100"},
  };
  for (const Negative& n : negatives) {
    bool changed = true;
    EXPECT_EQ(RedactValue(n.name, n.value, &changed), n.value) << n.name;
    EXPECT_FALSE(changed) << n.name;
  }
}

TEST(RedactText, KeyValueForms) {
  EXPECT_EQ(RedactText("connecting with password=hunter2 to db"), "connecting with password=<redacted> to db");
  EXPECT_EQ(RedactText("token: abc.def"), "token: <redacted>");
  EXPECT_EQ(RedactText(R"({"api_key": "s3 cr3t", "model": "x"})"), R"({"api_key": "<redacted>", "model": "x"})");
  EXPECT_EQ(RedactText("{'password': 'a\\'b', 'user': 'u'}"), "{'password': '<redacted>', 'user': 'u'}");
  EXPECT_EQ(RedactText("GET /v1/models?access_token=abc123&limit=5"), "GET /v1/models?access_token=<redacted>&limit=5");
  EXPECT_EQ(RedactText("Server=db;User Id=sa;Password=Pa55w0rd;Encrypt=true"),
            "Server=db;User Id=sa;Password=<redacted>;Encrypt=true");
  EXPECT_EQ(RedactText("huggingface-cli login --token abc123def"), "huggingface-cli login --token <redacted>");
  EXPECT_EQ(RedactText("run --password=abc --verbose"), "run --password=<redacted> --verbose");
  EXPECT_EQ(RedactText("Authorization: Basic dXNlcjpwYXNz"), "Authorization: Basic <redacted>");
  EXPECT_EQ(RedactText("curl -H 'Authorization: Bearer abcdefgh12345678'"),
            "curl -H 'Authorization: Bearer <redacted>'");
  EXPECT_EQ(RedactText("export HF_TOKEN=whatever"), "export HF_TOKEN=<redacted>");
}

// Keys of two words: the word before a generic key word makes it a secret name ("api key").
TEST(RedactText, TwoWordKeys) {
  EXPECT_EQ(RedactText("api key: sk9f8a7d6e5c4b3a"), "api key: <redacted>");
  EXPECT_EQ(RedactText("API Key = sk9f8a7d6e5c4b3a"), "API Key = <redacted>");
  EXPECT_EQ(RedactText("using access token: abcdef123456 now"), "using access token: <redacted> now");
  EXPECT_EQ(RedactText("the key: value"), "the key: value");
  EXPECT_EQ(RedactText("cache key = abc"), "cache key = abc");
  EXPECT_EQ(RedactText("api key is set"), "api key is set");
  EXPECT_EQ(RedactText("refresh token=abcdef123456"), "refresh token=<redacted>");
}

TEST(RedactText, KeyValueFormsLeftAlone) {
  for (const char* text :
       {"the token is invalid", "max_tokens=512 eos_token_id=2", "Tokens: 1024/s", "key=value cache_key=abc",
        "passed: 12, failed: 0", "--token --verbose", "amdgpu 0000:03:00.0: pasid:32772 vmid:3", "password=<redacted>",
        "ssh_auth_sock=/run/user/1000/keyring/ssh", "Authentication: succeeded"}) {
    EXPECT_EQ(RedactText(text), text) << text;
  }
}

TEST(RedactText, MultiLineLog) {
  const std::string github = "ghp_" + Chars(kAlnum, 36, 50);
  const std::string hf = "hf_" + Chars(kLetters, 34, 51);
  const std::string log =
      "[2024-05-01 10:00:00] INFO starting run on 8x MI300X, HIP_VISIBLE_DEVICES=0,1\n"
      "[2024-05-01 10:00:01] DEBUG cloning https://oauth2:" +
      github +
      "@github.com/org/model.git\n"
      "[2024-05-01 10:00:02] DEBUG hub login ok token=" +
      hf +
      " user=ml\n"
      "[2024-05-01 10:00:03] WARN db url postgres://ml:hunter2@db:5432/x\n"
      "key:\n" +
      PemBlock("EC PRIVATE KEY") +
      "\n"
      "[2024-05-01 10:00:04] ERROR HIP error: hipErrorIllegalAddress at 0x7f3a2c000000\n";
  bool changed = false;
  std::string out = RedactText(log, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "[2024-05-01 10:00:00] INFO starting run on 8x MI300X, HIP_VISIBLE_DEVICES=0,1\n"
            "[2024-05-01 10:00:01] DEBUG cloning https://oauth2:<redacted>@github.com/org/"
            "model.git\n"
            "[2024-05-01 10:00:02] DEBUG hub login ok token=<redacted> user=ml\n"
            "[2024-05-01 10:00:03] WARN db url postgres://ml:<redacted>@db:5432/x\n"
            "key:\n-----BEGIN EC PRIVATE KEY-----<redacted>\n"
            "[2024-05-01 10:00:04] ERROR HIP error: hipErrorIllegalAddress at 0x7f3a2c000000\n");
  EXPECT_FALSE(ContainsKnownToken(out));
  EXPECT_THAT(out, Not(HasSubstr("hunter2")));
  // Redacting twice changes nothing more.
  EXPECT_EQ(RedactText(out, &changed), out);
  EXPECT_FALSE(changed);
}

TEST(RedactText, TruncatedPrivateKeyIsRedactedToTheEnd) {
  std::string cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nMIIE";
  EXPECT_EQ(RedactText("dump: " + cut), "dump: -----BEGIN PRIVATE KEY-----<redacted>");
}

TEST(FindSecrets, SpansAreSortedDisjointAndNamed) {
  const std::string aws = "AKIAIOSFODNN7EXAMPLE";
  const std::string text = "a " + aws + " b Authorization: Bearer abcdefgh12345678 c";
  std::vector<SecretSpan> spans = FindSecrets(text);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(text.substr(spans[0].begin, spans[0].end - spans[0].begin), aws);
  EXPECT_EQ(spans[0].rule, "aws_access_key_id");
  EXPECT_EQ(text.substr(spans[1].begin, spans[1].end - spans[1].begin), "abcdefgh12345678");
  EXPECT_THAT(FindSecrets("nothing to see"), ElementsAre());
  EXPECT_THAT(FindSecrets(""), ElementsAre());
}

TEST(RedactText, ArbitraryBytesAreKept) {
  std::string bytes("\xff\xfe\0CUDA\x80 ok", 11);
  bool changed = true;
  EXPECT_EQ(RedactText(bytes, &changed), bytes);
  EXPECT_FALSE(changed);
  std::string with_token = std::string("\xff ") + "AKIAIOSFODNN7EXAMPLE" + "\x80";
  EXPECT_EQ(RedactText(with_token), "\xff <redacted>\x80");
}

TEST(RedactAssignment, RedactsTheValueOfAnEntry) {
  EXPECT_EQ(RedactAssignment("HF_TOKEN=abc"), "HF_TOKEN=<redacted>");
  EXPECT_EQ(RedactAssignment("CUDA_VISIBLE_DEVICES=0,1"), "CUDA_VISIBLE_DEVICES=0,1");
  EXPECT_EQ(RedactAssignment("NOTE=token=abc"), "NOTE=token=<redacted>");
  EXPECT_EQ(RedactAssignment("no equals AKIAIOSFODNN7EXAMPLE"), "no equals <redacted>");
}

TEST(RedactText, LargeInputStaysLinear) {
  // 4 MiB of log lines with one token at the end: must finish (and find it) quickly.
  std::string log;
  while (log.size() < (4u << 20)) log += "amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3)\n";
  log += "token=" + Chars(kAlnum, 20, 60) + "\n";
  std::string out = RedactText(log);
  EXPECT_EQ(out.substr(out.size() - 17), "token=<redacted>\n");
}

// ---------------------------------------------------------------------------------------------
// Command lines

TEST(RedactArgv, SecretOptionTakesTheNextElement) {
  const std::vector<std::string> argv = {"python",       "train.py",  "--password",
                                         "hunter2 x",    "--api-key", "k3y-v4lue",
                                         "--auth-token", "t0k3n",     "--aws-secret-access-key",
                                         "s3cr3t/ABC",   "--epochs",  "3",
                                         "-token",       "abc"};
  EXPECT_EQ(RedactArgv(argv),
            (std::vector<std::string>{"python", "train.py", "--password", "<redacted>", "--api-key", "<redacted>",
                                      "--auth-token", "<redacted>", "--aws-secret-access-key", "<redacted>", "--epochs",
                                      "3", "-token", "<redacted>"}));
}

TEST(RedactArgv, OtherFormsAndNegatives) {
  // --name=value, tokens and URL passwords inside any element, as RedactText does.
  const std::string github = "ghp_" + Chars(kAlnum, 36, 70);
  EXPECT_EQ(
      RedactArgv({"run", "--password=abc", "--url", "https://u:pw@host/x", github}),
      (std::vector<std::string>{"run", "--password=<redacted>", "--url", "https://u:<redacted>@host/x", "<redacted>"}));
  // A switch followed by the next option, a path option, a count, and a last option without value.
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"tool", "--token", "--verbose"},
                                             {"tool", "--password-file", "/run/secrets/pw"},
                                             {"tool", "--max-tokens", "512"},
                                             {"tool", "--password"},
                                             {"ssh", "-p2222", "host"},
                                             {"tar", "-pxf", "a.tar"},
                                             {"mkdir", "-p", "/tmp/x"},
                                             {"nvcc", "-arch=sm_90", "-o", "a.out", "kernel.cu"}}) {
    EXPECT_EQ(RedactArgv(argv), argv) << argv[1];
  }
  EXPECT_EQ(RedactArgv({}), std::vector<std::string>{});
}

TEST(RedactArgv, ClientPasswordOptions) {
  // mysql and its tools take the password glued to -p (a separate word is the database).
  EXPECT_EQ(RedactArgv({"/usr/bin/mysql", "-u", "root", "-pS3cretPw", "db"}),
            (std::vector<std::string>{"/usr/bin/mysql", "-u", "root", "-p<redacted>", "db"}));
  EXPECT_EQ(RedactArgv({"env", "TZ=UTC", "mysqldump", "-pS3cret", "-P3306"}),
            (std::vector<std::string>{"env", "TZ=UTC", "mysqldump", "-p<redacted>", "-P3306"}));
  EXPECT_EQ(RedactArgv({"sshpass", "-p", "S3cret", "ssh", "host"}),
            (std::vector<std::string>{"sshpass", "-p", "<redacted>", "ssh", "host"}));
  // curl -u USER:PASSWORD keeps the user.
  EXPECT_EQ(RedactArgv({"curl", "-u", "alice:S3cret", "https://x"}),
            (std::vector<std::string>{"curl", "-u", "alice:<redacted>", "https://x"}));
  EXPECT_EQ(RedactArgv({"curl", "--user", "alice:S3cret"}),
            (std::vector<std::string>{"curl", "--user", "alice:<redacted>"}));
  EXPECT_EQ(RedactArgv({"curl", "-u", "alice"}), (std::vector<std::string>{"curl", "-u", "alice"}));
}

TEST(RedactArgv, TwiceIsOnceAndJoinedTextAgrees) {
  const std::vector<std::string> argv = {"mysql", "-pS3cret", "--password", "x y", "--token=abc", "--api-key", "k"};
  std::vector<std::string> once = RedactArgv(argv);
  EXPECT_EQ(RedactArgv(once), once);
  // The joined form (a core's or /proc's command line) is redacted alike by RedactText.
  EXPECT_EQ(RedactText("mysql -u root -pS3cretPw db"), "mysql -u root -p<redacted> db");
  EXPECT_EQ(RedactText("/usr/bin/mysqldump --user=root -pS3cret db > out.sql"),
            "/usr/bin/mysqldump --user=root -p<redacted> db > out.sql");
  EXPECT_EQ(RedactText("python train.py --password hunter2 --epochs 3"),
            "python train.py --password <redacted> --epochs 3");
  EXPECT_EQ(RedactText("ssh -p 2222 host; mkdir -p /x; tar -pxf a.tar"),
            "ssh -p 2222 host; mkdir -p /x; tar -pxf a.tar");
}

TEST(ShellQuote, QuotesForPosixSh) {
  EXPECT_EQ(ShellQuote("plain-word_1.2/x:y=z,@%+"), "plain-word_1.2/x:y=z,@%+");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("two words"), "'two words'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$(rm -rf ~)`x`;|&<>*?[]{}!#~\"\\"), "'$(rm -rf ~)`x`;|&<>*?[]{}!#~\"\\'");
  EXPECT_EQ(ShellQuote("<redacted>"), "'<redacted>'");
  EXPECT_EQ(RedactedShellCommand({"python", "-c", "print('hi there')", "--password", "x"}),
            "python -c 'print('\\''hi there'\\'')' --password '<redacted>'");
}

// ---------------------------------------------------------------------------------------------
// AWS secret access keys: 40 characters of base64, known only by what stands next to them.

TEST(AwsSecretAccessKey, RedactedNextToItsKeyIdOrItsName) {
  const std::string id = "AKIA" + Chars(kUpperBase32, 16, 80);
  const std::string secret = Chars(kAlnum, 12, 81) + "/" + Chars(kAlnum, 10, 82) + "+" + Chars(kAlnum, 16, 83);  // 40
  ASSERT_EQ(secret.size(), 40u);
  EXPECT_EQ(RedactText("creds " + id + " " + secret + " ok"), "creds <redacted> <redacted> ok");
  // The credentials CSV the console downloads.
  EXPECT_EQ(RedactText("User name,Password,Access key ID,Secret access key\nml,," + id + "," + secret + "\n"),
            "User name,Password,Access key ID,Secret access key\nml,,<redacted>,<redacted>\n");
  // aws configure's prompt.
  EXPECT_EQ(RedactText("AWS Secret Access Key [None]: " + secret), "AWS Secret Access Key [None]: <redacted>");
  EXPECT_EQ(RedactText("SecretAccessKey " + secret), "SecretAccessKey <redacted>");
  std::string out = RedactText(id + " " + secret);
  EXPECT_EQ(RedactText(out), out);
}

TEST(AwsSecretAccessKey, DiagnosticHashesAndAddressesStay) {
  const std::string id = "AKIA" + Chars(kUpperBase32, 16, 84);
  const std::string sha1 = Chars(kHex, 40, 85);
  const std::string sha256 = Chars(kHex, 64, 86);
  const std::string base64_40 = Chars(kAlnum, 40, 87);
  // A git commit next to a key id stays; the key id goes.
  EXPECT_EQ(RedactText(id + " commit " + sha1), "<redacted> commit " + sha1);
  for (const std::string& text : {
           "model.safetensors sha256:" + sha256,
           "layer weights digest " + sha256.substr(0, 40) + " ok",
           "checkpoint " + base64_40 + " loaded",  // no AWS context: not a key
           std::string("illegal address 0x7f3a2c000000 in kernel at 0x00007f12abcd0000 pc 0x7f12abcd0040"),
           "HIP error: hipErrorIllegalAddress; GPU UUID GPU-" + Chars(kHex, 8, 88) + "-" + Chars(kHex, 4, 89),
           "secret access key rotation: " + std::string(40, 'A'),  // no lower case: not random base64
           "secret access key file: /home/ml/.aws/credentials/" + Chars(kLetters, 20, 90),
       }) {
    EXPECT_EQ(RedactText(text), text) << text;
  }
}

}  // namespace
}  // namespace gputriage::core

namespace gputriage::core {
namespace {

// The user's own patterns (--redact, the config file's redact list) redact like built-in rules;
// a bad or empty-matching pattern is refused, naming it.
TEST(RedactUserPatterns, RedactedLikeTheBuiltInRulesAndCheckedFirst) {
  ASSERT_TRUE(SetUserSecretPatterns({"internal-host-[0-9]+", "PRJ-[A-Z]{3}"}).ok());
  EXPECT_EQ(RedactText("ssh internal-host-42 for PRJ-ABC"), "ssh <redacted> for <redacted>");
  EXPECT_EQ(RedactText("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789 on internal-host-7"),
            "HF_TOKEN=<redacted> on <redacted>");
  auto bad = SetUserSecretPatterns({"("});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--redact '('"), std::string::npos) << bad.error().message;
  auto empty = SetUserSecretPatterns({"x*"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("matches the empty string"), std::string::npos);
  ASSERT_TRUE(SetUserSecretPatterns({}).ok());
  EXPECT_EQ(RedactText("internal-host-42"), "internal-host-42");
}

}  // namespace
}  // namespace gputriage::core
