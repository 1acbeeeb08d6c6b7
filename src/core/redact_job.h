// Secret redaction over the typed models of a failed job (process reports, crash bundles), for
// everything that shows or stores them: `analyze` (terminal and JSON), `report`, the history
// database. What a bundle holds on disk stays as the run wrote it (local, the user's own files).
#pragma once

#include "core/bundle.h"
#include "core/process.h"

namespace gputriage::core {

/// Redacts, in place, the text of `report` that comes from the job: the command line
/// (RedactText: it is argv joined by spaces), the executable's path, thread names, unwind
/// errors, the classification's summary, detail and evidence. Addresses, registers, frames
/// (symbols of the binaries) and maps are left as they are. Idempotent.
void RedactProcessReport(ProcessReport& report);

/// RedactProcessReport on every process of `file`, and its signature and kernel-log messages.
void RedactProcessFile(ProcessFile& file);

/// Redacts `manifest`'s command (RedactArgv: `--password VALUE` spans two elements), signature
/// and classification summary, in place.
void RedactBundleManifest(BundleManifest& manifest);

/// RedactBundleManifest and RedactProcessFile on a bundle as core::ReadBundle gave it. The
/// stdout/stderr tails and kernel log are left raw: whoever quotes a line of them redacts it
/// (the analysis every line it keeps, the report its excerpts).
void RedactBundle(Bundle& bundle);

}  // namespace gputriage::core
