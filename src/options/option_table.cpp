#include "options/option_table.h"


#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

#include "common/text.h"

namespace mogserve::opt {
namespace {

constexpr unsigned kStartup = kCli | kLibrary;
constexpr unsigned kEverywhere = kCli | kLibrary | kHttp | kOip;
constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());

using D = DetectorOptions;
using R = RequestOptions;
using P = DetectOptions;
using S = ServingOptions;

// clang-format off
const std::vector<Option>& Options() {
  static const std::vector<Option> table = {
  // The model and how it runs.
  {.name = "model", .flag = "--model", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText, .choices = "ssd, blazeface, mogface, onnx",
   .help = "ssd (the embedded SSD-MobileNetV1), blazeface (MediaPipe BlazeFace, five landmarks), "
           "mogface (needs --weights or --synthetic-weights), or an ONNX detector: FILE.onnx "
           "(or onnx with --weights FILE.onnx), its family from --model-family",
   .library = &D::model},
  {.name = "model_dir", .flag = "--model-dir", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText,
   .default_text = "ssd: $MOGSERVE_MODEL_DIR, else models/ssd_mobilenetv1 (blazeface: "
                   "models/blazeface) in the working directory or next to the build, else the "
                   "installed model",
   .help = "SSD and BlazeFace: folder with the model files (the installed ones: "
           "<prefix>/share/mogserve/models/ssd_mobilenetv1, .../blazeface)",
   .library = &D::model_dir},
  {.name = "weights", .flag = "--weights", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText,
   .help = "MogFace checkpoint: .pt/.pth written by torch.save (ModelScope's pytorch_model.pt, "
           "model_140000.pth) or .safetensors",
   .library = &D::weights},
  {.name = "synthetic_weights", .flag = "--synthetic-weights", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kText, .choices = "r101, e, r50",
   .help = "MogFace with deterministic random weights of this variant: to run or benchmark "
           "without a checkpoint",
   .library = &D::synthetic_weights},
  {.name = "seed", .flag = "--seed", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kInt, .help = "Seed of --synthetic-weights",
   .library = &D::seed},
  {.name = "model_family", .flag = "--model-family", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kText,
   .choices = "auto, scrfd, retinaface, yunet, ultraface, blazeface",
   .help = "An ONNX model's family: auto (from its outputs' names and shapes) or one of them; "
           "decoded from a file so far: scrfd (insightface SCRFD, five landmarks), retinaface "
           "(insightface's RetinaFace files, decoded as its retinaface.py does: as scrfd) and "
           "yunet (OpenCV's YuNet, five landmarks, each picture at its own size)",
   .library = &D::model_family},
  {.name = "precision", .flag = "--precision", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText, .choices = "fp32, bf16, int8, auto (cpu); fp32, tf32, fp16, bf16, auto (cuda)",
   .help = "fp32, bf16, int8 or auto on cpu (bf16 needs AVX-512 and is fast with AVX512-BF16 or "
           "AMX; int8 needs --calibration, the SSD's is built in, and is fast with VNNI; auto "
           "picks int8 where calibrated, else bf16 on CPUs with BF16 in hardware, else fp32); "
           "fp32, tf32, fp16, bf16 or auto (fp16) on cuda",
   .library = &D::precision},
  {.name = "calibration", .flag = "--calibration", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText,
   .default_text = "SSD: calibration/ssd_mobilenetv1_int8.json beside the executable",
   .help = "int8: activation scales written by 'mogserve calibrate' for this model",
   .library = &D::calibration},
  {.name = "landmarks", .flag = "--landmarks", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText, .choices = "auto, 68, model, off",
   .help = "Five landmarks a face: auto (the model's own, else face-api's 68-point landmark net "
           "on each face), 68 (the net for every model, plus all 68 points), model (only the "
           "model's own: BlazeFace) or off",
   .library = &D::landmarks},
  {.name = "landmarks_dir", .flag = "--landmarks-dir", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kText,
   .default_text = "face_landmark_68 beside --model-dir (or $MOGSERVE_MODEL_DIR), else "
                   "models/face_landmark_68 found as --model-dir is",
   .help = "Folder with face-api's 68-point landmark net (face_landmark_68_model-*)",
   .library = &D::landmarks_dir},
  {.name = "int8_float_layers", .flag = "--int8-float-layers", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kText, .choices = "first,heads, first, heads, none",
   .help = "int8: convolutions kept in FP32: first,heads (the input convolution and the output "
           "heads), first, heads or none",
   .library = &D::int8_float_layers},
  {.name = "device", .flag = "--device", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kText, .choices = "cpu, cuda, cuda:N",
   .help = "cpu, or cuda / cuda:N (cuDNN and own kernels on an NVIDIA GPU, in builds with "
           "MOGSERVE_WITH_CUDA; exits 3 naming the cause without a usable GPU)",
   .library = &D::device},
  {.name = "threads", .flag = "--threads", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kInt, .min = 0, .max = 4096,
   .help = "Intra-op threads for the forward pass (0 = all cores)", .library = &D::threads},
  {.name = "cudnn_workspace_mb", .flag = "--cudnn-workspace-mb", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kInt, .min = 0, .max = 1 << 20,
   .help = "CUDA: cap of one instance's cuDNN workspace, MiB", .library = &D::cudnn_workspace_mb},
  {.name = "cudnn_autotune", .flag = "--cudnn-autotune", .group = Group::kModel,
   .surfaces = kStartup, .type = Type::kSwitch,
   .help = "CUDA: time cuDNN's algorithms per convolution shape at start-up",
   .library = &D::cudnn_autotune},
  {.name = "max_graphs", .flag = "--max-graphs", .group = Group::kModel, .surfaces = kStartup,
   .type = Type::kInt, .min = 0, .max = 1 << 20,
   .help = "CUDA: CUDA graphs kept per instance (LRU); 0 = run eagerly", .library = &D::max_graphs},

  // How pictures become canvases, and what survives post-processing.
  {.name = "input_policy", .flag = "--input-policy", .group = Group::kInput, .surfaces = kStartup,
   .type = Type::kText, .choices = "bucket, modelscope",
   .help = "MogFace: bucket (long side scaled to --target-size, batched by shape) or modelscope "
           "(original size, long side > 1500 scaled to 1000, as ModelScope)",
   .library = &D::input_policy},
  {.name = "target_size", .flag = "--target-size", .group = Group::kInput, .surfaces = kStartup,
   .type = Type::kInt, .min = 32, .max = 4096,
   .help = "MogFace bucket policy: the long side, a multiple of 32", .library = &D::target_size},
  {.name = "score_threshold", .flag = "--score-threshold", .group = Group::kInput,
   .surfaces = kEverywhere, .type = Type::kReal, .min = 0, .max = 1,
   .default_text = "the model's: SSD 0.5, MogFace 0.82", .help = "Keep faces scoring above this",
   .library = &D::score_threshold, .request = &R::score_threshold,
   .detect = &P::score_threshold},
  {.name = "nms_iou", .flag = "--nms-iou", .group = Group::kInput, .surfaces = kStartup,
   .type = Type::kReal, .min = 0, .max = 1, .default_text = "the model's: SSD 0.5, MogFace 0.4",
   .help = "Drop a face overlapping a better one by more than this IoU",
   .library = &D::nms_iou, .detect = &P::nms_iou},
  {.name = "top_k", .flag = "--top-k", .group = Group::kInput, .surfaces = kStartup,
   .type = Type::kInt, .min = 1, .max = 1'000'000,
   .default_text = "the model's: SSD all, MogFace 5000", .help = "Candidates entering NMS",
   .library = &D::top_k, .detect = &P::top_k},
  {.name = "max_faces", .flag = "--max-faces", .group = Group::kInput, .surfaces = kEverywhere,
   .type = Type::kInt, .min = 1, .max = 10'000,
   .default_text = "the model's: SSD 100, MogFace 750",
   .help = "At most this many faces per image, highest scores first",
   .library = &D::max_faces, .request = &R::max_faces, .detect = &P::max_faces},
  {.name = "min_face_size", .flag = "--min-face-size", .group = Group::kInput,
   .surfaces = kEverywhere, .type = Type::kInt, .min = 0, .max = 100'000, .unit = "pixels",
   .help = "Drop faces whose shorter box side is below this many pixels of the original "
           "picture, before max_faces (0 = keep all)",
   .library = &D::min_face_size, .request = &R::min_face_size, .detect = &P::min_face_size},
  {.name = "max_pixels", .flag = "--max-pixels", .group = Group::kPipeline, .surfaces = kStartup,
   .type = Type::kInt, .min = 1, .max = double(int64_t{1} << 40),
   .help = "Refuse images with more pixels (checked before decoding; HTTP 413)",
   .library = &D::max_pixels},

  // The batching scheduler.
  {.name = "scheduler", .flag = "--scheduler", .group = Group::kScheduler, .surfaces = kStartup,
   .type = Type::kText, .choices = "naive, dynamic, continuous, adaptive",
   .help = "naive, dynamic, continuous or adaptive", .library = &D::scheduler},
  {.name = "max_batch_size", .flag = "--max-batch-size", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kInt, .min = 1, .max = 1024,
   .help = "Most images per forward pass", .library = &D::max_batch_size},
  // The deployment guide's --timeout: max_delay_ms in seconds (registered first, so that
  // --max-delay-ms, given too, wins).
  {.name = "max_delay_ms", .flag = "--timeout", .group = Group::kScheduler, .surfaces = kCli,
   .type = Type::kReal, .min = 0, .max = 10'000, .flag_scale = 1000,
   .help = "Longest a batch waits to fill, in seconds (the deployment guide's --timeout)",
   .library = &D::max_delay_ms},
  {.name = "max_delay_ms", .flag = "--max-delay-ms", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kReal, .min = 0, .max = 10'000,
   .help = "Longest the oldest request waits for a batch to fill, in milliseconds; overrides "
           "--timeout when given",
   .library = &D::max_delay_ms},
  {.name = "max_batch_pixels", .flag = "--max-batch-pixels", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kInt, .min = 0, .max = kInt64Max,
   .help = "Pixel budget per batch (0: none)", .library = &D::max_batch_pixels},
  {.name = "queue_capacity", .flag = "--queue-capacity", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kInt, .min = 1, .max = double(int64_t{1} << 30),
   .help = "Most queued images; beyond: refused (HTTP 503)", .library = &D::queue_capacity},
  {.name = "queue_capacity_bytes", .flag = "--queue-capacity-bytes", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kInt, .min = 0, .max = kInt64Max,
   .help = "Most bytes held by queued images; beyond: refused (HTTP 503)",
   .library = &D::queue_capacity_bytes},
  {.name = "request_timeout_ms", .flag = "--request-timeout", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kReal, .min = 0, .max = 3'600'000, .flag_scale = 1000,
   .help = "Deadline from submission (the flag in seconds, the field in milliseconds; 0 = none); "
           "a request's timeout_ms may only shorten it",
   .library = &D::request_timeout_ms},
  {.name = "latency_target_ms", .flag = "--latency-target-ms", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kReal, .min = 1, .max = 600'000,
   .help = "Adaptive scheduler's latency target", .library = &D::latency_target_ms},
  {.name = "pad_batches", .flag = "--pad-batches", .group = Group::kScheduler,
   .surfaces = kStartup, .type = Type::kSwitch,
   .help = "Pad batches to the planned sizes (fixed shapes, as CUDA graphs need)",
   .library = &D::pad_batches},

  // Engine instances, threads and the start-up warm-up.
  {.name = "instances", .flag = "--instances", .group = Group::kPipeline, .surfaces = kStartup,
   .type = Type::kInt, .min = 0, .max = 64,
   .help = "Engine instances sharing the weights, one worker thread each (0: 1 on cpu, 2 on "
           "cuda)",
   .library = &D::instances},
  {.name = "decode_threads", .flag = "--workers", .group = Group::kPipeline, .surfaces = kStartup,
   .type = Type::kInt, .min = 0, .max = 256,
   .help = "Decode/pre-process threads (0: half the cores)", .library = &D::decode_threads},
  {.name = "postprocess_threads", .flag = "--post-threads", .group = Group::kPipeline,
   .surfaces = kStartup, .type = Type::kInt, .min = 1, .max = 64,
   .help = "Post-process threads (and the library's callbacks)",
   .library = &D::postprocess_threads},
  {.name = "memory_fraction", .flag = "--memory-fraction", .group = Group::kPipeline,
   .surfaces = kStartup, .type = Type::kReal, .min = 0.01, .max = 1,
   .help = "Share of RAM (CPU) or device memory the buffer plan may use",
   .library = &D::memory_fraction},
  {.name = "batch_knee", .flag = "--batch-knee", .group = Group::kPipeline, .surfaces = kStartup,
   .type = Type::kReal, .min = 0, .max = 1,
   .help = "Cap each bucket's batch at the smallest warm-up batch size reaching this fraction "
           "of the best measured throughput (bigger batches add latency, not throughput); 0 = "
           "memory only",
   .library = &D::batch_knee},
  {.name = "plan_batch_sizes", .flag = "--plan-batch-sizes", .group = Group::kPipeline,
   .surfaces = kStartup, .type = Type::kIntList, .min = 1, .max = 1024,
   .help = "Batch sizes the start-up warm-up measures, increasing (capped by --max-batch-size; "
           "none: no warm-up)",
   .library = &D::plan_batch_sizes},

  // Only per request.
  {.name = "priority", .group = Group::kRequest, .surfaces = kHttp | kOip, .type = Type::kText,
   .choices = "interactive, api, bulk, stream",
   .allowed = "one of interactive, api, bulk, stream", .default_text = "api (a live WebSocket: stream)",
   .help = "Scheduling class: interactive before api before bulk; stream for live video",
   .request = &R::priority},
  {.name = "timeout_ms", .group = Group::kRequest, .surfaces = kHttp | kOip, .type = Type::kInt,
   .min = 1, .max = 3'600'000, .unit = "milliseconds", .default_text = "the server's --request-timeout",
   .help = "This request's deadline; may only shorten the server's", .request = &R::timeout_ms},
  {.name = "format", .group = Group::kRequest, .surfaces = kHttp, .type = Type::kText,
   .choices = "json, modelscope", .allowed = "json (default) or modelscope", .default_text = "json",
   .help = "modelscope: ModelScope's {\"scores\":[],\"boxes\":[]} (HTTP /v1/detect only)",
   .request = &R::format},
  {.name = "crop_size", .group = Group::kRequest, .surfaces = kHttp, .type = Type::kInt,
   .min = 112, .max = 1024, .allowed = "a multiple of 112 or of 128 from 112 to 1024",
   // The sizes image::ArcFaceTemplate has a rule for (insightface's 112 and 128 templates).
   .accepts = [](double v) { return std::fmod(v, 112) == 0 || std::fmod(v, 128) == 0; },
   .default_text = "unset: no crops",
   .help = "Also each face's aligned crop (its five points onto insightface's ArcFace template), "
           "crop_size x crop_size, as a base64 JPEG in the face's \"crop\" (json format)",
   .request = &R::crop_size},
  // The server (serve, bench serve, bench video): its address, key, limits and shutdown.
  {.name = "host", .flag = "--host", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText, .help = "Address to listen on (0.0.0.0: every interface)",
   .serving = &S::host},
  {.name = "port", .flag = "--port", .group = Group::kServer, .surfaces = kCli, .type = Type::kInt,
   .min = 0, .max = 65535, .help = "Port (0: any free port)", .serving = &S::port},
  {.name = "admin_port", .flag = "--admin-port", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kInt, .min = 0, .max = 65535,
   .help = "Also serve /healthz, /readyz, /metrics and /v2/health/* on this port, on their own "
           "event loop, so probes never wait behind detection (0: off)",
   .serving = &S::admin_port},
  {.name = "api_key", .flag = "--api-key", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText,
   .help = "Require 'Authorization: Bearer <key>' on /v1/* (default: none, no key needed)",
   .serving = &S::api_key},
  {.name = "api_key_file", .flag = "--api-key-file", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText,
   .help = "Read the API key from this file (first line), so it is not visible in the process "
           "list (default: none)",
   .serving = &S::api_key_file},
  {.name = "cors_origin", .flag = "--cors-origin", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText, .help = "Allow this browser origin (CORS); off by default",
   .serving = &S::cors_origin},
  {.name = "model_name", .flag = "--model-name", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText,
   .help = "The model's name in the Open Inference Protocol's /v2/models/{name}: 1 to 128 "
           "letters, digits, '.', '_' or '-' (default: ssd-mobilenetv1 or mogface)",
   .serving = &S::model_name},
  {.name = "max_body_bytes", .flag = "--max-body-bytes", .group = Group::kServer,
   .surfaces = kCli, .type = Type::kInt, .min = 1024, .max = 17179869184.0,
   .help = "Largest request body (413 beyond)", .serving = &S::max_body_bytes},
  {.name = "max_body_bytes_in_flight", .flag = "--max-body-bytes-in-flight",
   .group = Group::kServer, .surfaces = kCli, .type = Type::kInt, .min = 1024,
   .max = 1099511627776.0,
   .help = "Request bodies held at once over all connections, until answered (503 beyond)",
   .serving = &S::max_body_bytes_in_flight},
  {.name = "max_images", .flag = "--max-images", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kInt, .min = 1, .max = 10000, .help = "Most images in one request",
   .serving = &S::max_images},
  {.name = "max_header_bytes", .flag = "--max-header-bytes", .group = Group::kServer,
   .surfaces = kCli, .type = Type::kInt, .min = 1024, .max = 1048576,
   .help = "Largest request line + header fields (431; 414 for a long request line)",
   .serving = &S::max_header_bytes},
  {.name = "max_connections", .flag = "--max-connections", .group = Group::kServer,
   .surfaces = kCli, .type = Type::kInt, .min = 1, .max = 1'000'000,
   .help = "Open connections; at the cap a new one displaces the longest idle or slowest-header "
           "one",
   .serving = &S::max_connections},
  {.name = "io_threads", .flag = "--io-threads", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kInt, .min = 1, .max = 64, .help = "HTTP event-loop threads",
   .serving = &S::io_threads},
  {.name = "header_timeout", .flag = "--header-timeout", .group = Group::kServer,
   .surfaces = kCli, .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a client has to send a request's header (408 after)",
   .serving = &S::header_timeout_s},
  {.name = "body_timeout", .flag = "--body-timeout", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a client has to send a request's body once its header is in (408 after)",
   .serving = &S::body_timeout_s},
  {.name = "idle_timeout", .flag = "--idle-timeout", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a keep-alive connection may wait for its next request",
   .serving = &S::idle_timeout_s},
  {.name = "access_log", .flag = "--access-log", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kText, .choices = "text, json, off", .help = "text, json or off",
   .serving = &S::access_log},
  {.name = "shutdown_delay", .flag = "--shutdown-delay", .group = Group::kServer,
   .surfaces = kCli, .type = Type::kReal, .min = 0, .max = 3600,
   .help = "Seconds between SIGTERM and closing the listener: readiness turns false at once, "
           "requests are still served (for a balancer or Kubernetes to stop sending)",
   .serving = &S::shutdown_delay_s},
  {.name = "drain_timeout", .flag = "--drain-timeout", .group = Group::kServer, .surfaces = kCli,
   .type = Type::kReal, .min = 0, .max = 3600,
   .help = "Seconds to finish accepted requests after SIGINT/SIGTERM before cancelling the rest",
   .serving = &S::drain_timeout_s},
  {.name = "grpc_port", .flag = "--grpc-port", .group = Group::kGrpc, .surfaces = kCli,
   .type = Type::kInt, .min = 0, .max = 65535,
   .help = "Serve the Open Inference Protocol over gRPC on this port too (0: off)",
   .serving = &S::grpc_port},
  // Video streams (/v1/streams).
  {.name = "stream", .flag = "--stream", .group = Group::kStreams, .surfaces = kCli,
   .type = Type::kTextList,
   .help = "A video stream ID=URL to detect in (repeatable; more at run time: POST /v1/streams)",
   .serving = &S::streams},
  {.name = "streams_file", .flag = "--streams-file", .group = Group::kStreams, .surfaces = kCli,
   .type = Type::kText,
   .help = "A JSON file of video streams to start with: an array of objects as POST /v1/streams "
           "takes them ({\"id\", \"url\", \"detect_fps\"?})",
   .serving = &S::streams_file},
  {.name = "max_streams", .flag = "--max-streams", .group = Group::kStreams, .surfaces = kCli,
   .type = Type::kInt, .min = 1, .max = 1024, .help = "Most video streams at once",
   .serving = &S::max_streams},
  {.name = "stream_open_timeout", .flag = "--stream-open-timeout", .group = Group::kStreams,
   .surfaces = kCli, .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a stream has to connect and find its first frame",
   .serving = &S::stream_open_timeout_s},
  {.name = "stream_io_timeout", .flag = "--stream-io-timeout", .group = Group::kStreams,
   .surfaces = kCli, .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a stream's read may wait for data", .serving = &S::stream_io_timeout_s},
  {.name = "stream_no_frame_timeout", .flag = "--stream-no-frame-timeout",
   .group = Group::kStreams, .surfaces = kCli, .type = Type::kReal, .min = 0.1, .max = 3600,
   .help = "Seconds a live stream may go without a frame before it reconnects",
   .serving = &S::stream_no_frame_timeout_s},
  {.name = "hwaccel", .flag = "--hwaccel", .group = Group::kStreams, .surfaces = kCli,
   .type = Type::kText, .choices = "auto, cuda, none",
   .help = "Where the streams' video is decoded: auto (NVDEC when FFmpeg finds a GPU and its "
           "driver, else software), cuda (the same, with a warning when it falls back), none "
           "(software)",
   .serving = &S::hwaccel},
  {.name = "max_stream_subscribers", .flag = "--max-stream-subscribers", .group = Group::kStreams,
   .surfaces = kCli, .type = Type::kInt, .min = 1, .max = 1024,
   .help = "Most watchers of the streams' events, results and MJPEG at once (beyond: 503)",
   .serving = &S::max_stream_subscribers},
  };
  return table;
}
// clang-format on

// "0.5", "1e+06": the shortest the stream writes.
std::string Number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string IntegerText(double v) {
  return std::to_string(static_cast<int64_t>(v));
}

std::string RangeText(const Option& o, double scale) {
  if (!HasRange(o)) return "any";
  const auto num = [&](double v) {
    return o.type == Type::kReal ? Number(v / scale) : IntegerText(v / scale);
  };
  return num(o.min) + " to " + num(o.max);
}

Status OutOfRange(const std::string& name, const std::string& value, const std::string& range) {
  return InvalidArgument(name + ": " + value + " is out of range; allowed: " + range);
}

// One value against the option's range; `text` writes it as the error shows it.
Status CheckValue(const Option& o, double v, const OptionNames& names, const std::string& text) {
  if (!HasRange(o) || (v >= o.min && v <= o.max)) return Status::Ok();  // written as "inside": NaN is out of range
  const double scale = names.flags() ? o.flag_scale : 1;
  return OutOfRange(names(o.name), text.empty() ? Number(v / scale) : text, RangeText(o, scale));
}

template <typename T>
std::string ValueText(T v, double scale) {
  if constexpr (std::is_integral_v<T>) {
    if (scale == 1) return std::to_string(v);
  }
  return Number(static_cast<double>(v) / scale);
}

Status CheckField(const Option& o, const DetectorOptions& d, const OptionNames& names) {
  const double scale = names.flags() ? o.flag_scale : 1;
  return std::visit(
      [&](auto field) -> Status {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, std::monostate>) {
          return Status::Ok();
        } else {
          const auto& value = d.*field;
          using V = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bool>) {
            return Status::Ok();
          } else if constexpr (std::is_same_v<V, std::vector<int>>) {
            for (size_t i = 0; i < value.size(); ++i) {
              MOGSERVE_RETURN_IF_ERROR(CheckValue(o, value[i], names, std::to_string(value[i])));
              if (i > 0 && value[i] <= value[i - 1]) {
                return InvalidArgument(names(o.name) + ": " + std::to_string(value[i]) + " after " +
                                       std::to_string(value[i - 1]) +
                                       "; list the sizes in increasing order, each once");
              }
            }
            return Status::Ok();
          } else if constexpr (std::is_arithmetic_v<V>) {
            return CheckValue(o, static_cast<double>(value), names, ValueText(value, scale));
          } else {  // std::optional<number>
            if (!value) return Status::Ok();
            return CheckValue(o, static_cast<double>(*value), names, ValueText(*value, scale));
          }
        }
      },
      o.library);
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  text = Trim(text);
  T value{};
  if constexpr (std::is_floating_point_v<T>) {
    std::string s(text);  // strtod: locale-free enough for "0.5"
    char* end = nullptr;
    value = static_cast<T>(std::strtod(s.c_str(), &end));
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value)) return std::nullopt;
    return value;
  } else {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
  }
}

// What a request error says is allowed: "a number from 0 to 1", "an integer from 1 to 10000".
std::string AllowedText(const Option& o) {
  if (!o.allowed.empty()) return std::string(o.allowed);
  if (!o.choices.empty()) return "one of " + std::string(o.choices);
  const std::string unit = o.unit.empty() ? "" : " number of " + std::string(o.unit);
  return (o.type == Type::kReal ? "a number" : "an integer" + unit) + " from " + RangeText(o, 1);
}

bool IsChoice(const Option& o, std::string_view value) {
  std::string_view rest = o.choices;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    if (rest.substr(0, comma) == value) return true;
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 2);
  }
  return false;
}

std::string TypeText(const Option& o, double scale) {
  switch (o.type) {
    case Type::kInt:
      return "integer, " + RangeText(o, scale);
    case Type::kReal:
      return "number, " + RangeText(o, scale);
    case Type::kSwitch:
      return "switch";
    case Type::kIntList:
      return "integers, " + RangeText(o, scale);
    case Type::kText:
      return o.choices.empty() ? "text" : std::string(o.choices);
    case Type::kTextList:
      return "text, repeatable";
  }
  return "";
}

std::string Code(std::string_view s) {
  return s.empty() ? "" : "`" + std::string(s) + "`";
}

// The Markdown cell text: '|' would end the cell, '<' start an HTML tag.
std::string Cell(const std::string& s) {
  return ReplaceChars(s, {{'|', "\\|"}, {'<', "&lt;"}, {'>', "&gt;"}});
}

}  // namespace

std::span<const Option> Table() {
  return Options();
}

const Option* Find(std::string_view name) {
  const Option* alias = nullptr;
  for (const Option& o : Options()) {
    if (o.name != name) continue;
    if (o.surfaces != kCli) return &o;
    if (alias == nullptr) alias = &o;
  }
  return alias;
}

namespace {

// The value of `field` in `defaults` as the docs and --help write it.
template <typename Object, typename Field>
std::string DefaultOf(const Object& defaults, const Field& field_variant, double scale) {
  return std::visit(
      [&](auto field) -> std::string {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, std::monostate>) {
          return "unset";
        } else {
          const auto& value = defaults.*field;
          using V = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<V, std::string>) {
            return value.empty() ? "none" : value;
          } else if constexpr (std::is_same_v<V, bool>) {
            return value ? "on" : "off";
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            return value.empty() ? "none" : std::to_string(value.size()) + " given";
          } else if constexpr (std::is_same_v<V, std::vector<int>>) {
            std::string out;
            for (int v : value) out += (out.empty() ? "" : ",") + std::to_string(v);
            return out;
          } else if constexpr (std::is_arithmetic_v<V>) {
            return ValueText(value, scale);
          } else {
            return value ? ValueText(*value, scale) : "unset";
          }
        }
      },
      field_variant);
}

}  // namespace

std::string DefaultText(const Option& o, bool for_flag) {
  if (!o.default_text.empty()) return std::string(o.default_text);
  const double scale = for_flag ? o.flag_scale : 1;
  if (!std::holds_alternative<std::monostate>(o.serving)) {
    return DefaultOf(ServingOptions{}, o.serving, scale);
  }
  return DefaultOf(DetectorOptions{}, o.library, scale);
}

OptionNames& OptionNames::Rename(std::string_view option, std::string name) {
  renamed_[std::string(option)] = std::move(name);
  return *this;
}

std::string OptionNames::operator()(std::string_view option) const {
  if (auto it = renamed_.find(option); it != renamed_.end()) return it->second;
  if (!flags_) return std::string(option);
  // The main entry's flag (--max-delay-ms, not the --timeout alias).
  const Option* found = Find(option);
  return found != nullptr && !found->flag.empty() ? std::string(found->flag)
                                                  : std::string(option);
}

Status CheckRanges(const DetectorOptions& d, const OptionNames& names) {
  for (const Option& o : Options()) {
    if (!(o.surfaces & kLibrary)) continue;  // a flag-only alias checks through its field's
    MOGSERVE_RETURN_IF_ERROR(CheckField(o, d, names));
  }
  return Status::Ok();
}

std::string NamesOn(Surface surface) {
  std::string out;
  std::vector<std::string_view> seen;
  for (const Option& o : Options()) {
    if (!(o.surfaces & surface) || std::find(seen.begin(), seen.end(), o.name) != seen.end()) {
      continue;
    }
    seen.push_back(o.name);
    out += (out.empty() ? "" : ", ") + std::string(o.name);
  }
  return out;
}

std::string ApplyRequestOption(std::string_view name, std::string_view text, RequestOptions* r,
                               unsigned surfaces) {
  const Option* o = Find(name);
  if (o == nullptr || !(o->surfaces & surfaces)) {
    return "unknown parameter '" + std::string(name) +
           "'; allowed: " + NamesOn(static_cast<Surface>(surfaces));
  }
  const std::string bad = std::string(name) + ": '" + std::string(text) + "' is not allowed; " +
                          AllowedText(*o);
  return std::visit(
      [&](auto field) -> std::string {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, std::monostate>) {
          return bad;
        } else {
          using V = typename std::decay_t<decltype(r->*field)>::value_type;
          if constexpr (std::is_same_v<V, std::string>) {
            if (!IsChoice(*o, text)) return bad;
            r->*field = std::string(text);
          } else {
            const std::optional<V> v = ParseNumber<V>(text);
            if (!v || !(*v >= o->min && *v <= o->max)) return bad;
            if (o->accepts != nullptr && !o->accepts(static_cast<double>(*v))) return bad;
            r->*field = *v;
          }
          return "";
        }
      },
      o->request);
}

namespace {

template <typename T>
constexpr bool kIsOptionalNumber = false;
template <typename T>
constexpr bool kIsOptionalNumber<std::optional<T>> = std::is_arithmetic_v<T>;

// `value` (a number, or an optional one: unset leaves `d` alone) into the option's per-image
// setting of `d`, when it has one.
template <typename Value>
void Override(const Option& option, const Value& value, DetectOptions* d) {
  std::visit(
      [&](auto detect_field) {
        if constexpr (!std::is_same_v<decltype(detect_field), std::monostate>) {
          using Target = std::decay_t<decltype(d->*detect_field)>;
          if constexpr (std::is_arithmetic_v<Value>) {
            d->*detect_field = static_cast<Target>(value);
          } else if constexpr (kIsOptionalNumber<Value>) {
            if (value) d->*detect_field = static_cast<Target>(*value);
          }
        }
      },
      option.detect);
}

// Every option's per-image setting from `source`'s field (`field` picks LibraryField or
// RequestField).
template <typename Source, typename FieldOf>
DetectOptions Overrides(const Source& source, FieldOf field_of, DetectOptions d) {
  for (const Option& option : Options()) {
    std::visit(
        [&](auto field) {
          if constexpr (!std::is_same_v<decltype(field), std::monostate>) {
            Override(option, source.*field, &d);
          }
        },
        field_of(option));
  }
  return d;
}

}  // namespace

DetectOptions ApplyDetectOverrides(const DetectorOptions& o, DetectOptions d) {
  return Overrides(o, [](const Option& option) { return option.library; }, d);
}

DetectOptions ApplyDetectOverrides(const RequestOptions& r, DetectOptions d) {
  return Overrides(r, [](const Option& option) { return option.request; }, d);
}

std::string OptionsMarkdown(Surface surface) {
  std::ostringstream out;
  if (surface == kCli) {
    out << "| Flag | Type and range | Default | Meaning |\n|---|---|---|---|\n";
  } else {
    out << "| Name | Type and range | Default | Meaning |\n|---|---|---|---|\n";
  }
  for (const Option& o : Options()) {
    if (!(o.surfaces & surface)) continue;
    const bool cli = surface == kCli;
    if (cli && o.flag.empty()) continue;
    const double scale = cli ? o.flag_scale : 1;
    out << "| " << Code(cli ? o.flag : o.name) << " | " << Cell(TypeText(o, scale)) << " | "
        << Cell(DefaultText(o, cli)) << " | " << Cell(std::string(o.help)) << " |\n";
  }
  return out.str();
}

}  // namespace mogserve::opt
