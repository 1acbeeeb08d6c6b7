// `gputriage inspect`: GPU code objects in a file, without a GPU. A host executable or shared
// library (its `.nv_fatbin` and `.hip_fatbin` sections), a standalone code object (.cubin,
// .hsaco/.co), a fatbin file, a clang offload bundle, or PTX text.
//
// Large libraries (libtorch_cuda.so carries thousands of cubins) are read without mapping the
// whole file into memory: NVIDIA fatbin entries are listed from their headers, then read,
// decompressed and parsed in parallel one at a time per thread, and handed to the caller in file
// order; a `.hip_fatbin` section is read one offload bundle at a time (StreamHipFatbin). Memory
// stays bounded by the threads' working sets and the largest bundle, not the file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "inspect/model.h"

namespace gputriage::inspect {

struct InspectOptions {
  unsigned threads = 0;  ///< 0: one per CPU, at most 8
  /// Bytes of fatbin entries (stored + decompressed) being decoded at once, over all threads:
  /// bounds memory whatever the file (an entry larger than this is decoded alone).
  uint64_t memory_budget = 96ull << 20;
  /// Runs on the decoding thread for each code object before it is handed on (to filter and
  /// render it in parallel); what it returns goes to the sink with the object.
  std::function<std::string(CodeObject&)> prepare;
  /// Only what the headers say (architecture, format, size), no kernels: NVIDIA fatbin entries
  /// are not decompressed. Enough for the coverage check, and fast on any file.
  bool headers_only = false;
  /// Called on the caller's thread as the file is read, with the bytes of the file passed so
  /// far and its size: after each NVIDIA fatbin entry is handed on, after each AMD offload
  /// bundle. For a progress display; may be null.
  std::function<void(uint64_t bytes_done, uint64_t bytes_total)> progress;
};

/// What a file turned out to be, and problems that concern the file rather than one object.
struct FileSummary {
  std::string path;
  std::string kind;  ///< "host-elf", "cubin", "amdgpu-code-object", "fatbin", "offload-bundle", "ptx"
  size_t code_objects = 0;
  std::vector<std::string> problems;
  std::optional<std::string> soname;  ///< a host ELF's DT_SONAME, when it has one
};

/// Receives each code object, in file order, with what InspectOptions::prepare made of it ("" when
/// there is no prepare).
using CodeObjectSink = std::function<void(CodeObject&&, std::string&&)>;

/// Inspects one file. Fails when the file cannot be read, is not a regular file, or is none of
/// the kinds above; and, with ErrorCode::kDataLoss and a message naming the file and the fields,
/// when a host ELF's section-header table is missing, runs past the end of the file (truncated)
/// or is damaged (entry size, section-name table, a header or name that cannot be read), since
/// "no GPU code section" would then mean nothing. Other damage is reported per code object
/// (CodeObject::error) or in FileSummary::problems (a section or fatbin container that runs past
/// its bounds); nothing is read from outside a GPU code section's bytes.
core::Result<FileSummary> InspectFile(const std::string& path, const InspectOptions& options,
                                      const CodeObjectSink& sink);

/// {vendor, arch, target_id, format, origin, compressed, size, error, kernels: [{name, symbol,
/// AMD: sgpr_count, vgpr_count, agpr_count, sgpr_spill_count, vgpr_spill_count, lds_bytes,
/// scratch_bytes, kernarg_bytes, max_workgroup_size, wavefront_size, dynamic_stack; NVIDIA:
/// registers, shared_bytes, local_bytes, max_threads, param_bytes}]}; absent values are left out.
core::Json ToJson(const CodeObject& object);

}  // namespace gputriage::inspect
