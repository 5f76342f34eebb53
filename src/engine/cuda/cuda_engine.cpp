#include "engine/cuda/cuda_engine.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/cuda/conv_descriptors.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/program.h"
#include "engine/model_engine.h"
#include "model/layer_plan.h"

namespace mogserve::engine::cuda {
namespace {

// Device or pinned host memory, freed with the object; counted in the engine's memory stats.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Free(); }

  // Keeps the buffer when it already holds `bytes`; else frees it and allocates anew (contents
  // lost). *grew tells the caller that addresses changed (captured graphs hold them).
  Status Reserve(int64_t bytes, bool pinned, bool* grew) {
    if (bytes <= bytes_) return Status::Ok();
    *grew = true;  // before the free: even a failed allocation has moved the address
    Free();
    void* p = nullptr;
    const int64_t rounded = AlignArenaBytes(bytes);
    MOGSERVE_RETURN_IF_ERROR(
        pinned ? CudaCall(cudaMallocHost(&p, static_cast<size_t>(rounded)), "cudaMallocHost")
               : CudaCall(cudaMalloc(&p, static_cast<size_t>(rounded)), "cudaMalloc"));
    ptr_ = p;
    bytes_ = rounded;
    pinned_ = pinned;
    return Status::Ok();
  }
  void Free() {
    if (ptr_ != nullptr) pinned_ ? cudaFreeHost(ptr_) : cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  uint8_t* bytes_at(int64_t offset) const { return static_cast<uint8_t*>(ptr_) + offset; }
  int64_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  bool pinned_ = false;
};

// The weights on the device, one allocation, shared by every instance (immutable).
class GpuWeights {
 public:
  static StatusOr<std::shared_ptr<const GpuWeights>> Upload(const DeviceWeights& host) {
    auto w = std::shared_ptr<GpuWeights>(new GpuWeights());
    w->type_ = host.type;
    std::vector<std::pair<const void*, int64_t>> pieces;  // host bytes, in offset order
    int64_t total = 0;
    auto add = [&](const void* data, int64_t bytes) {
      const int64_t offset = total;
      pieces.emplace_back(data, bytes);
      total += AlignArenaBytes(bytes);
      return offset;
    };
    for (const DeviceConvWeights& c : host.convs) {
      w->conv_offsets_.emplace_back(add(c.weight.data(), static_cast<int64_t>(c.weight.size())),
                                    add(c.bias.data(), static_cast<int64_t>(c.bias.size())));
    }
    for (const DeviceNormWeights& n : host.norms) {
      const int64_t bytes = static_cast<int64_t>(n.gamma.size() * sizeof(float));
      w->norm_offsets_.emplace_back(add(n.gamma.data(), bytes), add(n.beta.data(), bytes));
    }
    bool grew = false;
    MOGSERVE_RETURN_IF_ERROR(w->buffer_.Reserve(std::max<int64_t>(total, 1), false, &grew));
    int64_t offset = 0;
    for (const auto& [data, bytes] : pieces) {
      MOGSERVE_RETURN_IF_ERROR(CudaCall(
          cudaMemcpy(w->buffer_.bytes_at(offset), data, bytes, cudaMemcpyHostToDevice),
          "cudaMemcpy(weights)"));
      offset += AlignArenaBytes(bytes);
    }
    return std::shared_ptr<const GpuWeights>(std::move(w));
  }

  const void* conv_weight(int def) const { return buffer_.bytes_at(conv_offsets_[def].first); }
  const void* conv_bias(int def) const { return buffer_.bytes_at(conv_offsets_[def].second); }
  const float* gamma(int def) const {
    return reinterpret_cast<const float*>(buffer_.bytes_at(norm_offsets_[def].first));
  }
  const float* beta(int def) const {
    return reinterpret_cast<const float*>(buffer_.bytes_at(norm_offsets_[def].second));
  }
  int64_t bytes() const { return buffer_.size(); }

 private:
  GpuWeights() = default;
  StorageType type_ = StorageType::kF32;
  DeviceBuffer buffer_;
  std::vector<std::pair<int64_t, int64_t>> conv_offsets_, norm_offsets_;
};

// How one convolution runs: cuDNN's fused conv + bias (+ z) + activation call, or the plain
// convolution followed by the bias-activation kernel where the fused call refuses the case.
struct ConvChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int64_t workspace_bytes = 0;
  bool fused = true;
};

// Whether an algorithm's math type may serve `precision`: FP32 stays FP32 (no TF32 tensor
// ops); no precision takes ALLOW_CONVERSION, whose engines may round FP32 inputs down to FP16
// (range and precision TF32 does not lose).
bool MathAllowed(cudnnMathType_t math, Precision precision) {
  if (precision == Precision::kFp32) return math == CUDNN_FMA_MATH;
  return math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

std::string GeometryKey(const ConvGeometry& g, StorageType type, Precision precision) {
  std::string key;
  for (int v : {g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.out_h, g.out_w, g.kernel,
                g.stride, g.dilation, g.groups, g.padding.top, g.padding.left,
                static_cast<int>(g.residual), static_cast<int>(g.act), static_cast<int>(type),
                static_cast<int>(precision)}) {
    key += std::to_string(v);
    key += ',';
  }
  return key;
}

// The algorithm choices of every instance of one engine: fixed per geometry once made, so
// every instance (and every run) computes the same numbers.
class ConvAlgorithmCache {
 public:
  std::optional<ConvChoice> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = choices_.find(key);
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }
  ConvChoice Insert(const std::string& key, const ConvChoice& choice) {
    std::lock_guard<std::mutex> lock(mu_);
    return choices_.emplace(key, choice).first->second;  // the first choice wins
  }
  void Replace(const std::string& key, const ConvChoice& choice) {
    std::lock_guard<std::mutex> lock(mu_);
    choices_[key] = choice;
  }

 private:
  std::mutex mu_;
  std::map<std::string, ConvChoice> choices_;
};

// One (canvas shape, padded batch): its program, the descriptors of its convolutions (by step
// index), their algorithms, and its captured graph.
struct Prepared {
  Program program;
  std::vector<std::unique_ptr<ConvDescriptors>> convs;  // by step; null for other steps
  std::vector<std::string> conv_keys;
  std::vector<ConvChoice> choices;
  std::vector<bool> untuned;  // chosen by the heuristics here: --cudnn-autotune times them
  cudaGraphExec_t graph = nullptr;
  bool graph_failed = false;
  int eager_runs = 0;
  uint64_t last_use = 0;
};

class CudaEngine final : public ModelEngine {
 public:
  CudaEngine(EngineInfo info, std::shared_ptr<const model::FaceModel> model,
             std::shared_ptr<const GpuWeights> weights,
             std::shared_ptr<ConvAlgorithmCache> algorithms, const EngineOptions& options,
             int device)
      : ModelEngine(std::move(info), std::move(model)), weights_(std::move(weights)),
        algorithms_(std::move(algorithms)), options_(options), device_(device),
        type_(StorageTypeOf(options.precision)) {}

  ~CudaEngine() override {
    cudaSetDevice(device_);
    for (auto& [key, p] : prepared_) {
      if (p.graph != nullptr) cudaGraphExecDestroy(p.graph);
    }
    prepared_.clear();
    if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status Init() {
    MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaSetDevice(device_), "cudaSetDevice"));
    MOGSERVE_RETURN_IF_ERROR(
        CudaCall(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    MOGSERVE_RETURN_IF_ERROR(CudnnCall(cudnnCreate(&cudnn_), "cudnnCreate"));
    MOGSERVE_RETURN_IF_ERROR(CudnnCall(cudnnSetStream(cudnn_, stream_), "cudnnSetStream"));
    size_t free_bytes = 0, total = 0;
    MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo"));
    capacity_ = static_cast<int64_t>(total);
    held_bytes_ = PersistentBytes();
    peak_bytes_ = held_bytes_.load();
    return Status::Ok();
  }

  StatusOr<BatchOutputs> Forward(const CanvasBatch& batch) override {
    const int n = static_cast<int>(batch.canvases.size());
    if (n == 0) return InvalidArgument("empty batch");
    if (!batch.geometry.empty() && static_cast<int>(batch.geometry.size()) != n) {
      return InvalidArgument("geometry must have one entry per canvas");
    }
    std::lock_guard<std::mutex> running(run_mu_);
    MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaSetDevice(device_), "cudaSetDevice"));
    const int rows = std::max(n, batch.padded_batch_size);
    MOGSERVE_ASSIGN_OR_RETURN(Prepared * p, PrepareFor(batch.height, batch.width, rows));
    p->last_use = ++uses_;
    Stage(batch, rows);
    in_forward_bytes_ = p->program.arena.total_bytes;
    const int64_t now = held_bytes_ + in_forward_bytes_;
    if (now > peak_bytes_) peak_bytes_ = now;
    const Status run = Execute(*p);
    const Status synced = CudaCall(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    in_forward_bytes_ = 0;
    MOGSERVE_RETURN_IF_ERROR(run);
    MOGSERVE_RETURN_IF_ERROR(synced);
    return Collect(batch, *p, n);
  }

  // Device memory. In use: what this instance holds between passes (the weights are counted
  // by every instance, as the CPU backend's process-wide counters count them), plus the arena
  // while a pass runs: what a batch adds, so the buffer plan's peak − before is the batch's own
  // memory. Capacity: the device's. Read by the metrics thread while the worker runs: atomics.
  MemoryStats Memory() const override {
    MemoryStats m;
    m.in_use_bytes = held_bytes_ + in_forward_bytes_;
    m.peak_in_use_bytes = std::max<int64_t>(peak_bytes_, m.in_use_bytes);
    m.reserved_bytes = held_bytes_ + arena_bytes_;
    m.capacity_bytes = capacity_;
    return m;
  }
  void ResetPeakMemory() override { peak_bytes_ = held_bytes_ + in_forward_bytes_; }

  // Frees the arena and every graph (they hold its addresses); the next pass allocates again.
  // Called from another thread when the pipeline looks idle: a pass that started meanwhile
  // wins, and nothing is released this time.
  int64_t ReleaseCachedMemory() override {
    std::unique_lock<std::mutex> running(run_mu_, std::try_to_lock);
    if (!running.owns_lock()) return 0;
    if (cudaSetDevice(device_) != cudaSuccess) return 0;
    const int64_t released = arena_.size();
    DropGraphs();
    arena_.Free();
    arena_bytes_ = 0;
    return released;
  }

  StatusOr<std::unique_ptr<Engine>> NewInstance() const override {
    auto e = std::make_unique<CudaEngine>(info_, model_, weights_, algorithms_, options_, device_);
    MOGSERVE_RETURN_IF_ERROR(e->Init());
    return std::unique_ptr<Engine>(std::move(e));
  }

 private:
  using Key = std::tuple<int, int, int>;  // height, width, rows

  int64_t PersistentBytes() const {
    return weights_->bytes() + workspace_.size() + norm_workspace_.size() + norm_stats_.size() +
           canvases_.size() + sizes_.size() + conf_.size() + loc_.size() + raw_.size();
  }

  StatusOr<Prepared*> PrepareFor(int height, int width, int rows) {
    const Key key{height, width, rows};
    auto it = prepared_.find(key);
    if (it == prepared_.end()) {
      auto plan = model::LayerPlan::Create(model_->network(), height, width);
      if (!plan.ok()) {
        return InvalidArgument(model_->name() + " canvases: " + plan.status().message());
      }
      MOGSERVE_ASSIGN_OR_RETURN(Program program, BuildProgram(*plan, rows, type_));
      Prepared p;
      p.program = std::move(program);
      MOGSERVE_RETURN_IF_ERROR(Describe(p));
      EvictIfFull();
      it = prepared_.emplace(key, std::move(p)).first;
      if (options_.cuda.cudnn_autotune) {
        MOGSERVE_RETURN_IF_ERROR(ReserveBuffers(it->second));
        MOGSERVE_RETURN_IF_ERROR(Tune(it->second));
      }
    }
    MOGSERVE_RETURN_IF_ERROR(ReserveBuffers(it->second));
    return &it->second;
  }

  // --cudnn-autotune: cuDNN times its algorithms on this program's own buffers (contents do not
  // matter for the timing) with a workspace of the full cap; the fastest whose math keeps the
  // precision replaces the heuristics' pick for every instance. Identity epilogues keep
  // IMPLICIT_PRECOMP_GEMM: another algorithm would cost them the fused call.
  Status Tune(Prepared& p) {
    bool grew = false;
    MOGSERVE_RETURN_IF_ERROR(
        workspace_.Reserve(std::max<int64_t>(options_.cuda.cudnn_workspace_bytes, 1), false, &grew));
    if (grew) DropGraphs();
    for (size_t i = 0; i < p.program.steps.size(); ++i) {
      if (!p.untuned[i] || p.convs[i]->identity_epilogue()) continue;
      const Step& s = p.program.steps[i];
      const ConvDescriptors& d = *p.convs[i];
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      MOGSERVE_RETURN_IF_ERROR(CudnnCall(
          cudnnFindConvolutionForwardAlgorithmEx(
              cudnn_, d.x(), At(s.in), d.w(), weights_->conv_weight(s.def), d.conv(), d.y(),
              At(s.out), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, workspace_.get(),
              static_cast<size_t>(workspace_.size())),
          "cudnnFindConvolutionForwardAlgorithmEx"));
      if (const cudnnConvolutionFwdAlgoPerf_t* best = FirstUsable(perf, returned)) {
        p.choices[i] = {best->algo, best->mathType, static_cast<int64_t>(best->memory),
                        p.choices[i].fused};
        algorithms_->Replace(p.conv_keys[i], p.choices[i]);
        MOGSERVE_RETURN_IF_ERROR(
            CudnnCall(cudnnSetConvolutionMathType(d.conv(), p.choices[i].math),
                      "cudnnSetConvolutionMathType"));
      }
      p.untuned[i] = false;
    }
    return Status::Ok();
  }

  // The modelscope policy runs every picture's exact shape: keep programs and graphs bounded.
  void EvictIfFull() {
    const size_t cap = static_cast<size_t>(std::max(options_.cuda.max_graphs, 1));
    while (prepared_.size() >= cap) {
      auto lru = std::min_element(prepared_.begin(), prepared_.end(), [](auto& a, auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      if (lru->second.graph != nullptr) cudaGraphExecDestroy(lru->second.graph);
      prepared_.erase(lru);
    }
  }

  // Descriptors and algorithm of every convolution step.
  Status Describe(Prepared& p) {
    const size_t steps = p.program.steps.size();
    p.convs.resize(steps);
    p.conv_keys.resize(steps);
    p.choices.resize(steps);
    p.untuned.assign(steps, false);
    for (size_t i = 0; i < steps; ++i) {
      const Step& s = p.program.steps[i];
      if (s.kind != StepKind::kConv) continue;
      MOGSERVE_ASSIGN_OR_RETURN(p.convs[i],
                                ConvDescriptors::Create(s.conv, type_, options_.precision));
      p.conv_keys[i] = GeometryKey(s.conv, type_, options_.precision);
      if (auto known = algorithms_->Find(p.conv_keys[i])) {
        p.choices[i] = *known;
      } else {
        MOGSERVE_ASSIGN_OR_RETURN(const ConvChoice choice, ChooseAlgorithm(*p.convs[i]));
        p.choices[i] = algorithms_->Insert(p.conv_keys[i], choice);
        p.untuned[i] = true;
      }
      MOGSERVE_RETURN_IF_ERROR(
          CudnnCall(cudnnSetConvolutionMathType(p.convs[i]->conv(), p.choices[i].math),
                    "cudnnSetConvolutionMathType"));
    }
    return Status::Ok();
  }

  // The first of cuDNN's ranked results (heuristics or timings) that ran, fits the workspace
  // cap and keeps the precision's math; null when none does.
  const cudnnConvolutionFwdAlgoPerf_t* FirstUsable(const cudnnConvolutionFwdAlgoPerf_t* perf,
                                                   int returned) const {
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          static_cast<int64_t>(perf[i].memory) <= options_.cuda.cudnn_workspace_bytes &&
          MathAllowed(perf[i].mathType, options_.precision)) {
        return &perf[i];
      }
    }
    return nullptr;
  }

  // The heuristics' best algorithm within the workspace cap whose math keeps the precision;
  // an identity epilogue must use IMPLICIT_PRECOMP_GEMM to stay fused (cuDNN's rule).
  StatusOr<ConvChoice> ChooseAlgorithm(const ConvDescriptors& d) {
    const int64_t cap = options_.cuda.cudnn_workspace_bytes;
    MOGSERVE_ASSIGN_OR_RETURN(const cudnnMathType_t math, d.MathType());
    if (d.identity_epilogue()) {
      size_t bytes = 0;
      const cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
          cudnn_, d.x(), d.w(), d.conv(), d.y(), CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
          &bytes);
      if (st == CUDNN_STATUS_SUCCESS && static_cast<int64_t>(bytes) <= cap) {
        return ConvChoice{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, math,
                          static_cast<int64_t>(bytes), true};
      }
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    MOGSERVE_RETURN_IF_ERROR(CudnnCall(
        cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, d.x(), d.w(), d.conv(), d.y(),
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7"));
    if (const cudnnConvolutionFwdAlgoPerf_t* best = FirstUsable(perf, returned)) {
      return ConvChoice{best->algo, best->mathType, static_cast<int64_t>(best->memory),
                        !d.identity_epilogue()};
    }
    return Unsupported("cuDNN offers no convolution algorithm for this shape within the " +
                       std::to_string(cap >> 20) + " MiB workspace (--cudnn-workspace-mb) in " +
                       PrecisionName(options_.precision));
  }

  // Grows the instance's buffers to this program's needs; new addresses void every graph.
  Status ReserveBuffers(const Prepared& p) {
    const Program& prog = p.program;
    int64_t workspace = 0;
    for (const ConvChoice& c : p.choices) workspace = std::max(workspace, c.workspace_bytes);
    const int64_t norm_rows = int64_t{prog.batch} * prog.max_norm_groups;
    bool grew = false;
    const int64_t reserve[][2] = {
        {prog.arena.total_bytes, 0},
        {std::max<int64_t>(workspace, 1), 0},
        {std::max<int64_t>(GroupNormWorkspaceBytes(prog.batch, prog.max_norm_groups), 1), 0},
        {std::max<int64_t>(norm_rows * 2 * static_cast<int64_t>(sizeof(float)), 1), 0},
        {prog.canvas_bytes(), 0},
        {SizesBytes(prog), 0},
        {std::max<int64_t>(prog.conf_floats() * 4, 1), 0},
        {std::max<int64_t>(prog.loc_floats() * 4, 1), 0},
        {std::max<int64_t>(prog.raw_total_floats() * 4, 1), 0},
        {prog.canvas_bytes() + SizesBytes(prog), 1},
        {std::max<int64_t>(OutputFloats(prog) * 4, 1), 1}};
    DeviceBuffer* buffers[] = {&arena_,    &workspace_, &norm_workspace_, &norm_stats_,
                               &canvases_, &sizes_,     &conf_,           &loc_,
                               &raw_,      &staging_in_, &staging_out_};
    Status st;
    for (size_t k = 0; k < std::size(buffers) && st.ok(); ++k) {
      st = buffers[k]->Reserve(reserve[k][0], reserve[k][1] != 0, &grew);
    }
    if (grew) DropGraphs();  // also after a failure: a buffer may be gone
    held_bytes_ = PersistentBytes();
    arena_bytes_ = arena_.size();
    return st;
  }
  // The pinned outputs: conf, then loc, then the raw rows.
  static int64_t OutputFloats(const Program& prog) {
    return prog.conf_floats() + prog.loc_floats() + prog.raw_total_floats();
  }
  static int64_t SizesBytes(const Program& prog) {
    return int64_t{prog.batch} * 2 * static_cast<int64_t>(sizeof(int));
  }

  void DropGraphs() {
    for (auto& [key, p] : prepared_) {
      if (p.graph != nullptr) cudaGraphExecDestroy(p.graph);
      p.graph = nullptr;
      p.graph_failed = false;  // new buffers: worth another try
      p.eager_runs = 0;
    }
  }

  // Canvases (padded rows repeat the last) and picture sizes into the pinned staging, at the
  // fixed addresses the graph copies from.
  void Stage(const CanvasBatch& batch, int rows) {
    const int n = static_cast<int>(batch.canvases.size());
    const size_t canvas_bytes = static_cast<size_t>(batch.width) * batch.height * 3;
    uint8_t* dst = staging_in_.get<uint8_t>();
    for (int i = 0; i < rows; ++i) {
      std::memcpy(dst + i * canvas_bytes, batch.canvases[std::min(i, n - 1)], canvas_bytes);
    }
    uint8_t* sizes = dst + rows * canvas_bytes;  // not int-aligned for every canvas size
    for (int i = 0; i < rows; ++i) {
      const int g = std::min(i, n - 1);
      const bool whole = batch.geometry.empty();
      const int size[2] = {whole ? batch.width : batch.geometry[g].content_width,
                           whole ? batch.height : batch.geometry[g].content_height};
      std::memcpy(sizes + i * sizeof(size), size, sizeof(size));
    }
  }

  // Eager the first time (cuDNN's answer to each call is learnt there), then a graph.
  Status Execute(Prepared& p) {
    if (p.graph != nullptr) return CudaCall(cudaGraphLaunch(p.graph, stream_), "cudaGraphLaunch");
    MOGSERVE_RETURN_IF_ERROR(Enqueue(p, /*capturing=*/false));
    ++p.eager_runs;
    if (options_.cuda.max_graphs > 0 && !p.graph_failed) {
      // The eager pass's errors are this call's (and a failed capture must not swallow them).
      MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
      Capture(p);
    }
    return Status::Ok();
  }

  // Captures the pass after an eager one has run it (its outputs already in the staging). A
  // failure is logged once and the shape stays eager: graphs are a speed-up, never a
  // requirement.
  void Capture(Prepared& p) {
    cudaGraph_t graph = nullptr;
    Status st = CudaCall(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                         "cudaStreamBeginCapture");
    if (st.ok()) {
      st = Enqueue(p, /*capturing=*/true);
      const Status end = CudaCall(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
      if (st.ok()) st = end;
    }
    if (st.ok()) {
      st = CudaCall(cudaGraphInstantiate(&p.graph, graph, 0), "cudaGraphInstantiate");
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (!st.ok()) {
      p.graph = nullptr;
      p.graph_failed = true;
      cudaGetLastError();  // the capture's error is not the next kernel's
      spdlog::warn("CUDA graph capture failed for {}x{} batch {}; running it eagerly: {}",
                   p.program.width, p.program.height, p.program.batch, st.message());
    }
  }

  // The whole pass on the stream: copies in, every step, copies out.
  Status Enqueue(Prepared& p, bool capturing) {
    const Program& prog = p.program;
    MOGSERVE_RETURN_IF_ERROR(CudaCall(
        cudaMemcpyAsync(canvases_.get(), staging_in_.get(), prog.canvas_bytes(),
                        cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(canvases)"));
    MOGSERVE_RETURN_IF_ERROR(CudaCall(
        cudaMemcpyAsync(sizes_.get(), staging_in_.bytes_at(prog.canvas_bytes()), SizesBytes(prog),
                        cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(picture sizes)"));
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      const Status st = RunStep(p, i, capturing);
      if (!st.ok()) {
        const Step& s = prog.steps[i];
        return Status(st.code(), std::string(StepKindName(s.kind)) + " step " + std::to_string(i) +
                                     (s.op >= 0 ? " (" + model_->network()->ops()[s.op].name + ")"
                                                : std::string()) +
                                     ": " + st.message());
      }
    }
    const int64_t conf_bytes = prog.conf_floats() * 4;
    MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(staging_out_.get(), conf_.get(), conf_bytes,
                                                      cudaMemcpyDeviceToHost, stream_),
                                      "cudaMemcpyAsync(conf)"));
    const int64_t loc_bytes = prog.loc_floats() * 4;
    MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(staging_out_.bytes_at(conf_bytes), loc_.get(),
                                                      loc_bytes, cudaMemcpyDeviceToHost, stream_),
                                      "cudaMemcpyAsync(loc)"));
    if (prog.raw_floats == 0) return Status::Ok();
    return CudaCall(cudaMemcpyAsync(staging_out_.bytes_at(conf_bytes + loc_bytes), raw_.get(),
                                    prog.raw_total_floats() * 4, cudaMemcpyDeviceToHost, stream_),
                    "cudaMemcpyAsync(raw)");
  }

  void* At(int64_t offset) const { return arena_.bytes_at(offset); }

  Status RunStep(Prepared& p, size_t index, bool capturing) {
    const Step& s = p.program.steps[index];
    switch (s.kind) {
      case StepKind::kPreprocess:
        return LaunchPreprocess(canvases_.get<uint8_t>(), sizes_.get<int>(), p.program.preprocess,
                                type_, At(s.out), s.out_shape, stream_);
      case StepKind::kPad:
        return LaunchPad(At(s.in), s.in_shape, At(s.out), s.out_shape, s.pad_top, s.pad_left,
                         type_, stream_);
      case StepKind::kConv:
        return Conv(p, index, capturing);
      case StepKind::kClamp:
        return LaunchClamp(At(s.out), s.out_shape.elements(), s.lo, s.hi, type_, stream_);
      case StepKind::kMaxPool:
        return LaunchMaxPool(At(s.in), s.in_shape, At(s.out), s.out_shape, s.kernel, s.stride,
                             s.pad_top, s.pad_left, type_, stream_);
      case StepKind::kGroupNormStats:
        return LaunchGroupNormStats(At(s.in), s.in_shape, s.channels, s.groups, s.eps,
                                    norm_workspace_.get(), norm_workspace_.size(),
                                    norm_stats_.get<float>(), type_, stream_);
      case StepKind::kGroupNormApply:
        return LaunchGroupNormApply(At(s.in), s.in_shape, s.channels, s.groups,
                                    norm_stats_.get<float>(), weights_->gamma(s.def),
                                    weights_->beta(s.def), s.act, At(s.out), type_, stream_);
      case StepKind::kUpsampleAdd:
        return LaunchUpsampleAdd(At(s.in), s.in_shape, At(s.in2), At(s.out), s.out_shape,
                                 s.nearest, type_, stream_);
      case StepKind::kCopyChannels:
        return LaunchCopyChannels(At(s.in), s.in_shape, s.channels, At(s.out), s.out_shape,
                                  s.channel_offset, s.last_input, type_, stream_);
      case StepKind::kOutputLevel:
        return LaunchOutputLevel(At(s.in), s.in_shape, s.score_channel, At(s.in2), s.in2_shape,
                                 s.box_channel, s.anchors_per_cell, s.level_offset,
                                 p.program.anchors, conf_.get<float>(), loc_.get<float>(), type_,
                                 stream_);
      case StepKind::kRawOutput:
        return LaunchRawOutput(At(s.in), s.in_shape, s.channels, s.raw_offset,
                               p.program.raw_floats, raw_.get<float>(), type_, stream_);
    }
    return Internal("unknown step kind");
  }

  // cuDNN's fused call; where it refuses the case at run time (a data type or epilogue its
  // kernels lack), the plain convolution and the bias-activation kernel from then on, for every
  // instance (the choice is shared). The fallback stores the convolution in the storage type
  // before adding the bias: one rounding more than the fused call (FP16: a pre-bias value past
  // 65504 becomes Inf), which the GPU parity bounds then include.
  Status Conv(Prepared& p, size_t index, bool capturing) {
    const Step& s = p.program.steps[index];
    const ConvDescriptors& d = *p.convs[index];
    ConvChoice& c = p.choices[index];
    const float one = 1.0f, zero = 0.0f, alpha2 = s.conv.residual ? 1.0f : 0.0f;
    void* y = At(s.out);
    const void* z = s.conv.residual ? At(s.in2) : y;
    if (c.fused) {
      const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
          cudnn_, &one, d.x(), At(s.in), d.w(), weights_->conv_weight(s.def), d.conv(), c.algo,
          workspace_.get(), static_cast<size_t>(workspace_.size()), &alpha2, d.y(), z, d.bias(),
          weights_->conv_bias(s.def), d.activation(), d.y(), y);
      // cuDNN 9 splits "not supported" into sub-codes (…_SHAPE, _DATA_TYPE, _LAYOUT, …), and
      // BAD_PARAM is how older kernels refuse an epilogue: either means "not this way".
      const bool refused = CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ||
                           CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM;
      if (st == CUDNN_STATUS_SUCCESS || !refused || capturing) {
        return CudnnCall(st, "cudnnConvolutionBiasActivationForward");
      }
      spdlog::info("cuDNN's fused conv-bias-activation refuses {} ({}: {}); using the "
                   "convolution and a bias-activation kernel",
                   model_->network()->ops()[s.op].name, cudnnGetErrorString(st),
                   p.conv_keys[index]);
      c.fused = false;
      algorithms_->Replace(p.conv_keys[index], c);
    }
    MOGSERVE_RETURN_IF_ERROR(CudnnCall(
        cudnnConvolutionForward(cudnn_, &one, d.x(), At(s.in), d.w(), weights_->conv_weight(s.def),
                                d.conv(), c.algo, workspace_.get(),
                                static_cast<size_t>(workspace_.size()), &zero, d.y(), y),
        "cudnnConvolutionForward"));
    const int act = s.conv.act == model::Activation::kRelu ? kActRelu : kActNone;
    return LaunchBiasActivation(y, s.out_shape, weights_->conv_bias(s.def),
                                s.conv.residual ? At(s.in2) : nullptr, act, type_, stream_);
  }

  // The first n rows of the pinned outputs.
  BatchOutputs Collect(const CanvasBatch& batch, const Prepared& p, int n) const {
    BatchOutputs o;
    o.batch = n;
    o.anchors = p.program.anchors;
    o.canvas_width = batch.width;
    o.canvas_height = batch.height;
    const float* conf = staging_out_.get<float>();
    const float* loc = conf + p.program.conf_floats();
    o.scores.assign(conf, conf + int64_t{n} * o.anchors);
    o.box_encodings.assign(loc, loc + int64_t{n} * o.anchors * 4);
    if (p.program.raw_floats > 0) {
      const float* raw = loc + p.program.loc_floats();
      o.raw_floats = p.program.raw_floats;
      o.raw_offsets = p.program.raw_bounds;
      o.raw.assign(raw, raw + int64_t{n} * o.raw_floats);
    }
    return o;
  }

  std::shared_ptr<const GpuWeights> weights_;
  std::shared_ptr<ConvAlgorithmCache> algorithms_;
  EngineOptions options_;
  int device_;
  StorageType type_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  int64_t capacity_ = 0;
  DeviceBuffer arena_, workspace_, norm_workspace_, norm_stats_, canvases_, sizes_, conf_, loc_,
      raw_;
  DeviceBuffer staging_in_, staging_out_;  // pinned
  std::map<Key, Prepared> prepared_;
  uint64_t uses_ = 0;
  std::atomic<int64_t> held_bytes_{0}, arena_bytes_{0}, in_forward_bytes_{0}, peak_bytes_{0};
  std::mutex run_mu_;  // a pass, or ReleaseCachedMemory: never both
};

}  // namespace

StatusOr<std::unique_ptr<Engine>> NewCudaEngine(const EngineOptions& options,
                                                std::shared_ptr<const model::FaceModel> model,
                                                EngineInfo info, int device_index) {
  MOGSERVE_RETURN_IF_ERROR(CudaCall(cudaSetDevice(device_index), "cudaSetDevice"));
  MOGSERVE_ASSIGN_OR_RETURN(const DeviceWeights host,
                            PrepareDeviceWeights(*model->network(), model->weights(),
                                                 options.precision));
  MOGSERVE_ASSIGN_OR_RETURN(std::shared_ptr<const GpuWeights> weights, GpuWeights::Upload(host));
  spdlog::info("CUDA weights: {:.1f} MiB on cuda:{} ({})", weights->bytes() / 1048576.0,
               device_index, StorageTypeName(host.type));
  auto engine = std::make_unique<CudaEngine>(std::move(info), std::move(model), std::move(weights),
                                             std::make_shared<ConvAlgorithmCache>(), options,
                                             device_index);
  MOGSERVE_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace mogserve::engine::cuda
