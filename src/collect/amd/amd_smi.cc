#include "collect/amd/amd_smi.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstring>

#include "core/dynlib.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// amdsmi.h declarations (identical from rocm-6.0.0 to 26.5.0 unless noted). amdsmi_status_t and
// the other C enums are passed as uint32_t: amdsmi_status_t's largest value is 0xFFFFFFFF.
using Status = uint32_t;
using Handle = void*;  // amdsmi_socket_handle, amdsmi_processor_handle
using AmdsmiInit = Status(uint64_t init_flags);
using AmdsmiShutDown = Status();
using AmdsmiStatusCodeToString = Status(Status status, const char** text);
using AmdsmiGetLibVersion = Status(void* version);  // amdsmi_version_t*
using AmdsmiGetSocketHandles = Status(uint32_t* count, Handle* handles);
using AmdsmiGetProcessorHandles = Status(Handle socket, uint32_t* count, Handle* handles);
using AmdsmiGetProcessorType = Status(Handle processor, uint32_t* type);  // processor_type_t*
using AmdsmiGetGpuDeviceBdf = Status(Handle processor, uint64_t* bdf);    // amdsmi_bdf_t (a uint64 union)
using AmdsmiGetTempMetric = Status(Handle processor, uint32_t sensor, uint32_t metric, int64_t* value);
using AmdsmiGetGpuMemory = Status(Handle processor, uint32_t mem_type, uint64_t* bytes);
using AmdsmiGetStruct = Status(Handle processor, void* info);  // power, ecc, driver, vbios, fw

constexpr uint64_t kInitAmdGpus = 1u << 1;    // AMDSMI_INIT_AMD_GPUS
constexpr uint32_t kProcessorTypeAmdGpu = 1;  // AMDSMI_PROCESSOR_TYPE_AMD_GPU (AMD_GPU in 6.0)
constexpr uint32_t kTempCurrent = 0;          // AMDSMI_TEMP_CURRENT
constexpr uint32_t kMemTypeVram = 0;          // AMDSMI_MEM_TYPE_VRAM
// amdsmi_temperature_type_t EDGE = 0, HOTSPOT = JUNCTION = 1, VRAM = 2, named as amdgpu's hwmon
// labels them (edge, junction, mem) so they compare with gpus[].amd.temperatures_c.
constexpr std::array<std::pair<uint32_t, const char*>, 3> kTemperatures = {{{0, "edge"}, {1, "junction"}, {2, "mem"}}};

// More handles than this is a corrupt answer (AMDSMI_MAX_DEVICES is 32; 8 GPUs x 8 partitions).
constexpr uint32_t kMaxHandles = 1024;
constexpr size_t kMaxProblems = 8;

// Every struct goes through a zeroed buffer far larger than any release's struct: the largest
// read here, amdsmi_fw_info_t, is 2568 bytes in 24.7 (79 entries of 32 bytes after 8).
constexpr size_t kStructBuffer = 16 << 10;

// amdsmi_fw_block_t (amdsmi.h; the same values from rocm-6.0.0, FW_ID_*, to 24.7, AMDSMI_FW_ID_*).
constexpr const char* kFirmwareBlocks[] = {
    "",  // 0 is not a firmware id
    "SMU",
    "CP_CE",
    "CP_PFP",
    "CP_ME",
    "CP_MEC_JT1",
    "CP_MEC_JT2",
    "CP_MEC1",
    "CP_MEC2",
    "RLC",
    "SDMA0",
    "SDMA1",
    "SDMA2",
    "SDMA3",
    "SDMA4",
    "SDMA5",
    "SDMA6",
    "SDMA7",
    "VCN",
    "UVD",
    "VCE",
    "ISP",
    "DMCU_ERAM",
    "DMCU_ISR",
    "RLC_RESTORE_LIST_GPM_MEM",
    "RLC_RESTORE_LIST_SRM_MEM",
    "RLC_RESTORE_LIST_CNTL",
    "RLC_V",
    "MMSCH",
    "PSP_SYSDRV",
    "PSP_SOSDRV",
    "PSP_TOC",
    "PSP_KEYDB",
    "DFC",
    "PSP_SPL",
    "DRV_CAP",
    "MC",
    "PSP_BL",
    "CP_PM4",
    "RLC_P",
    "SEC_POLICY_STAGE2",
    "REG_ACCESS_WHITELIST",
    "IMU_DRAM",
    "IMU_IRAM",
    "SDMA_TH0",
    "SDMA_TH1",
    "CP_MES",
    "MES_KIQ",
    "MES_STACK",
    "MES_THREAD1",
    "MES_THREAD1_STACK",
    "RLX6",
    "RLX6_DRAM_BOOT",
    "RS64_ME",
    "RS64_ME_P0_DATA",
    "RS64_ME_P1_DATA",
    "RS64_PFP",
    "RS64_PFP_P0_DATA",
    "RS64_PFP_P1_DATA",
    "RS64_MEC",
    "RS64_MEC_P0_DATA",
    "RS64_MEC_P1_DATA",
    "RS64_MEC_P2_DATA",
    "RS64_MEC_P3_DATA",
    "PPTABLE",
    "PSP_SOC",
    "PSP_DBG",
    "PSP_INTF",
    "RLX6_CORE1",
    "RLX6_DRAM_BOOT_CORE1",
    "RLCV_LX7",
    "RLC_SAVE_RESTORE_LIST",
    "ASD",
    "TA_RAS",
    "TA_XGMI",
    "RLC_SRLG",
    "RLC_SRLS",
    "PM",
    "DMCU",
};
// FW_ID__MAX from rocm-6.0.0 to 24.7: the fw_info_list array's length.
constexpr size_t kFirmwareListLength = 79;

struct StatusEntry {
  uint32_t value;
  const char* name;
  const char* description;
};

// amdsmi_status_t: rocm-6.0.0 (its esmi codes 44..53 were AMDSMI_NO_* then, same values),
// 24.5 (54, 55) and 26.5.0 (20, 21, 39, 56).
constexpr StatusEntry kStatuses[] = {
    {0, "AMDSMI_STATUS_SUCCESS", "Call succeeded"},
    {1, "AMDSMI_STATUS_INVAL", "Invalid parameters"},
    {2, "AMDSMI_STATUS_NOT_SUPPORTED", "Command not supported"},
    {3, "AMDSMI_STATUS_NOT_YET_IMPLEMENTED", "Not implemented yet"},
    {4, "AMDSMI_STATUS_FAIL_LOAD_MODULE", "Fail to load lib"},
    {5, "AMDSMI_STATUS_FAIL_LOAD_SYMBOL", "Fail to load symbol"},
    {6, "AMDSMI_STATUS_DRM_ERROR", "Error when call libdrm"},
    {7, "AMDSMI_STATUS_API_FAILED", "API call failed"},
    {8, "AMDSMI_STATUS_TIMEOUT", "Timeout in API call"},
    {9, "AMDSMI_STATUS_RETRY", "Retry operation"},
    {10, "AMDSMI_STATUS_NO_PERM", "Permission Denied"},
    {11, "AMDSMI_STATUS_INTERRUPT", "An interrupt occurred during execution of function"},
    {12, "AMDSMI_STATUS_IO", "I/O Error"},
    {13, "AMDSMI_STATUS_ADDRESS_FAULT", "Bad address"},
    {14, "AMDSMI_STATUS_FILE_ERROR", "Problem accessing a file"},
    {15, "AMDSMI_STATUS_OUT_OF_RESOURCES", "Not enough memory"},
    {16, "AMDSMI_STATUS_INTERNAL_EXCEPTION", "An internal exception was caught"},
    {17, "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS", "The provided input is out of allowable or safe range"},
    {18, "AMDSMI_STATUS_INIT_ERROR", "An error occurred when initializing internal data structures"},
    {19, "AMDSMI_STATUS_REFCOUNT_OVERFLOW", "An internal reference counter exceeded INT32_MAX"},
    {20, "AMDSMI_STATUS_DIRECTORY_NOT_FOUND", "Error when a directory is not found, maps to ENOTDIR"},
    {21, "AMDSMI_STATUS_IPC_ERROR", "IPC communication error occurred"},
    {30, "AMDSMI_STATUS_BUSY", "Device busy"},
    {31, "AMDSMI_STATUS_NOT_FOUND", "Device Not found"},
    {32, "AMDSMI_STATUS_NOT_INIT", "Device not initialized"},
    {33, "AMDSMI_STATUS_NO_SLOT", "No more free slot"},
    {34, "AMDSMI_STATUS_DRIVER_NOT_LOADED", "Processor driver not loaded"},
    {39, "AMDSMI_STATUS_MORE_DATA", "There is more data than the buffer size the user passed"},
    {40, "AMDSMI_STATUS_NO_DATA", "No data was found for a given input"},
    {41, "AMDSMI_STATUS_INSUFFICIENT_SIZE", "Not enough resources were available for the operation"},
    {42, "AMDSMI_STATUS_UNEXPECTED_SIZE", "An unexpected amount of data was read"},
    {43, "AMDSMI_STATUS_UNEXPECTED_DATA", "The data read or provided to function is not what was expected"},
    {44, "AMDSMI_STATUS_NON_AMD_CPU", "System has different cpu than AMD"},
    {45, "AMDSMI_STATUS_NO_ENERGY_DRV", "Energy driver not found"},
    {46, "AMDSMI_STATUS_NO_MSR_DRV", "MSR driver not found"},
    {47, "AMDSMI_STATUS_NO_HSMP_DRV", "HSMP driver not found"},
    {48, "AMDSMI_STATUS_NO_HSMP_SUP", "HSMP not supported"},
    {49, "AMDSMI_STATUS_NO_HSMP_MSG_SUP", "HSMP message/feature not supported"},
    {50, "AMDSMI_STATUS_HSMP_TIMEOUT", "HSMP message is timedout"},
    {51, "AMDSMI_STATUS_NO_DRV", "No Energy and HSMP driver present"},
    {52, "AMDSMI_STATUS_FILE_NOT_FOUND", "file or directory not found"},
    {53, "AMDSMI_STATUS_ARG_PTR_NULL", "Parsed argument is invalid"},
    {54, "AMDSMI_STATUS_AMDGPU_RESTART_ERR", "AMDGPU restart failed"},
    {55, "AMDSMI_STATUS_SETTING_UNAVAILABLE", "Setting is not available"},
    {56, "AMDSMI_STATUS_CORRUPTED_EEPROM", "EEPROM is corrupted"},
    {0xFFFFFFFE, "AMDSMI_STATUS_MAP_ERROR", "The internal library error did not map to a status code"},
    {0xFFFFFFFF, "AMDSMI_STATUS_UNKNOWN_ERROR", "An unknown error occurred"},
};

struct Api {
  AmdsmiInit* init = nullptr;
  AmdsmiShutDown* shut_down = nullptr;
  AmdsmiGetSocketHandles* get_socket_handles = nullptr;
  AmdsmiGetProcessorHandles* get_processor_handles = nullptr;
  AmdsmiStatusCodeToString* status_code_to_string = nullptr;
  AmdsmiGetLibVersion* get_lib_version = nullptr;
  AmdsmiGetProcessorType* get_processor_type = nullptr;
  AmdsmiGetGpuDeviceBdf* get_gpu_device_bdf = nullptr;
  AmdsmiGetTempMetric* get_temp_metric = nullptr;
  AmdsmiGetGpuMemory* get_gpu_memory_total = nullptr;
  AmdsmiGetGpuMemory* get_gpu_memory_usage = nullptr;
  AmdsmiGetStruct* get_power_info = nullptr;
  AmdsmiGetStruct* get_gpu_total_ecc_count = nullptr;
  AmdsmiGetStruct* get_gpu_driver_info = nullptr;
  AmdsmiGetStruct* get_gpu_vbios_info = nullptr;
  AmdsmiGetStruct* get_fw_info = nullptr;
};

core::Result<Api> Bind(const core::DynamicLibrary& lib) {
  Api api;
  for (auto result : {lib.Bind("amdsmi_init", api.init), lib.Bind("amdsmi_shut_down", api.shut_down),
                      lib.Bind("amdsmi_get_socket_handles", api.get_socket_handles),
                      lib.Bind("amdsmi_get_processor_handles", api.get_processor_handles)}) {
    if (!result.ok()) return result.error();
  }
  lib.BindOptional("amdsmi_status_code_to_string", api.status_code_to_string);
  lib.BindOptional("amdsmi_get_lib_version", api.get_lib_version);
  lib.BindOptional("amdsmi_get_processor_type", api.get_processor_type);
  lib.BindOptional("amdsmi_get_gpu_device_bdf", api.get_gpu_device_bdf);
  lib.BindOptional("amdsmi_get_temp_metric", api.get_temp_metric);
  lib.BindOptional("amdsmi_get_gpu_memory_total", api.get_gpu_memory_total);
  lib.BindOptional("amdsmi_get_gpu_memory_usage", api.get_gpu_memory_usage);
  lib.BindOptional("amdsmi_get_power_info", api.get_power_info);
  lib.BindOptional("amdsmi_get_gpu_total_ecc_count", api.get_gpu_total_ecc_count);
  lib.BindOptional("amdsmi_get_gpu_driver_info", api.get_gpu_driver_info);
  lib.BindOptional("amdsmi_get_gpu_vbios_info", api.get_gpu_vbios_info);
  lib.BindOptional("amdsmi_get_fw_info", api.get_fw_info);
  return api;
}

std::string StatusText(const Api& api, Status status) {
  const char* text = nullptr;
  if (api.status_code_to_string != nullptr && api.status_code_to_string(status, &text) == kAmdSmiStatusSuccess &&
      text != nullptr) {
    std::string_view trimmed = core::Trim(std::string_view(text, ::strnlen(text, 512)));
    if (!trimmed.empty()) return core::SanitizeUtf8(trimmed);
  }
  return AmdSmiStatusName(status);
}

// A zeroed buffer for one struct, read with bounds: fields are copied out at their offsets.
class StructBuffer {
 public:
  StructBuffer() : bytes_(kStructBuffer, std::byte{0}) {}
  void* data() { return bytes_.data(); }
  template <typename T>
  T At(size_t offset) const {
    T value{};
    if (offset + sizeof(T) <= bytes_.size()) std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  // A char[size] field at `offset`: up to its first NUL, trimmed; nullopt when empty.
  std::optional<std::string> Text(size_t offset, size_t size) const {
    if (offset + size > bytes_.size()) return std::nullopt;
    const char* begin = reinterpret_cast<const char*>(bytes_.data() + offset);
    std::string_view text(begin, ::strnlen(begin, size));
    text = core::Trim(text);
    if (text.empty()) return std::nullopt;
    return core::SanitizeUtf8(text);
  }

 private:
  std::vector<std::byte> bytes_;
};

// Collects call failures; NOT_SUPPORTED is an answer (the GPU lacks it), not a problem.
class Problems {
 public:
  Problems(const Api& api, std::vector<std::string>& out) : api_(api), out_(out) {}
  bool Ok(Status status, std::string_view call, std::string_view where) {
    if (status == kAmdSmiStatusSuccess) return true;
    if (status == kAmdSmiStatusNotSupported) return false;
    Add(fmt::format("{}({}): status {} ({})", call, where, status, StatusText(api_, status)));
    return false;
  }
  void Add(std::string problem) {
    if (out_.size() < kMaxProblems) {
      out_.push_back(std::move(problem));
    } else {
      ++dropped_;
    }
  }
  void Finish() {
    if (dropped_ > 0) out_.push_back(fmt::format("{} more failed call{}", dropped_, dropped_ == 1 ? "" : "s"));
  }

 private:
  const Api& api_;
  std::vector<std::string>& out_;
  size_t dropped_ = 0;
};

// gpu_metrics' power fields are uint16 in the firmware table; the library reports an absent one
// as 0xFFFF (it presets them so in amdsmi_get_power_info), newer releases as UINT32_MAX.
std::optional<uint64_t> Watts(uint32_t value) {
  if (value == 0xFFFF || value == 0xFFFFFFFF) return std::nullopt;
  return value;
}

// amdsmi_power_info_t, rocm-6.0.0 to 24.7: uint32 current_socket_power (W), average_socket_power
// (W), gfx_voltage, soc_voltage, mem_voltage (mV), power_limit (hwmon power1_cap as read: uW).
void ReadPower(const Api& api, Handle gpu, AmdSmiGpu& out, Problems& problems, const std::string& where) {
  StructBuffer buffer;
  if (!problems.Ok(api.get_power_info(gpu, buffer.data()), "amdsmi_get_power_info", where)) return;
  out.current_socket_power_w = Watts(buffer.At<uint32_t>(0));
  out.average_socket_power_w = Watts(buffer.At<uint32_t>(4));
  uint32_t limit_uw = buffer.At<uint32_t>(20);
  if (limit_uw != 0 && limit_uw != 0xFFFF && limit_uw != 0xFFFFFFFF) out.power_limit_mw = limit_uw / 1000;
}

// amdsmi_error_count_t: uint64 correctable_count, uncorrectable_count, then (24.5 and later)
// deferred_count; in 23.4 that slot was reserved. The library adds each RAS block's counts to
// the caller's struct, so it must start zeroed (StructBuffer is).
void ReadEcc(const Api& api, Handle gpu, AmdSmiLayout layout, AmdSmiGpu& out, Problems& problems,
             const std::string& where) {
  StructBuffer buffer;
  if (!problems.Ok(api.get_gpu_total_ecc_count(gpu, buffer.data()), "amdsmi_get_gpu_total_ecc_count", where)) return;
  out.ecc_correctable = buffer.At<uint64_t>(0);
  out.ecc_uncorrectable = buffer.At<uint64_t>(8);
  if (layout == AmdSmiLayout::kRocm61) out.ecc_deferred = buffer.At<uint64_t>(16);
}

// amdsmi_driver_info_t: three char[AMDSMI_MAX_STRING_LENGTH = 64]; 23.4 orders them driver_name,
// driver_version, driver_date, 24.5 and later driver_version, driver_date, driver_name.
void ReadDriver(const Api& api, Handle gpu, AmdSmiLayout layout, AmdSmiGpu& out, Problems& problems,
                const std::string& where) {
  StructBuffer buffer;
  if (!problems.Ok(api.get_gpu_driver_info(gpu, buffer.data()), "amdsmi_get_gpu_driver_info", where)) return;
  bool old = layout == AmdSmiLayout::kRocm60;
  out.driver_name = buffer.Text(old ? 0 : 128, 64);
  out.driver_version = buffer.Text(old ? 64 : 0, 64);
  out.driver_date = buffer.Text(old ? 128 : 64, 64);
}

// amdsmi_vbios_info_t, rocm-6.0.0 to 24.7: name[64], build_date[32], part_number[64],
// version[32], uint32 reserved[16].
void ReadVbios(const Api& api, Handle gpu, AmdSmiGpu& out, Problems& problems, const std::string& where) {
  StructBuffer buffer;
  if (!problems.Ok(api.get_gpu_vbios_info(gpu, buffer.data()), "amdsmi_get_gpu_vbios_info", where)) return;
  out.vbios_name = buffer.Text(0, 64);
  out.vbios_build_date = buffer.Text(64, 32);
  out.vbios_part_number = buffer.Text(96, 64);
  out.vbios_version = buffer.Text(160, 32);
}

// amdsmi_fw_info_t, rocm-6.0.0 to 24.7: uint8 num_fw_info, then at byte 8 fw_info_list[79] of
// {amdsmi_fw_block_t fw_id (4 bytes, 4 of padding), uint64 fw_version, uint64 reserved[2]}.
void ReadFirmware(const Api& api, Handle gpu, AmdSmiGpu& out, Problems& problems, const std::string& where) {
  StructBuffer buffer;
  if (!problems.Ok(api.get_fw_info(gpu, buffer.data()), "amdsmi_get_fw_info", where)) return;
  size_t count = std::min<size_t>(buffer.At<uint8_t>(0), kFirmwareListLength);
  for (size_t i = 0; i < count; ++i) {
    size_t entry = 8 + i * 32;
    uint32_t id = buffer.At<uint32_t>(entry);
    uint64_t version = buffer.At<uint64_t>(entry + 8);
    bool named = id > 0 && id < std::size(kFirmwareBlocks);
    out.firmware.push_back({named ? kFirmwareBlocks[id] : fmt::format("id {}", id), version});
  }
}

AmdSmiGpu DescribeGpu(const Api& api, Handle gpu, uint32_t index, AmdSmiLayout layout, Problems& problems) {
  AmdSmiGpu out;
  uint64_t bdf = 0;
  if (api.get_gpu_device_bdf != nullptr && api.get_gpu_device_bdf(gpu, &bdf) == kAmdSmiStatusSuccess) {
    // amdsmi_bdf_t: function_number:3, device_number:5, bus_number:8, domain_number:48.
    out.pci_address =
        fmt::format("{:04x}:{:02x}:{:02x}.{:x}", bdf >> 16, (bdf >> 8) & 0xff, (bdf >> 3) & 0x1f, bdf & 0x7);
  }
  std::string where = out.pci_address.value_or(fmt::format("processor {}", index));
  for (const auto& [sensor, label] : kTemperatures) {
    int64_t value = 0;
    if (api.get_temp_metric == nullptr) break;
    if (problems.Ok(api.get_temp_metric(gpu, sensor, kTempCurrent, &value), "amdsmi_get_temp_metric", where)) {
      out.temperatures_c[label] = value;
    }
  }
  uint64_t bytes = 0;
  if (api.get_gpu_memory_total != nullptr &&
      problems.Ok(api.get_gpu_memory_total(gpu, kMemTypeVram, &bytes), "amdsmi_get_gpu_memory_total", where)) {
    out.vram_total_bytes = bytes;
  }
  if (api.get_gpu_memory_usage != nullptr &&
      problems.Ok(api.get_gpu_memory_usage(gpu, kMemTypeVram, &bytes), "amdsmi_get_gpu_memory_usage", where)) {
    out.vram_used_bytes = bytes;
  }
  if (layout == AmdSmiLayout::kUnverified) return out;  // structs only where the layout is known
  if (api.get_power_info != nullptr) ReadPower(api, gpu, out, problems, where);
  if (api.get_gpu_total_ecc_count != nullptr) ReadEcc(api, gpu, layout, out, problems, where);
  if (api.get_gpu_driver_info != nullptr) ReadDriver(api, gpu, layout, out, problems, where);
  if (api.get_gpu_vbios_info != nullptr) ReadVbios(api, gpu, out, problems, where);
  if (api.get_fw_info != nullptr) ReadFirmware(api, gpu, out, problems, where);
  return out;
}

std::optional<AmdSmiVersion> AskVersion(const Api& api) {
  if (api.get_lib_version == nullptr) return std::nullopt;
  StructBuffer buffer;
  if (api.get_lib_version(buffer.data()) != kAmdSmiStatusSuccess) return std::nullopt;
  uint32_t words[4] = {buffer.At<uint32_t>(0), buffer.At<uint32_t>(4), buffer.At<uint32_t>(8), buffer.At<uint32_t>(12)};
  // `build` points at the library's AMDSMI_LIB_VERSION_STRING literal.
  const char* build = buffer.At<const char*>(16);
  std::optional<std::string_view> text;
  if (build != nullptr) text = std::string_view(build, ::strnlen(build, 64));
  return ParseAmdSmiVersion(text, words);
}

// Handles from a two-call enumeration (count with a null array, then the array).
template <typename Call>
std::vector<Handle> Enumerate(Call call, std::string_view name, Problems& problems, std::string_view where) {
  uint32_t count = 0;
  if (!problems.Ok(call(&count, nullptr), name, where) || count == 0) return {};
  if (count > kMaxHandles) {
    problems.Add(fmt::format("{}({}): {} handles is implausible", name, where, count));
    return {};
  }
  std::vector<Handle> handles(count, nullptr);
  if (!problems.Ok(call(&count, handles.data()), name, where)) return {};
  handles.resize(std::min<size_t>(count, handles.size()));
  return handles;
}

bool ParseUint(std::string_view text, uint32_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string AmdSmiStatusName(uint32_t status) {
  for (const StatusEntry& entry : kStatuses) {
    if (entry.value == status) return fmt::format("{} ({})", entry.name, entry.description);
  }
  return fmt::format("unknown status {}", status);
}

std::optional<AmdSmiVersion> ParseAmdSmiVersion(std::optional<std::string_view> build, const uint32_t words[4]) {
  if (build) {
    // "24.6.2.0" or "26.5.0"; a "+hash" suffix (the CLI's "25.3.0+ede62f2") is not part of it.
    std::string_view text = core::Trim(build->substr(0, build->find('+')));
    std::vector<uint32_t> parts;
    size_t start = 0;
    while (start <= text.size()) {
      size_t dot = text.find('.', start);
      std::string_view part = text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
      uint32_t value = 0;
      if (!ParseUint(part, value)) {
        parts.clear();
        break;
      }
      parts.push_back(value);
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    if (parts.size() >= 3 && parts.size() <= 4) return AmdSmiVersion{std::string(text), parts[0], parts[1], parts[2]};
  }
  if (words[0] == 23 || words[0] == 24) {
    return AmdSmiVersion{fmt::format("{}.{}.{}.{}", words[0], words[1], words[2], words[3]), words[0], words[1],
                         words[2]};
  }
  return std::nullopt;
}

AmdSmiLayout AmdSmiLayoutFor(const AmdSmiVersion& v) {
  if (v.major == 23 && v.minor == 4) return AmdSmiLayout::kRocm60;
  if (v.major == 24 && v.minor >= 5 && v.minor <= 7) return AmdSmiLayout::kRocm61;
  return AmdSmiLayout::kUnverified;
}

std::string_view AmdSmiLayoutName(AmdSmiLayout layout) {
  switch (layout) {
    case AmdSmiLayout::kRocm60:
      return "rocm-6.0";
    case AmdSmiLayout::kRocm61:
      return "rocm-6.1";
    case AmdSmiLayout::kUnverified:
      break;
  }
  return "unverified";
}

std::vector<std::string> DefaultAmdSmiLibraries() {
  return {"libamd_smi.so",    "libamd_smi.so.26", "libamd_smi.so.25",
          "libamd_smi.so.24", "libamd_smi.so.23", "/opt/rocm/lib/libamd_smi.so"};
}

core::Result<AmdSmiReport> ProbeAmdSmi(const std::vector<std::string>& libraries) {
  GT_ASSIGN_OR_RETURN(core::DynamicLibrary lib, core::DynamicLibrary::Open(libraries));
  GT_ASSIGN_OR_RETURN(Api api, Bind(lib));
  AmdSmiReport report;
  report.library_path = lib.path().empty() ? lib.name() : lib.path();
  report.init_status = api.init(kInitAmdGpus);
  report.init_status_text = StatusText(api, report.init_status);
  if (!report.initialized()) return report;

  report.library_version = AskVersion(api);
  if (report.library_version) report.layout = AmdSmiLayoutFor(*report.library_version);
  Problems problems(api, report.problems);
  std::vector<Handle> sockets =
      Enumerate([&](uint32_t* count, Handle* handles) { return api.get_socket_handles(count, handles); },
                "amdsmi_get_socket_handles", problems, "all");
  report.socket_count = static_cast<uint32_t>(sockets.size());
  uint32_t index = 0;
  for (size_t s = 0; s < sockets.size(); ++s) {
    std::vector<Handle> processors = Enumerate(
        [&](uint32_t* count, Handle* handles) { return api.get_processor_handles(sockets[s], count, handles); },
        "amdsmi_get_processor_handles", problems, fmt::format("socket {}", s));
    for (Handle processor : processors) {
      uint32_t type = kProcessorTypeAmdGpu;
      if (api.get_processor_type != nullptr && api.get_processor_type(processor, &type) == kAmdSmiStatusSuccess &&
          type != kProcessorTypeAmdGpu) {
        continue;
      }
      report.gpus.push_back(DescribeGpu(api, processor, index++, report.layout, problems));
    }
  }
  problems.Finish();
  api.shut_down();
  return report;
}

core::Json AmdSmiReportToJson(const AmdSmiReport& report) {
  core::Json out = {{"library_path", report.library_path},
                    {"init_status", report.init_status},
                    {"init_status_text", report.init_status_text}};
  if (report.library_version) out["library_version"] = report.library_version->text;
  if (!report.initialized()) return out;
  out["layouts"] = std::string(AmdSmiLayoutName(report.layout));
  core::SetIf(out, "socket_count", report.socket_count);
  out["device_count"] = report.gpus.size();
  core::Json devices = core::Json::array();
  for (const AmdSmiGpu& gpu : report.gpus) {
    core::Json entry = core::Json::object();
    core::SetIf(entry, "pci_address", gpu.pci_address);
    if (!gpu.temperatures_c.empty()) entry["temperatures_c"] = gpu.temperatures_c;
    core::SetIf(entry, "current_socket_power_w", gpu.current_socket_power_w);
    core::SetIf(entry, "average_socket_power_w", gpu.average_socket_power_w);
    core::SetIf(entry, "power_limit_mw", gpu.power_limit_mw);
    core::SetIf(entry, "vram_total_bytes", gpu.vram_total_bytes);
    core::SetIf(entry, "vram_used_bytes", gpu.vram_used_bytes);
    if (gpu.ecc_correctable) {
      core::Json ecc = {{"correctable", *gpu.ecc_correctable}, {"uncorrectable", gpu.ecc_uncorrectable.value_or(0)}};
      core::SetIf(ecc, "deferred", gpu.ecc_deferred);
      entry["ecc"] = std::move(ecc);
    }
    core::Json driver = core::Json::object();
    core::SetIf(driver, "name", gpu.driver_name);
    core::SetIf(driver, "version", gpu.driver_version);
    core::SetIf(driver, "date", gpu.driver_date);
    if (!driver.empty()) entry["driver"] = std::move(driver);
    core::Json vbios = core::Json::object();
    core::SetIf(vbios, "name", gpu.vbios_name);
    core::SetIf(vbios, "version", gpu.vbios_version);
    core::SetIf(vbios, "part_number", gpu.vbios_part_number);
    core::SetIf(vbios, "build_date", gpu.vbios_build_date);
    if (!vbios.empty()) entry["vbios"] = std::move(vbios);
    if (!gpu.firmware.empty()) {
      core::Json firmware = core::Json::array();
      for (const AmdSmiFirmware& fw : gpu.firmware) firmware.push_back({{"block", fw.block}, {"version", fw.version}});
      entry["firmware"] = std::move(firmware);
    }
    devices.push_back(std::move(entry));
  }
  out["devices"] = std::move(devices);
  return out;
}

}  // namespace gputriage::amd
