// `mogserve anonymize` on a video file: every frame decoded (video::VideoRewriter), its faces found
// by the Detector (all frames, or `detect_fps` of them) and followed by a track::Tracker, covered
// (image/anonymize.h), and the frame re-encoded; the other streams copied. Built only with
// MOGSERVE_WITH_VIDEO.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "image/anonymize.h"
#include "mogserve/detector.h"
#include "track/tracker.h"

namespace mogserve::cli {

struct VideoAnonymizeOptions {
  image::AnonymizeOptions cover;
  double detect_fps = 0;  // detect the first frame of each 1/fps s of video; 0: every frame
  // Follow the faces (Tracker::Update on detected frames, Predict between them) so that a face
  // the detector misses on a few frames, or that moves between detections, stays covered.
  // Without it, only the detected frames' own faces are covered and detect_fps must be 0.
  bool track = true;
  track::TrackerOptions tracker;
  int window = 24;  // frames decoded ahead of the encoder while their faces are found
};

struct VideoAnonymizeReport {
  int64_t frames = 0;    // written
  int64_t detected = 0;  // frames the detector ran on
  int64_t faces = 0;     // faces covered, summed over frames
  double seconds = 0;    // wall clock
  // Wall-clock seconds of each part on the calling thread (detection overlaps them; what the
  // calling thread waited for it is detect_wait_s).
  double decode_s = 0, convert_s = 0, encode_s = 0, cover_s = 0, detect_wait_s = 0;
};

// Anonymizes `input` into `output` (.mp4, .mov or .mkv: H.264; the other streams copied; written
// whole or not at all). `json`: one line per frame, {"path","frame","pts","faces":[...]}, or null.
// `progress(frames_done, frames_expected)` after each frame (expected 0 when unknown).
StatusOr<VideoAnonymizeReport> AnonymizeVideo(
    Detector& detector, const std::string& input, const std::string& output,
    const VideoAnonymizeOptions& options, std::ostream* json,
    const std::function<void(int64_t, int64_t)>& progress);

}  // namespace mogserve::cli
