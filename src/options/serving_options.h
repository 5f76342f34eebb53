// What `mogserve serve` runs the server with beyond the detector (DetectorOptions): the HTTP
// server and its limits, shutdown, the gRPC port, the video streams. Every field is an entry of
// the option table (options/option_table.h, groups kServer, kStreams and kGrpc), where its flag,
// range, help and default text come from; `bench serve` and `bench video` take the same flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mogserve {

struct ServingOptions {
  std::string host = "127.0.0.1";
  int port = 7860;
  int admin_port = 0;  // 0: probes and metrics on the main port only
  std::string api_key;
  std::string api_key_file;  // the key from a file: not visible in the process list
  std::string cors_origin;
  std::string model_name;  // "" = the engine's
  int64_t max_body_bytes = 64 << 20;
  int64_t max_body_bytes_in_flight = int64_t{1} << 30;
  int max_images = 32;
  int64_t max_header_bytes = 16 << 10;
  int max_connections = 10'000;
  int io_threads = 2;
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double idle_timeout_s = 10;
  std::string access_log = "text";
  double shutdown_delay_s = 0;
  double drain_timeout_s = 30;
  int grpc_port = 0;  // the OIP gRPC API (serve only); 0: off
  // Video streams (/v1/streams): ID=URL each, started once the server is ready.
  std::vector<std::string> streams;
  std::string streams_file;  // a JSON array of streams as POST /v1/streams takes them
  int max_streams = 32;
  double stream_open_timeout_s = 10;
  double stream_io_timeout_s = 5;
  double stream_no_frame_timeout_s = 10;  // the no-frame watchdog
  std::string hwaccel = "auto";           // where streams are decoded: auto, cuda, none
  int max_stream_subscribers = 16;        // SSE, NDJSON and MJPEG watchers at once
};

}  // namespace mogserve
