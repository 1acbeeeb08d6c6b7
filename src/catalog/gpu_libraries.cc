#include "catalog/gpu_libraries.h"

#include <re2/re2.h>

#include "catalog/yaml_util.h"
#include "core/text.h"

namespace gputriage::catalog {

core::Result<std::vector<GpuLibraryRule>> ParseGpuLibraries(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.gpu-libraries/1"));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  std::vector<GpuLibraryRule> rules;
  for (const YAML::Node& node : entries) {
    std::string where = yaml::Where(source, node);
    GpuLibraryRule r;
    r.component = yaml::Scalar(node, "component");
    r.vendor = yaml::Scalar(node, "vendor");
    r.pattern = yaml::Scalar(node, "soname");
    if (r.component.empty() || r.pattern.empty())
      return core::MakeError("{}: an entry needs component and soname", where);
    if (r.vendor != "nvidia" && r.vendor != "amd" && r.vendor != "any") {
      return core::MakeError("{}: vendor must be nvidia, amd or any, not '{}'", where, r.vendor);
    }
    std::string release = yaml::Scalar(node, "release");
    if (release == "cuda-major") {
      r.release = ReleaseFrom::kCudaMajor;
    } else if (release == "rocm-build") {
      r.release = ReleaseFrom::kRocmBuild;
    } else if (!release.empty()) {
      return core::MakeError("{}: release must be cuda-major or rocm-build, not '{}'", where, release);
    }
    r.versioned = yaml::Scalar(node, "version") != "none";
    GT_RETURN_IF_ERROR(yaml::CheckPattern(r.pattern, where));
    r.regex = std::make_shared<re2::RE2>(r.pattern);
    rules.push_back(std::move(r));
  }
  return rules;
}

std::optional<std::string> RocmReleaseFromBuild(std::string_view number) {
  if (number.size() < 5 || number.size() > 6) return std::nullopt;
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int n = std::stoi(std::string(number));
  if (n < 10000) return std::nullopt;
  return "rocm " + std::to_string(n / 10000) + "." + std::to_string(n / 100 % 100) + "." + std::to_string(n % 100);
}

std::optional<GpuLibraryClass> ClassifyLibrary(const std::vector<GpuLibraryRule>& rules, std::string_view file_name) {
  for (const GpuLibraryRule& r : rules) {
    if (!re2::RE2::PartialMatch(file_name, *r.regex)) continue;
    GpuLibraryClass c{r.component, r.vendor, std::nullopt, std::nullopt};
    size_t so = file_name.find(".so.");
    if (so != std::string_view::npos && r.versioned) {
      std::string_view v = file_name.substr(so + 4);
      bool numeric = !v.empty() && v.find_first_not_of("0123456789.") == std::string_view::npos;
      if (numeric) c.version = std::string(v);
    }
    if (c.version) {
      std::vector<std::string_view> parts = core::Split(*c.version, '.');
      if (r.release == ReleaseFrom::kCudaMajor && !parts.front().empty())
        c.release = "cuda " + std::string(parts.front());
      if (r.release == ReleaseFrom::kRocmBuild && parts.size() >= 3) c.release = RocmReleaseFromBuild(parts.back());
    }
    return c;
  }
  return std::nullopt;
}

}  // namespace gputriage::catalog
