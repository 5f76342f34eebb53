// Aligned face crops: the similarity transform (rotation, uniform scale, translation; no
// reflection) that best maps a face's five landmarks onto the ArcFace template (insightface's
// utils/face_align.py, arcface_dst for 112x112), estimated by Umeyama's least squares as
// skimage's SimilarityTransform.estimate does, and the picture warped through it with bilinear
// sampling and a black border, as cv2.warpAffine does there. The crop every face-recognition
// model takes (insightface's ArcFace, deepface).
//
// Coordinates are continuous (pixel i spans [i, i + 1)), in the picture and in the crop; the
// template's numbers are pixel indices (OpenCV's convention), so its points are taken at
// index + 0.5.
#pragma once

#include <array>
#include <span>

#include "image/image.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::image {

// dst = [a −b; b a]·src + (tx, ty): a = s·cos θ, b = s·sin θ.
struct Similarity {
  double a = 1, b = 0, tx = 0, ty = 0;
  Point Apply(Point p) const;
  Similarity Inverse() const;
  double scale() const;
};

// The least-squares similarity from `from` to `to` (same count, at least 2 points not all equal).
// kInvalidArgument when the counts differ or `from` has no extent.
StatusOr<Similarity> EstimateSimilarity(std::span<const Point> from, std::span<const Point> to);

// insightface's template for a size x size crop: arcface_dst (112) scaled by size / 112 when
// size is a multiple of 112, else by size / 128 and shifted 8·size/128 right (its 128 rule).
// Sizes that are neither: kInvalidArgument naming the allowed ones.
StatusOr<std::array<Point, kNumLandmarks>> ArcFaceTemplate(int size);

// `picture` warped so that `five` (Landmark order) lands on ArcFaceTemplate(size): a size x size
// crop. Errors: not five points, a bad size, points without extent.
StatusOr<Image> AlignFace(const Image& picture, std::span<const Point> five, int size = 112);

// The warp itself: out(x, y) = picture(inverse of `to_crop` at the pixel centre), bilinear,
// black outside the picture.
Image WarpSimilarity(const Image& picture, const Similarity& to_crop, int width, int height);

}  // namespace mogserve::image
