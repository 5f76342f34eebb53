// VideoRewriter: a video file copied to a new file with some of its pixels changed (faces
// blurred by `mogserve anonymize`). The video stream is decoded, handed out frame by frame as
// RGB, and re-encoded with libx264; every other stream (audio, subtitles, data the container
// can hold) is copied packet for packet, never re-encoded.
//
// What the output keeps: every frame, in order, with its original timestamp (the encoder runs
// in the input stream's time base and drops or duplicates nothing), the size, frame rate,
// sample aspect ratio and colour properties (range, primaries, transfer, matrix); the container's
// and each stream's metadata, dispositions and side data (rotation), and the chapters.
// What changes: the video codec (H.264, 8-bit 4:2:0). A source in another pixel format (4:2:2,
// 4:4:4, 10-bit, ...) is converted to yuv420p once, as it is decoded; the range is kept. Streams
// the output container cannot hold (a codec it has no tag for, data streams) are left out with a
// warning in the log. Matroska stores no negative timestamp: when a stream starts before zero
// (AAC priming), its muxer shifts every stream by the same amount; MP4/MOV keep the times exactly
// (edit lists). A broken input's missing or repeated frame timestamp becomes the next possible
// one (the encoder needs increasing timestamps).
//
// FFmpeg's log: Open lowers FFmpeg's global log level from its default (info) to warnings, or
// libx264's banner would go to stderr; a level or callback set elsewhere is not changed.
//
// Pixels that the caller did not change go to the encoder exactly as decoded: Write converts
// back from RGB only the rectangles it is told were changed.
//
// The output is written to a hidden temporary file beside `output` ("." + name + ".tmp.<pid>.<n>")
// and renamed onto `output` by Finish; a failure, or a rewriter destroyed before Finish, removes
// it, so `output` is either the whole new file or untouched. (A process killed outright leaves
// the hidden temporary behind, never a partial `output`.)
//
// Thread-safety: none; one thread (or calls serialised by the caller) drives one rewriter.
// Distinct rewriters are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "image/image.h"
#include "mogserve/status.h"

namespace mogserve::video {

struct RewriteOptions {
  std::string input;   // a video file (any container and codec FFmpeg decodes)
  std::string output;  // ends in .mp4, .mov or .mkv (any case); replaced at Finish if it exists
  int crf = 18;        // libx264 constant rate factor: 18 is visually near-lossless
  std::string preset = "veryfast";  // a libx264 preset name
  int encoder_threads = 0;          // libx264 threads; 0: libx264's choice
  int decoder_threads = 0;          // decoder slice threads; 0: FFmpeg's choice (one per core)
};

// The decoded picture behind a RewriteFrame (FFmpeg's frame, in the encoder's pixel format).
// Opaque to callers; shared, so a RewriteFrame may be copied or moved freely.
struct DecodedPicture;

// One frame of the video stream, in presentation order.
struct RewriteFrame {
  int64_t index = 0;  // 0-based, in output order
  double pts_s = 0;   // presentation time in seconds, from the stream's first frame
  // The frame as RGB at full size (the stream's YUV matrix and range; BT.601 when it names
  // none): for detection and for changing pixels. Write reads only the rectangles it is given.
  image::Image rgb;
  std::shared_ptr<DecodedPicture> picture;
};

// A rectangle of pixels: columns [x1, x2), rows [y1, y2). Parts outside the frame are ignored.
struct PixelRect {
  int x1 = 0;
  int y1 = 0;
  int x2 = 0;
  int y2 = 0;
};

class VideoRewriter {
 public:
  // Opens the input, its video stream (the "best" one, as FFmpeg picks it) and decoder, the
  // libx264 encoder and the output, and writes the output's header into the temporary file.
  // kInvalidArgument: an output extension other than .mp4/.mov/.mkv (the message names them);
  // kNotFound: no input file; kInvalidData: not a media file, or no video stream; kUnavailable:
  // this FFmpeg has no libx264; kInternal: the output cannot be written (the message names it).
  static StatusOr<std::unique_ptr<VideoRewriter>> Open(const RewriteOptions& options);
  // Without Finish (or after a failure): the temporary file is removed, `output` is untouched.
  ~VideoRewriter();
  VideoRewriter(const VideoRewriter&) = delete;
  VideoRewriter& operator=(const VideoRewriter&) = delete;

  // Decodes the next video frame; nullopt after the last one. Packets of the other streams read
  // on the way are passed to the muxer at once (it holds them until the video catches up), so
  // Next may be called any number of times ahead of the matching Writes. Damaged frames are
  // returned too: every frame is written.
  StatusOr<std::optional<RewriteFrame>> Next();

  // Encodes `frame`. Every frame Next returned must be written, once, in the order Next returned
  // them (kFailedPrecondition otherwise). `changed` says where the caller changed frame.rgb: only
  // those rectangles (clipped to the frame, widened outward to even coordinates for the 4:2:0
  // chroma) are converted back from RGB into the decoded picture; every other pixel is encoded
  // exactly as decoded, whatever frame.rgb holds there. frame.rgb must keep its size.
  Status Write(RewriteFrame frame, std::span<const PixelRect> changed);

  // After Next returned nullopt and every frame was written: flushes the encoder, writes the
  // trailer and renames the temporary file onto `output`. kFailedPrecondition before that.
  Status Finish();

  // Frames the container announces for the video stream, 0 when unknown.
  int64_t expected_frames() const;
  // The video stream's average frame rate (frames per second), 0 when unknown.
  double frame_rate() const;
  int width() const;
  int height() const;

  // Seconds spent so far, wall clock, in: demuxing + decoding (and copying the other streams'
  // packets), pixel conversion (to RGB in Next, back from RGB in Write, and any conversion to
  // yuv420p), and encoding + muxing the video (Finish's flush included).
  struct Timings {
    double decode_s = 0;
    double convert_s = 0;
    double encode_s = 0;
  };
  Timings timings() const;

 private:
  struct Impl;
  explicit VideoRewriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mogserve::video
