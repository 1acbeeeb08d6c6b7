#include "inspect/inspect.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/byte_reader.h"
#include "core/scoped_fd.h"
#include "inspect/amd.h"
#include "inspect/nvidia.h"
#include "inspect/occupancy.h"

namespace gputriage::inspect {
namespace {

// Whole-file reads (standalone code objects, PTX) stop here.
constexpr uint64_t kMaxWholeRead = 2ull << 30;

class File {
 public:
  explicit File(core::ScopedFd fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }

  bool Read(uint64_t offset, size_t size, std::string* out) const {
    out->resize(size);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd_.get(), out->data() + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  core::ScopedFd fd_;
};

// How much of a standalone 64-bit ELF (a cubin, an AMDGPU code object) its headers describe: the
// header, the program and section header tables and every segment and section with bytes in the
// file, up to the file's size. Failed before: a 2 GB sparse file with an EM_AMDGPU header was read
// whole (2.1 GB of memory) before being refused.
uint64_t ElfExtent(const File& file, uint64_t size) {
  std::string eh;
  if (size < 64 || !file.Read(0, 64, &eh) || eh[4] != 2 /* ELFCLASS64 */ || eh[5] != 1 /* little-endian */) {
    return size;  // the parser says what is wrong; nothing large is read for it
  }
  core::ByteReader header(eh);
  uint64_t extent = 64;
  auto table = [&](uint64_t offset, uint64_t count, uint64_t entry, std::string* out) {
    // A header table of more than 16 MiB is no code object's: left to the parser to refuse.
    if (count == 0 || entry == 0 || offset >= size || count * entry > size - offset || count * entry > (16u << 20)) {
      return false;
    }
    extent = std::max(extent, offset + count * entry);
    return file.Read(offset, static_cast<size_t>(count * entry), out);
  };
  auto cover = [&](uint64_t offset, uint64_t bytes) {
    if (offset < size && bytes <= size - offset) extent = std::max(extent, offset + bytes);
  };
  std::string phdrs, shdrs;
  uint64_t phentsize = header.U16(54).value_or(0), shentsize = header.U16(58).value_or(0);
  if (phentsize >= 56 && table(header.U64(32).value_or(0), header.U16(56).value_or(0), phentsize, &phdrs)) {
    core::ByteReader r(phdrs);
    for (uint64_t at = 0; at + 56 <= phdrs.size(); at += phentsize) cover(*r.U64(at + 8), *r.U64(at + 32));
  }
  if (shentsize >= 64 && table(header.U64(40).value_or(0), header.U16(60).value_or(0), shentsize, &shdrs)) {
    core::ByteReader r(shdrs);
    for (uint64_t at = 0; at + 64 <= shdrs.size(); at += shentsize) {
      if (*r.U32(at + 4) != 8 /* SHT_NOBITS */) cover(*r.U64(at + 24), *r.U64(at + 32));
    }
  }
  return extent;
}

struct Section {
  uint64_t offset = 0, size = 0;
  bool found = false;
};

template <typename... Args>
core::Error Damaged(fmt::format_string<Args...> format, Args&&... args) {
  return core::MakeErrorCode(core::ErrorCode::kDataLoss, format, std::forward<Args>(args)...);
}

// The section-header table must be whole and well-formed before its absence of GPU sections
// means anything: a truncated file or a damaged table would otherwise read as "no GPU code".
core::Result<size_t> CheckSectionTable(Elf* elf, const std::string& path, uint64_t file_size) {
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh)) return Damaged("{}: ELF header cannot be read: {}", path, elf_errmsg(-1));
  // e_shnum 0 with a table means more than 0xff00 sections, counted in section 0 (libelf reads it).
  size_t count = eh.e_shnum;
  if (count == 0 && eh.e_shoff != 0 && eh.e_shoff < file_size && elf_getshdrnum(elf, &count) != 0) {
    return Damaged("{}: section-header table cannot be read ({}): truncated or corrupt ELF", path, elf_errmsg(-1));
  }
  if (eh.e_shoff == 0 && count == 0) {
    return Damaged("{}: no section-header table (e_shoff 0): the GPU code sections cannot be looked for", path);
  }
  uint64_t entry = gelf_getclass(elf) == ELFCLASS32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
  if (eh.e_shentsize != entry) {
    return Damaged("{}: section headers of {} bytes, not {} (e_shentsize): corrupt ELF", path, eh.e_shentsize, entry);
  }
  std::optional<uint64_t> table = core::CheckedMul(std::max<uint64_t>(count, 1), entry);
  std::optional<uint64_t> end = table ? core::CheckedAdd(eh.e_shoff, *table) : std::nullopt;
  if (!end || *end > file_size) {
    return Damaged(
        "{}: section-header table ({} entries of {} bytes at offset {:#x}) runs past the end of the file ({} "
        "bytes): truncated or corrupt ELF",
        path, count, entry, eh.e_shoff, file_size);
  }
  size_t read = 0;
  if (elf_getshdrnum(elf, &read) != 0 || read != count) {
    return Damaged("{}: section-header table cannot be read ({} of {} entries): corrupt ELF", path, read, count);
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0 || shstrndx == 0 || shstrndx >= count) {
    return Damaged("{}: the section-name table (index {}) is not one of the {} sections: corrupt ELF", path,
                   eh.e_shstrndx, count);
  }
  return shstrndx;
}

// A section whose bytes the file does not hold: "" when it is whole.
std::string PastTheEnd(const GElf_Shdr& sh, const char* name, uint64_t file_size) {
  if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0) return "";
  std::optional<uint64_t> end = core::CheckedAdd(sh.sh_offset, sh.sh_size);
  if (end && *end <= file_size) return "";
  return fmt::format("section {} ({:#x} bytes at {:#x}) runs past the end of the file ({} bytes): truncated", name,
                     sh.sh_size, sh.sh_offset, file_size);
}

// DT_SONAME of the dynamic section `scn` (whose header is `sh`): nullopt when there is none or
// it cannot be read (libelf checks the entries and the string against the file).
std::optional<std::string> SonameOf(Elf* elf, Elf_Scn* scn, const GElf_Shdr& sh) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || sh.sh_entsize == 0) return std::nullopt;
  size_t count = sh.sh_size / sh.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn;
    if (!gelf_getdyn(data, static_cast<int>(i), &dyn) || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag != DT_SONAME) continue;
    const char* name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
    return name ? std::optional<std::string>(name) : std::nullopt;
  }
  return std::nullopt;
}

// The file offsets of the host ELF's `.nv_fatbin` and `.hip_fatbin` sections, and its
// DT_SONAME (libelf reads only the headers and sections it needs). Fails, naming the file and
// what is wrong, when the section-header table or a section's header or name cannot be read;
// sections whose bytes run past the end of the file are added to `problems`.
core::Result<void> FindSections(const File& file, const std::string& path, uint64_t file_size, Section* nv,
                                Section* hip, std::vector<std::string>* problems, std::optional<std::string>* soname) {
  static const bool version_ok = elf_version(EV_CURRENT) != EV_NONE;
  (void)version_ok;
  Elf* elf = elf_begin(file.fd(), ELF_C_READ_MMAP, nullptr);
  if (!elf) return Damaged("{}: not a readable ELF file: {}", path, elf_errmsg(-1));
  std::unique_ptr<Elf, decltype(&elf_end)> guard(elf, &elf_end);
  GT_ASSIGN_OR_RETURN(size_t shstrndx, CheckSectionTable(elf, path, file_size));
  size_t index = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    ++index;
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      return Damaged("{}: section {}: header cannot be read: {}", path, index, elf_errmsg(-1));
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) {
      return Damaged("{}: section {}: its name (offset {:#x}) is not in the section-name table: corrupt ELF", path,
                     index, sh.sh_name);
    }
    Section* target = std::strcmp(name, ".nv_fatbin") == 0 ? nv : std::strcmp(name, ".hip_fatbin") == 0 ? hip : nullptr;
    if (target && sh.sh_type != SHT_NOBITS) {
      *target = {sh.sh_offset, sh.sh_size, true};  // checked against the file by the caller
    } else if (std::string past = PastTheEnd(sh, name, file_size); !past.empty()) {
      problems->push_back(std::move(past));
    } else if (sh.sh_type == SHT_DYNAMIC) {
      *soname = SonameOf(elf, scn, sh);
    }
  }
  return {};
}

// Decodes `entries` on `threads` threads and hands them to `sink` in order. A bounded window of
// decoded objects waits for its turn, and a memory budget bounds the entries being decoded at
// once, so memory does not grow with the number or the size of the entries.
void DecodeInOrder(const File& file, const std::vector<FatbinEntry>& entries, const std::string& origin,
                   const InspectOptions& options, unsigned threads, uint64_t file_size,
                   const CodeObjectSink& sink_object) {
  if (entries.empty()) return;
  size_t handed = 0;
  auto sink = [&](CodeObject&& co, std::string&& prepared) {
    sink_object(std::move(co), std::move(prepared));
    const FatbinEntry& e = entries[handed++];
    if (options.progress) options.progress(e.payload_offset + e.payload_size, file_size);
  };
  RangeReader read = [&file](uint64_t offset, size_t size, std::string* out) { return file.Read(offset, size, out); };
  auto decode = [&](const FatbinEntry& e) {
    CodeObject co = DecodeFatbinEntry(read, e, origin);
    std::string prepared = options.prepare ? options.prepare(co) : std::string();
    return std::pair<CodeObject, std::string>(std::move(co), std::move(prepared));
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(entries.size())));
  if (threads == 1) {
    for (const FatbinEntry& e : entries) {
      auto [co, prepared] = decode(e);
      sink(std::move(co), std::move(prepared));
    }
    return;
  }
  const size_t window = threads * 4;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::optional<std::pair<CodeObject, std::string>>> ready;  // ready[i] is entry (delivered + i)
  size_t delivered = 0, next = 0;
  uint64_t in_use = 0;  // bytes of entries being decoded
  auto cost = [](const FatbinEntry& e) { return e.payload_size + (e.compressed() ? e.uncompressed_size : 0); };
  auto worker = [&] {
    for (;;) {
      size_t index;
      uint64_t need;
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] {
          if (next >= entries.size()) return true;
          if (next >= delivered + window) return false;
          return in_use == 0 || in_use + cost(entries[next]) <= options.memory_budget;
        });
        if (next >= entries.size()) return;
        index = next++;
        need = cost(entries[index]);
        in_use += need;
      }
      auto result = decode(entries[index]);
      std::lock_guard<std::mutex> lock(mutex);
      in_use -= need;
      size_t slot = index - delivered;
      if (ready.size() <= slot) ready.resize(slot + 1);
      ready[slot] = std::move(result);
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker);
  while (delivered < entries.size()) {
    std::pair<CodeObject, std::string> item;
    {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, [&] { return !ready.empty() && ready.front().has_value(); });
      item = std::move(*ready.front());
      ready.pop_front();
      ++delivered;
      cv.notify_all();
    }
    sink(std::move(item.first), std::move(item.second));
  }
  for (std::thread& t : pool) t.join();
}

std::string Magic(const std::string& head, size_t n) { return head.substr(0, std::min(n, head.size())); }

}  // namespace

core::Result<FileSummary> InspectFile(const std::string& path, const InspectOptions& options,
                                      const CodeObjectSink& sink) {
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return core::ErrnoError(errno, "{}", path);
  File file(std::move(fd));
  struct stat st {};
  if (fstat(file.fd(), &st) != 0) return core::ErrnoError(errno, "{}", path);
  if (S_ISDIR(st.st_mode)) return core::MakeError("{}: is a directory", path);
  // A device or FIFO could block or never end (--pid lists /dev/nvidia* mappings).
  if (!S_ISREG(st.st_mode)) return core::MakeError("{}: not a regular file", path);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  // 8 threads decode libtorch_cuda.so (2,789 cubins) in 1.2 s on the H200 machine's 16 cores;
  // 16 are no faster there and hold more memory.
  unsigned threads =
      options.threads ? options.threads : std::min(8u, std::max(1u, std::thread::hardware_concurrency()));
  FileSummary summary;
  summary.path = path;
  size_t count = 0;
  auto counted = [&](CodeObject&& co, std::string&& prepared) {
    ++count;
    sink(std::move(co), std::move(prepared));
  };
  // Objects read whole (not through the decoding threads) are prepared here.
  auto one = [&](CodeObject&& co) {
    std::string prepared = options.prepare ? options.prepare(co) : std::string();
    counted(std::move(co), std::move(prepared));
  };
  std::string head;
  if (!file.Read(0, std::min<uint64_t>(size, 64), &head)) return core::MakeError("{}: cannot read", path);
  auto whole = [&]() -> core::Result<std::string> {
    if (size > kMaxWholeRead) return core::MakeError("{}: {} bytes is too large for this kind of file", path, size);
    std::string all;
    if (!file.Read(0, size, &all)) return core::MakeError("{}: cannot read", path);
    return all;
  };
  // A standalone code object: only what its ELF headers describe is read.
  auto described = [&]() -> core::Result<std::string> {
    uint64_t extent = ElfExtent(file, size);
    if (extent > kMaxWholeRead) {
      return core::MakeError("{}: its ELF headers describe {} bytes, too large for a code object", path, extent);
    }
    std::string all;
    if (!file.Read(0, extent, &all)) return core::MakeError("{}: cannot read", path);
    return all;
  };
  // Offload bundles in [begin, begin + length) of the file, one bundle in memory at a time.
  auto stream_bundles = [&](uint64_t begin, uint64_t length, const std::string& origin) {
    RangeReader read = [&file, begin](uint64_t offset, size_t n, std::string* out) {
      return file.Read(begin + offset, n, out);
    };
    auto progress = [&](uint64_t done) {
      if (options.progress) options.progress(begin + done, size);
    };
    StreamHipFatbin(read, length, origin, one, progress);
  };
  std::optional<uint16_t> machine = core::ByteReader(head).U16(18);  // e_machine
  if (Magic(head, 4) ==
          "\x7f"
          "ELF" &&
      machine) {
    if (machine == 190) {  // EM_CUDA: a cubin
      GT_ASSIGN_OR_RETURN(std::string all, described());
      summary.kind = "cubin";
      one(ReadCubin(all, path));
    } else if (machine == 224) {  // EM_AMDGPU: a code object
      GT_ASSIGN_OR_RETURN(std::string all, described());
      summary.kind = "amdgpu-code-object";
      one(ReadAmdgpuCodeObject(all, path));
    } else {
      summary.kind = "host-elf";
      Section nv, hip;
      if (auto found = FindSections(file, path, size, &nv, &hip, &summary.problems, &summary.soname); !found.ok())
        return found.error();
      if (nv.found) {
        if (nv.offset > size || nv.size > size - nv.offset) {
          summary.problems.push_back(
              fmt::format(".nv_fatbin section ({:#x} bytes at {:#x}) runs past the file's end", nv.size, nv.offset));
        } else {
          RangeReader read = [&file](uint64_t offset, size_t n, std::string* out) { return file.Read(offset, n, out); };
          std::vector<FatbinEntry> entries =
              ListFatbinEntries(read, nv.offset, nv.size, path + ":.nv_fatbin", &summary.problems);
          if (options.headers_only) {
            for (const FatbinEntry& e : entries) one(FatbinEntryObject(e, path + ":.nv_fatbin"));
          } else {
            DecodeInOrder(file, entries, path + ":.nv_fatbin", options, threads, size, counted);
          }
        }
      }
      if (hip.found) {
        if (hip.offset > size || hip.size > size - hip.offset) {
          summary.problems.push_back(
              fmt::format(".hip_fatbin section ({:#x} bytes at {:#x}) cannot be read", hip.size, hip.offset));
        } else {
          stream_bundles(hip.offset, hip.size, path + ":.hip_fatbin");
        }
      }
    }
  } else if (head.size() >= 4 && Magic(head, 4) == "\x50\xed\x55\xba") {
    summary.kind = "fatbin";
    RangeReader read = [&file](uint64_t offset, size_t n, std::string* out) { return file.Read(offset, n, out); };
    std::vector<FatbinEntry> entries = ListFatbinEntries(read, 0, size, path, &summary.problems);
    if (options.headers_only) {
      for (const FatbinEntry& e : entries) one(FatbinEntryObject(e, path));
    } else {
      DecodeInOrder(file, entries, path, options, threads, size, counted);
    }
  } else if (Magic(head, 24) == "__CLANG_OFFLOAD_BUNDLE__" || Magic(head, 4) == "CCOB") {
    summary.kind = "offload-bundle";
    stream_bundles(0, size, path);
  } else if (head.find(".version") != std::string::npos || head.rfind("//", 0) == 0) {
    GT_ASSIGN_OR_RETURN(std::string all, whole());
    if (all.find(".entry") == std::string::npos && all.find(".target") == std::string::npos) {
      return core::MakeError("{}: text, but not PTX (no .target, no .entry)", path);
    }
    summary.kind = "ptx";
    one(ReadPtx(all, path));
  } else {
    return core::MakeError("{}: not an ELF file, fatbin, clang offload bundle or PTX text", path);
  }
  summary.code_objects = count;
  return summary;
}

core::Json ToJson(const CodeObject& co) {
  core::Json kernels = core::Json::array();
  const ArchLimits* limits = co.format == "ptx" ? nullptr : FindArchLimits(co.arch);
  for (const Kernel& k : co.kernels) {
    core::Json j = {{"name", k.name.empty() ? Demangle(k.symbol) : k.name}, {"symbol", k.symbol}};
    auto put = [&j](const char* key, const auto& value) {
      if (value) j[key] = *value;
    };
    put("sgpr_count", k.sgpr_count);
    put("vgpr_count", k.vgpr_count);
    put("agpr_count", k.agpr_count);
    put("sgpr_spill_count", k.sgpr_spill_count);
    put("vgpr_spill_count", k.vgpr_spill_count);
    put("lds_bytes", k.lds_bytes);
    put("scratch_bytes", k.scratch_bytes);
    put("kernarg_bytes", k.kernarg_bytes);
    put("max_workgroup_size", k.max_workgroup_size);
    put("wavefront_size", k.wavefront_size);
    put("dynamic_stack", k.dynamic_stack);
    put("registers", k.registers);
    put("shared_bytes", k.shared_bytes);
    put("reserved_shared_bytes", k.reserved_shared_bytes);
    put("local_bytes", k.local_bytes);
    put("max_threads", k.max_threads);
    put("param_bytes", k.param_bytes);
    if (limits) {
      // From the architecture's published limits (kb/tables/gpu-arch-limits.yaml).
      Occupancy o = EstimateOccupancy(k, *limits);
      // The explanation (a line of numbers) is left to `--kernel`: 128k kernels of
      // libtorch_cuda.so would carry 40 MB of it.
      j["occupancy"] = {{"fraction", o.fraction ? core::Json(*o.fraction) : core::Json(nullptr)},
                        {"active", o.active_blocks_or_waves},
                        {"limiter", o.limiter}};
    }
    kernels.push_back(std::move(j));
  }
  core::Json j = {{"vendor", co.vendor}, {"arch", co.arch},     {"target_id", co.target_id},
                  {"format", co.format}, {"origin", co.origin}, {"compressed", co.compressed},
                  {"size", co.size},     {"kernels", kernels}};
  j["error"] = co.error ? core::Json(*co.error) : core::Json(nullptr);
  return j;
}

}  // namespace gputriage::inspect
