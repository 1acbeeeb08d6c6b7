#include "core/redact_job.h"

#include "core/redact.h"

namespace gputriage::core {
namespace {

void RedactInPlace(std::string& text) { text = RedactText(text); }

void RedactInPlace(std::optional<std::string>& text) {
  if (text) RedactInPlace(*text);
}

}  // namespace

void RedactProcessReport(ProcessReport& report) {
  RedactInPlace(report.command);
  RedactInPlace(report.executable);
  for (ThreadState& thread : report.threads) {
    RedactInPlace(thread.name);
    RedactInPlace(thread.unwind_error);
  }
  if (report.classification) {
    RedactInPlace(report.classification->summary);
    RedactInPlace(report.classification->detail);
    for (Evidence& e : report.classification->evidence) RedactInPlace(e.text);
  }
}

void RedactProcessFile(ProcessFile& file) {
  RedactProcessReport(file.primary);
  for (ProcessReport& report : file.other_crashed_processes) RedactProcessReport(report);
  for (ProcessReport& report : file.hang_dumps) RedactProcessReport(report);
  RedactInPlace(file.signature);
  for (RunKernelLogRecord& record : file.kernel_log) RedactInPlace(record.message);
}

void RedactBundleManifest(BundleManifest& manifest) {
  if (manifest.command) manifest.command = RedactArgv(*manifest.command);
  RedactInPlace(manifest.signature);
  if (manifest.classification) RedactInPlace(manifest.classification->summary);
}

void RedactBundle(Bundle& bundle) {
  if (bundle.manifest) RedactBundleManifest(*bundle.manifest);
  RedactProcessFile(bundle.process);
}

}  // namespace gputriage::core
