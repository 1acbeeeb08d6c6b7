#include "collect/python_probe.h"

#include "core/json_parse.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {

namespace {

// Kept small and defensive: every framework in its own try block, output one JSON object.
constexpr const char* kScript = R"PY(
import json, sys
out = {"version": sys.version.split()[0], "executable": sys.executable, "sys_path": sys.path}
def probe_torch():
    import os, torch
    t = {"version": torch.__version__, "cuda": torch.version.cuda,
         "hip": getattr(torch.version, "hip", None),
         "lib_dir": os.path.join(os.path.dirname(torch.__file__), "lib")}
    try: t["cudnn"] = torch.backends.cudnn.version()
    except Exception as e: t["cudnn_error"] = str(e)
    try: t["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as e: t["nccl_error"] = str(e)
    t["cuda_available"] = torch.cuda.is_available()
    if t["cuda_available"]:
        t["device_count"] = torch.cuda.device_count()
        devs = []
        for i in range(t["device_count"]):
            p = torch.cuda.get_device_properties(i)
            d = {"name": p.name, "capability": "%d.%d" % (p.major, p.minor),
                 "total_memory_bytes": p.total_memory}
            arch = getattr(p, "gcnArchName", None)
            if arch: d["arch"] = arch
            devs.append(d)
        t["devices"] = devs
        try: t["arch_list"] = torch.cuda.get_arch_list()
        except Exception as e: t["arch_list_error"] = str(e)
    return t
def probe_jax():
    import jax
    j = {"version": jax.__version__}
    try: j["devices"] = [str(d) for d in jax.devices()]
    except Exception as e: j["devices_error"] = str(e)
    return j
def probe_tf():
    import tensorflow as tf
    b = tf.sysconfig.get_build_info()
    return {"version": tf.__version__, "cuda": b.get("cuda_version"), "cudnn": b.get("cudnn_version"),
            "rocm": b.get("is_rocm_build")}
import importlib.util
for name, mod, fn in (("torch", "torch", probe_torch), ("jax", "jax", probe_jax),
                      ("tensorflow", "tensorflow", probe_tf)):
    if importlib.util.find_spec(mod) is None:
        continue
    try: out[name] = fn()
    except BaseException as e: out[name] = {"error": "%s: %s" % (type(e).__name__, e)}
sys.stdout.write(json.dumps(out, default=str))
)PY";

}  // namespace

core::Section RunPythonProbe(const std::string& python, std::chrono::milliseconds timeout) {
  core::Section section;
  core::RunOptions options;
  options.timeout = timeout;
  options.extra_env = {"PYTHONDONTWRITEBYTECODE=1"};
  auto outcome = core::RunWithTimeout({python, "-c", kScript}, options);
  if (!outcome.ok()) {
    section.NoteMissing("software.python_probe", outcome.error().message);
    return section;
  }
  if (outcome->timed_out || outcome->exit_code != 0) {
    std::string reason = fmt::format("{} {}", python, core::DescribeOutcome(*outcome, options));
    if (!outcome->stderr_tail.empty()) {
      std::string tail =
          outcome->stderr_tail.substr(outcome->stderr_tail.size() > 400 ? outcome->stderr_tail.size() - 400 : 0);
      reason += ": " + core::SanitizeUtf8(tail);
    }
    section.NoteMissing("software.python_probe", reason);
    if (outcome->timed_out) {
      section.findings.push_back(
          core::Finding{.id = "collect.python_probe_hung",
                        .layer = 1,
                        .severity = core::Severity::kWarning,
                        .title = fmt::format("Python probe did not answer within {:.0f} s", timeout.count() / 1000.0),
                        .detail = "Importing the frameworks or initialising the GPU from Python hung; a wedged "
                                  "driver or a stuck CUDA/HIP initialisation can cause this.",
                        .evidence = {{python, reason}},
                        .fix = "Run the interpreter by hand and see where `import torch; torch.cuda.init()` stops.",
                        .references = {}});
    }
    return section;
  }
  core::Result<core::Json> parse = core::ParseJson(outcome->stdout_data, python + "'s output");
  core::Json parsed = parse.ok() ? std::move(*parse) : core::Json();
  if (!parsed.is_object()) {
    section.NoteMissing("software.python_probe", python + ": output was not a JSON object (" +
                                                     std::to_string(outcome->stdout_data.size()) + " bytes)");
    return section;
  }
  parsed["interpreter"] = python;
  section.data = std::move(parsed);
  return section;
}

std::optional<std::string> FindTorchLibDir(const std::string& python, std::chrono::milliseconds timeout) {
  core::RunOptions options;
  options.timeout = timeout;
  options.extra_env = {"PYTHONDONTWRITEBYTECODE=1"};
  auto outcome =
      core::RunWithTimeout({python, "-c",
                            "import importlib.util as u, os; s = u.find_spec('torch'); "
                            "print(os.path.join(os.path.dirname(s.origin), 'lib') if s and s.origin else '')"},
                           options);
  if (!outcome.ok() || outcome->timed_out || outcome->exit_code.value_or(1) != 0) return std::nullopt;
  std::string dir(core::Trim(outcome->stdout_data));
  if (dir.empty()) return std::nullopt;
  return dir;
}

}  // namespace gputriage::collect
