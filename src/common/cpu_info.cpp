#include "common/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/enum_names.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace mogserve {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

constexpr EnumNames<IsaLevel, IsaLevel::kAll> kIsaLevelNames{
    {"sse41", "avx2", "avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx",
     "all"}};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

#if defined(__x86_64__) || defined(__i386__)

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs Cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool Bit(uint32_t reg, int bit) { return (reg >> bit) & 1u; }

// The state components the OS saves (XCR0): without them the registers are unusable.
uint64_t EnabledXsaveState(const CpuidRegs& leaf1) {
  if (!Bit(leaf1.ecx, 27)) return 0;  // no OSXSAVE
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string BrandString() {
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000004u) return "";
  char brand[49] = {};
  for (uint32_t i = 0; i < 3; ++i) {
    const CpuidRegs r = Cpuid(0x80000002u + i, 0);
    std::memcpy(brand + 16 * i, &r, 16);
  }
  std::string s(brand);
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

CpuFeatures DetectHardware() {
  CpuFeatures f;
  f.arch = "x86-64";
  f.model_name = BrandString();
  const CpuidRegs l1 = Cpuid(1, 0);
  const CpuidRegs l7 = Cpuid(7, 0);
  const CpuidRegs l7s1 = Cpuid(7, 1);
  const uint64_t xcr0 = EnabledXsaveState(l1);
  const bool ymm = (xcr0 & 0x6) == 0x6;              // SSE + AVX state
  const bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;     // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (xcr0 & 0x60000) == 0x60000;    // XTILECFG + XTILEDATA
  f.sse41 = Bit(l1.ecx, 19);
  f.avx = ymm && Bit(l1.ecx, 28);
  f.fma = f.avx && Bit(l1.ecx, 12);
  f.f16c = f.avx && Bit(l1.ecx, 29);
  f.avx2 = f.avx && Bit(l7.ebx, 5);
  f.avx_vnni = f.avx2 && Bit(l7s1.eax, 4);
  f.avx512f = zmm && Bit(l7.ebx, 16);
  f.avx512dq = f.avx512f && Bit(l7.ebx, 17);
  f.avx512bw = f.avx512f && Bit(l7.ebx, 30);
  f.avx512vl = f.avx512f && Bit(l7.ebx, 31);
  f.avx512_vnni = f.avx512f && Bit(l7.ecx, 11);
  f.avx512_bf16 = f.avx512f && Bit(l7s1.eax, 5);
  f.avx512_fp16 = f.avx512f && Bit(l7.edx, 23);
  f.amx_bf16 = tiles && Bit(l7.edx, 22);
  f.amx_tile = tiles && Bit(l7.edx, 24);
  f.amx_int8 = tiles && Bit(l7.edx, 25);
  return f;
}

#elif defined(__aarch64__)

CpuFeatures DetectHardware() {
  CpuFeatures f;
  f.arch = "aarch64";
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  f.neon = (hwcap >> 1) & 1;        // HWCAP_ASIMD
  f.sve = (hwcap >> 22) & 1;        // HWCAP_SVE
  f.arm_i8mm = (hwcap2 >> 13) & 1;  // HWCAP2_I8MM
  f.arm_bf16 = (hwcap2 >> 14) & 1;  // HWCAP2_BF16
  return f;
}

#else

CpuFeatures DetectHardware() {
  CpuFeatures f;
  f.arch = "unknown";
  return f;
}

#endif

// The cap named by the environment, and which variable named it ("" when none).
IsaLevel EnvironmentCap(std::string* source) {
  for (const char* name : {"MOGSERVE_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    StatusOr<IsaLevel> level = ParseIsaLevel(value);
    if (level.ok()) {
      *source = name;
      return *level;
    }
    // oneDNN has levels we do not model (avx, avx2_vnni, avx512_core_fp16, ...): for those the
    // variable is oneDNN's alone.
    if (std::strcmp(name, "MOGSERVE_CPU_ISA") == 0) {
      std::fprintf(stderr, "warning: MOGSERVE_CPU_ISA=%s ignored: %s\n", value,
                   level.status().message().c_str());
    }
  }
  return IsaLevel::kAll;
}

}  // namespace

const char* IsaLevelName(IsaLevel level) { return NameOf(kIsaLevelNames, level, "?"); }

StatusOr<IsaLevel> ParseIsaLevel(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower == "native") return IsaLevel::kAll;
  if (std::optional<IsaLevel> level = FindByName(kIsaLevelNames, lower)) return *level;
  return InvalidArgument("CPU ISA level '" + std::string(text) +
                         "' is not known; allowed: " + NameList(kIsaLevelNames) + ", native");
}

CpuFeatures CapCpuFeatures(CpuFeatures f, IsaLevel cap) {
  if (cap == IsaLevel::kAll) return f;
  f.cap = IsaLevelName(cap);
  if (cap < IsaLevel::kAvx512CoreAmx) f.amx_tile = f.amx_bf16 = f.amx_int8 = false;
  if (cap < IsaLevel::kAvx512CoreBf16) f.avx512_bf16 = f.avx512_fp16 = false;
  // oneDNN's avx2_vnni is its own branch above avx2, in none of the levels modelled here below
  // the VNNI one.
  if (cap < IsaLevel::kAvx512CoreVnni) f.avx512_vnni = f.avx_vnni = false;
  if (cap < IsaLevel::kAvx512Core) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = false;
  if (cap < IsaLevel::kAvx2) f.avx = f.avx2 = f.fma = f.f16c = false;
  return f;
}

CpuFeatures DetectCpuFeatures(IsaLevel cap) { return CapCpuFeatures(DetectHardware(), cap); }

const CpuFeatures& HostCpu() {
  static const CpuFeatures features = [] {
    std::string source;
    const IsaLevel cap = EnvironmentCap(&source);
    CpuFeatures f = DetectCpuFeatures(cap);
    if (!f.cap.empty()) f.cap += " by " + source;
    return f;
  }();
  return features;
}

std::vector<std::string> CpuFeatures::Names() const {
  const std::pair<bool, const char*> all[] = {
      {sse41, "sse4_1"},       {avx, "avx"},
      {avx2, "avx2"},          {fma, "fma"},
      {f16c, "f16c"},          {avx_vnni, "avx_vnni"},
      {avx512f, "avx512f"},    {avx512bw, "avx512bw"},
      {avx512vl, "avx512vl"},  {avx512dq, "avx512dq"},
      {avx512_vnni, "avx512_vnni"}, {avx512_bf16, "avx512_bf16"},
      {avx512_fp16, "avx512_fp16"}, {amx_tile, "amx_tile"},
      {amx_bf16, "amx_bf16"},  {amx_int8, "amx_int8"},
      {neon, "asimd"},         {sve, "sve"},
      {arm_bf16, "bf16"},      {arm_i8mm, "i8mm"}};
  std::vector<std::string> names;
  for (const auto& [present, name] : all) {
    if (present) names.emplace_back(name);
  }
  return names;
}

std::string CpuFeatures::Describe() const {
  std::string text;
  for (const std::string& name : Names()) text += (text.empty() ? "" : " ") + name;
  if (text.empty()) text = "no vector extensions known to mogserve";
  if (!cap.empty()) text += " (capped at " + cap + ")";
  return text;
}

IsaLevel CpuFeatures::Level() const {
  if (amx_tile && amx_bf16 && amx_int8 && avx512_bf16) return IsaLevel::kAvx512CoreAmx;
  if (avx512_bf16 && avx512_vnni && RunsBf16()) return IsaLevel::kAvx512CoreBf16;
  if (avx512_vnni && RunsBf16()) return IsaLevel::kAvx512CoreVnni;
  if (RunsBf16()) return IsaLevel::kAvx512Core;
  if (avx2 && fma) return IsaLevel::kAvx2;
  return IsaLevel::kSse41;
}

std::string CpuFeatures::MissingForBf16() const {
  std::string missing;
  for (const auto& [present, name] :
       {std::pair{avx512bw, "avx512bw"}, {avx512vl, "avx512vl"}, {avx512dq, "avx512dq"}}) {
    if (!present) missing += (missing.empty() ? "" : " ") + std::string(name);
  }
  return missing;
}

void ApplyCpuIsaCapToLibraries() {
  const char* value = std::getenv("MOGSERVE_CPU_ISA");
  if (value == nullptr || *value == '\0') return;
  const StatusOr<IsaLevel> level = ParseIsaLevel(value);
  if (!level.ok() || *level == IsaLevel::kAll) return;
  std::string onednn = IsaLevelName(*level);
  for (char& c : onednn) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  setenv("ONEDNN_MAX_CPU_ISA", onednn.c_str(), 0);
  setenv("DNNL_MAX_CPU_ISA", onednn.c_str(), 0);  // oneDNN before 2.x's rename
  // ATen's own vectorised kernels: "default" (no AVX), "avx2", "avx512".
  setenv("ATEN_CPU_CAPABILITY", *level < IsaLevel::kAvx2         ? "default"
                                : *level < IsaLevel::kAvx512Core ? "avx2"
                                                                 : "avx512",
         0);
}

}  // namespace mogserve
