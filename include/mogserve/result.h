// Plain result types shared by every layer above the model and by the public Detector API
// (mogserve/detector.h): no tensors, no JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mogserve {

// One face. Coordinates are pixels of the original picture after EXIF orientation, x to the
// right and y down, (x1, y1) the top-left and (x2, y2) the bottom-right corner.
struct Point {
  float x = 0, y = 0;
};

// Where the five landmarks of a face are, in Detection::landmarks (insightface's order; left and
// right as seen in the picture, not the subject's).
enum Landmark { kLeftEye = 0, kRightEye, kNose, kLeftMouth, kRightMouth, kNumLandmarks };

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float score = 0;  // 0..1
  // The face's five landmarks (Landmark order): the model's own (BlazeFace) or the 68-point
  // landmark net's (DetectorOptions::landmarks); empty when neither ran.
  std::vector<Point> landmarks{};
  // All 68 points of the landmark net (iBUG 300-W order) when `landmarks` is "68"; else empty.
  std::vector<Point> landmarks68{};
  // Video with tracking (detect-video --track, a stream's `track`): the face's track, the same
  // number on every frame of one person while the tracker follows them, never given to another
  // track of the stream; 0 when no tracker ran.
  int64_t track_id = 0;
  // True when the tracker carried the face on this frame rather than the detector finding it: a
  // frame that was not detected (detect_fps), or one where the detector missed a face it still
  // follows. The box (and landmarks) are then the tracker's prediction.
  bool tracked = false;

  float width() const { return x2 - x1; }
  float height() const { return y2 - y1; }
};

// Intersection over union of two boxes; 0 when either box has no area.
float IoU(const Detection& a, const Detection& b);

struct DetectOptions {
  float score_threshold = 0.5f;  // keep faces with score > threshold
  int max_faces = 100;           // at most this many, highest scores first
  float nms_iou = 0.5f;          // suppress a face overlapping a better one by more than this
  int top_k = 0;                 // candidates entering NMS, best first; 0 = all
  int min_face_size = 0;         // drop faces whose shorter side is below this many pixels of
                                 // the original picture (before max_faces); 0 = keep all
};

// Where the time of one image went, in milliseconds.
struct DetectTiming {
  double decode_ms = 0;       // bytes → pixels (includes EXIF rotation)
  double preprocess_ms = 0;   // resize + letterbox into the model's canvas
  double queue_ms = 0;        // waiting for a batch slot
  double inference_ms = 0;    // the batch's forward pass (shared by the batch)
  double postprocess_ms = 0;  // decoding boxes, NMS, mapping back
  int batch_size = 0;         // how many images shared the forward pass
};

struct DetectResult {
  int width = 0;  // original picture size after EXIF orientation
  int height = 0;
  std::vector<Detection> faces;  // highest score first
  DetectTiming timing;
};

}  // namespace mogserve
