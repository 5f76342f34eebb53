// Resizing and letterboxing into a model's input canvas.
#pragma once

#include "image/image.h"

namespace mogserve::image {

// Bilinear resampling with an area-proportional (triangle) filter when shrinking, so that large
// reductions do not alias; plain bilinear with half-pixel centres when enlarging.
Image Resize(const Image& src, int dst_width, int dst_height);

// How a picture is scaled to its content size: Resize() above, cv2.resize's INTER_LINEAR by
// the factor 1 / to_source_x on both axes (opencv_resize.h; the modelscope input policy), or
// cv2.resize's INTER_LINEAR to the content size (factors content / source per axis, as
// cv2.resize(img, (w, h)) computes them; insightface's detectors).
enum class ResizeFilter { kAntialiased, kOpenCvLinear, kOpenCvLinearToSize };

// How a fixed square canvas is filled: sides round(side · scale) and Resize(), or as
// insightface's detectors do it (model_zoo/scrfd.py detect()): the long side the canvas side,
// the other int(side · ratio) (truncated), cv2.resize to that size, boxes divided by
// det_scale = content height / picture height on both axes.
enum class FitRule { kRounded, kInsightFace };

// Where an image sits inside a canvas after letterboxing: top-left anchored, scaled by the same
// factor on both axes, the rest of the canvas filled with zeros (padding only right/bottom).
struct Letterbox {
  int canvas_width = 0;
  int canvas_height = 0;
  int content_width = 0;  // size of the resized picture inside the canvas
  int content_height = 0;
  // Multiply canvas pixel coordinates by these to get coordinates in the original picture.
  double to_source_x = 1.0;
  double to_source_y = 1.0;
  ResizeFilter filter = ResizeFilter::kAntialiased;
  // The original picture's size (0 when unknown: content x to_source then stands for it).
  int source_width = 0;
  int source_height = 0;

  // The picture's extent in its own pixels, what boxes are clipped to: its size when known, else
  // the content mapped back.
  double source_extent_x() const {
    return source_width > 0 ? source_width : content_width * to_source_x;
  }
  double source_extent_y() const {
    return source_height > 0 ? source_height : content_height * to_source_y;
  }
};

// The geometry for fitting a source of source_width x source_height into the canvas keeping the
// aspect ratio. content sizes are round(side * scale), at least 1 (kInsightFace: as FitRule says).
Letterbox FitLetterbox(int source_width, int source_height, int canvas_width, int canvas_height,
                       FitRule rule = FitRule::kRounded);

// The geometry for a source scaled to an explicit content size (each side at least 1 and at most
// the canvas side) inside a canvas: for input policies whose scale is not "fit the canvas".
Letterbox PlaceLetterbox(int source_width, int source_height, int content_width, int content_height,
                         int canvas_width, int canvas_height);

// The one letterbox renderer: `src` scaled to box.content_width x box.content_height (with
// box.filter; no copy when it already has that size) and written at the origin of `canvas`, a
// box.canvas_width x box.canvas_height x 3 buffer whose previous contents are all overwritten:
// the padding right of and below the content is zeroed. An empty `src` or content gives an
// all-zero canvas.
void RenderLetterboxInto(const Image& src, const Letterbox& box, uint8_t* canvas);

// Zeroes the padding of `canvas` (right of and below the content), for producers that wrote
// the content themselves (the video reader's swscale).
void ZeroLetterboxPadding(const Letterbox& box, uint8_t* canvas);

// RenderLetterboxInto a new box.canvas_width x box.canvas_height image.
Image RenderLetterbox(const Image& src, const Letterbox& box);

}  // namespace mogserve::image
