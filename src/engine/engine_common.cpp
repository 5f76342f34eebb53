// The torch-free half of the engine layer: names and parsing of the options, EngineInfo's text,
// and CreateEngine: check the options, hand the loaded model to the device's backend.
#include <algorithm>

#include "common/cpu_info.h"
#include "common/enum_names.h"
#include "engine/cpu_backend.h"
#include "engine/cuda_backend.h"
#include "engine/engine.h"

namespace mogserve::engine {

constexpr EnumNames<Precision, Precision::kInt8> kPrecisionNames{
    {"fp32", "bf16", "fp16", "tf32", "int8"}};

const char* PrecisionName(Precision precision) {
  return NameOf(kPrecisionNames, precision, "?");
}

StatusOr<Precision> ParsePrecision(std::string_view name) {
  if (std::optional<Precision> p = FindByName(kPrecisionNames, name)) return *p;
  return InvalidArgument("precision '" + std::string(name) +
                         "' is not known; allowed: " + NameList(kPrecisionNames));
}

std::string DeviceSpec::ToString() const {
  return backend == "cpu" ? backend : backend + ":" + std::to_string(index);
}

StatusOr<DeviceSpec> ParseDevice(std::string_view text) {
  const std::string allowed = "; allowed: cpu, cuda, cuda:N (N = 0, 1, ...)";
  if (text == "cpu") return DeviceSpec{"cpu", 0};
  if (text == "cuda") return DeviceSpec{"cuda", 0};
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.substr(0, kCudaPrefix.size()) == kCudaPrefix) {
    const std::string_view digits = text.substr(kCudaPrefix.size());
    // At most 4 digits: no ordinal overflows an int, and no machine has 10 000 GPUs.
    const bool numeric =
        !digits.empty() && digits.size() <= 4 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numeric) {
      return InvalidArgument("device '" + std::string(text) +
                             "': the ordinal after 'cuda:' must be a number, 0 to 9999" + allowed);
    }
    return DeviceSpec{"cuda", std::stoi(std::string(digits))};
  }
  return InvalidArgument("device '" + std::string(text) + "' is not known" + allowed);
}

PrecisionChoice ChooseAutoPrecision(const DeviceSpec& device, bool has_calibration) {
  if (device.backend == "cuda") return {Precision::kFp16, "fp16: tensor cores on the GPU"};
  const CpuFeatures& cpu = HostCpu();
  if (has_calibration) {
    return {Precision::kInt8,
            std::string("int8: calibrated activation scales, ") +
                (cpu.amx_int8      ? "AMX INT8"
                 : cpu.avx512_vnni ? "AVX512-VNNI"
                 : cpu.avx_vnni    ? "AVX-VNNI"
                                   : "no VNNI (oneDNN's AVX2 INT8 kernels)")};
  }
  if (cpu.NativeBf16()) {
    return {Precision::kBf16, std::string("bf16: no INT8 calibration for this model; ") +
                                  (cpu.amx_bf16 ? "AMX BF16" : "AVX512-BF16")};
  }
  return {Precision::kFp32,
          "fp32: no INT8 calibration for this model and no BF16 in hardware (" +
              std::string(cpu.RunsBf16() ? "AVX-512 without AVX512-BF16 emulates it, slower"
                                         : "no AVX-512") +
              ")"};
}

Status CheckCpuRunsPrecision(Precision precision) {
  if (precision == Precision::kFp16 || precision == Precision::kTf32) {
    return InvalidArgument(std::string("precision '") + PrecisionName(precision) +
                           "' is not available on cpu (allowed: fp32, bf16, int8, auto); it "
                           "needs the CUDA backend (--device cuda)");
  }
  const CpuFeatures& cpu = HostCpu();
  if (precision == Precision::kBf16 && !cpu.RunsBf16()) {
    return Unsupported(
        "precision bf16 needs a CPU with AVX-512 (LibTorch's oneDNN BF16 convolution uses "
        "avx512bw, avx512vl and avx512dq); this CPU lacks " +
        cpu.MissingForBf16() + " (it has: " + cpu.Describe() +
        "); use --precision fp32, int8 (calibrated, fast on this CPU too), or auto (picks the "
        "fastest this CPU runs)");
  }
  return Status::Ok();
}

std::string EngineInfo::Describe() const {
  std::string text = model;
  if (!variant.empty()) text += " " + variant;
  text += " on " + device + ", " + precision + ", ";
  // The CUDA backend is always NHWC, and its host threads are the pipeline's, not the engine's.
  if (device != "cpu") return text + "NHWC";
  return text + (channels_last ? "channels-last" : "NCHW") + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

std::string EngineInfo::DescribeCpu() const {
  std::string text = (cpu_model.empty() ? std::string("CPU") : cpu_model) + " (" + cpu_isa + "):";
  for (const std::string& f : cpu_features) text += " " + f;
  if (!cpu_cap.empty()) text += " (capped at " + cpu_cap + ")";
  return text;
}

namespace {

// What the CPU backend runs, checked before the (slow) model load.
Status CheckCpuOptions(const EngineOptions& options, const DeviceSpec&) {
  if (options.cpu.threads < 0) return InvalidArgument("threads must be >= 0");
  MOGSERVE_RETURN_IF_ERROR(CheckCpuRunsPrecision(options.precision));
  if (options.precision == Precision::kInt8 && options.calibration.empty()) {
    return InvalidArgument(
        "precision int8 needs activation scales: pass --calibration FILE, a file written by "
        "'mogserve calibrate --model ... --images DIR -o FILE' for this model (the build writes "
        "the default SSD's as calibration/ssd_mobilenetv1_int8.json beside mogserve)");
  }
  return Status::Ok();
}

// The CUDA backend's options, then the device itself (driver, device, cuDNN), before the model
// load: a machine without a GPU learns that in milliseconds.
Status CheckCudaOptions(const EngineOptions& options, const DeviceSpec& device) {
  const CudaBackendOptions& c = options.cuda;
  if (options.precision == Precision::kInt8) {
    return InvalidArgument(
        "precision 'int8' is not available on cuda (allowed: fp32, tf32, fp16, bf16); it runs on "
        "--device cpu");
  }
  if (c.cudnn_workspace_bytes < 0) {
    return InvalidArgument("cudnn_workspace_bytes must be >= 0, not " +
                           std::to_string(c.cudnn_workspace_bytes));
  }
  if (c.max_graphs < 0) {
    return InvalidArgument("max_graphs must be >= 0 (0 = no CUDA graphs), not " +
                           std::to_string(c.max_graphs));
  }
  return ProbeCudaDevice(device.index).status();
}

// The backend table, keyed by DeviceSpec::backend.
struct Backend {
  const char* device;
  bool (*built)();
  const char* not_built;  // why a build lacks it, and how to get it
  Status (*check)(const EngineOptions&, const DeviceSpec&);
  StatusOr<std::unique_ptr<Engine>> (*create)(const EngineOptions&,
                                              std::shared_ptr<const model::FaceModel>, EngineInfo);
};

constexpr Backend kBackends[] = {
    {"cpu", &CpuBackendBuilt,
     "this build has no CPU engine: mogserve was built with MOGSERVE_WITH_TORCH=OFF (configure "
     "with -DMOGSERVE_WITH_TORCH=ON, which needs LibTorch, to run models on the CPU)",
     &CheckCpuOptions, &CreateCpuEngine},
    {"cuda", &CudaBackendBuilt,
     "this build has no CUDA backend: mogserve was built with MOGSERVE_WITH_CUDA=OFF (or AUTO "
     "without nvcc and cudnn.h); configure with -DMOGSERVE_WITH_CUDA=ON where the CUDA toolkit "
     "and cuDNN 9 are installed",
     &CheckCudaOptions, &CreateCudaEngine},
};

}  // namespace

std::vector<BackendEntry> Backends() {
  std::vector<BackendEntry> out;
  for (const Backend& b : kBackends) out.push_back({b.device, b.built()});
  return out;
}

int DefaultInstances(std::string_view device) {
  const StatusOr<DeviceSpec> d = ParseDevice(device);
  return d.ok() && d->backend == "cuda" ? 2 : 1;
}

namespace {

// The backend table's entry for options.device, checked as CheckEngineOptions says.
StatusOr<const Backend*> CheckedBackend(const EngineOptions& options) {
  MOGSERVE_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDevice(options.device));
  const Backend* backend =
      std::find_if(std::begin(kBackends), std::end(kBackends),
                   [&](const Backend& b) { return device.backend == b.device; });
  if (backend == std::end(kBackends)) return Internal("no backend for " + device.backend);
  if (!backend->built()) return Unsupported(backend->not_built);
  MOGSERVE_RETURN_IF_ERROR(backend->check(options, device));
  return backend;
}

}  // namespace

Status CheckEngineOptions(const EngineOptions& options) {
  return CheckedBackend(options).status();
}

StatusOr<std::unique_ptr<Engine>> CreateEngine(const model::LoadedModel& loaded,
                                               const EngineOptions& options) {
  if (loaded.model == nullptr) return InvalidArgument("CreateEngine needs a loaded model");
  MOGSERVE_ASSIGN_OR_RETURN(const Backend* backend, CheckedBackend(options));
  const DeviceSpec device = ParseDevice(options.device).value();
  const std::shared_ptr<const model::FaceModel>& model = loaded.model;
  EngineInfo info;
  info.device = device.ToString();
  info.precision = PrecisionName(options.precision);
  info.precision_choice = options.precision_choice;
  const CpuFeatures& cpu = HostCpu();
  info.cpu_model = cpu.model_name;
  info.cpu_features = cpu.Names();
  info.cpu_isa = IsaLevelName(cpu.Level());
  info.cpu_cap = cpu.cap;
  info.weights = loaded.source;
  info.model = model->name();
  info.spec = loaded.spec;
  info.variant = model->variant();
  info.fixed_side = model->fixed_side();
  info.fixed_fit = model->fixed_fit();
  info.multiple = model->multiple();
  info.native_multiple = model->native_multiple();
  return backend->create(options, std::move(model), std::move(info));
}

}  // namespace mogserve::engine
