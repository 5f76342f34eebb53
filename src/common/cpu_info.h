// Facts about the CPU this process runs on: its cores, and the instruction sets the kernels
// (LibTorch/oneDNN's and ours) choose by.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mogserve/status.h"

namespace mogserve {

// Number of CPU cores this process may run on (its affinity mask), at least 1.
int AvailableCores();

// oneDNN's ISA levels (ONEDNN_MAX_CPU_ISA's values), lowest first. A cap at a level hides every
// feature above it, as oneDNN's own cap does.
enum class IsaLevel {
  kSse41,
  kAvx2,
  kAvx512Core,      // AVX-512 F/BW/VL/DQ
  kAvx512CoreVnni,  // + AVX512-VNNI
  kAvx512CoreBf16,  // + AVX512-BF16
  kAvx512CoreAmx,   // + AMX tiles (BF16, INT8)
  kAll,
};
// "sse41", "avx2", "avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx", "all".
const char* IsaLevelName(IsaLevel level);
// Any case; also "native" for kAll. InvalidArgument naming the allowed values.
StatusOr<IsaLevel> ParseIsaLevel(std::string_view text);

// The instruction sets the CPU has and the OS enabled (XSAVE state), after the cap.
struct CpuFeatures {
  std::string arch;        // "x86-64", "aarch64", or the compiler's name of another
  std::string model_name;  // the CPU's brand string, e.g. "AMD EPYC 7571"
  // x86-64
  bool sse41 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  // aarch64
  bool neon = false, sve = false, arm_bf16 = false, arm_i8mm = false;
  // The cap applied ("" when none): from MOGSERVE_CPU_ISA, else ONEDNN_MAX_CPU_ISA.
  std::string cap;

  // The features present, in lscpu's spelling ("avx2", "fma", "avx512bw", "amx_bf16", ...).
  std::vector<std::string> Names() const;
  // "avx2 fma f16c" ..., with " (capped at avx2)" when a cap applies.
  std::string Describe() const;
  // The highest oneDNN level the features reach.
  IsaLevel Level() const;

  // LibTorch's oneDNN BF16 convolution runs at all (it needs AVX-512 BW, VL and DQ; without
  // AVX512-BF16 or AMX it emulates the BF16 arithmetic, slower than FP32).
  bool RunsBf16() const { return avx512bw && avx512vl && avx512dq; }
  // BF16 in hardware: AVX512-BF16 dot products or AMX tiles.
  bool NativeBf16() const { return RunsBf16() && (avx512_bf16 || amx_bf16); }
  // What RunsBf16 lacks, in lscpu's spelling ("avx512bw avx512vl avx512dq"); "" when none.
  std::string MissingForBf16() const;
  // INT8 dot products in hardware (VNNI or AMX); without them oneDNN's INT8 still runs (AVX2).
  bool NativeInt8() const { return avx512_vnni || avx_vnni || amx_int8; }
};

// The features of this machine's CPU with `cap` applied (kAll: none).
CpuFeatures DetectCpuFeatures(IsaLevel cap);
// `features` with everything above `cap` cleared.
CpuFeatures CapCpuFeatures(CpuFeatures features, IsaLevel cap);

// This process's CPU, detected once: the cap is MOGSERVE_CPU_ISA's (which emulates an older CPU:
// `MOGSERVE_CPU_ISA=avx2` on an AVX-512 machine behaves as an AVX2-only one), else
// ONEDNN_MAX_CPU_ISA's. An unknown value is ignored with a warning on stderr.
const CpuFeatures& HostCpu();

// Makes the libraries' own dispatch follow MOGSERVE_CPU_ISA: sets ONEDNN_MAX_CPU_ISA and
// ATEN_CPU_CAPABILITY (unless already set) to the cap. Call before the first LibTorch op; does
// nothing without MOGSERVE_CPU_ISA.
void ApplyCpuIsaCapToLibraries();

}  // namespace mogserve
