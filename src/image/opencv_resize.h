// cv::resize(src, dst, Size(), fx, fy, INTER_LINEAR) on 8-bit 3-channel pictures, reproduced bit
// for bit: what ModelScope's MogFace pipeline runs on pictures over 1500 px (specs/mogface.md
// §6b). Written from OpenCV's documented fixed-point scheme (11-bit coefficients, two passes)
// and checked against Debian's python3-opencv 4.6 by tests/image/opencv_resize_test.cpp.
#pragma once

#include "image/image.h"

namespace mogserve::image {

// The output side OpenCV gives for a side n scaled by f: round(n·f), ties to even.
int OpenCvScaledSide(int n, double f);

// cv2.resize(src, None, fx=fx, fy=fy) with the default INTER_LINEAR:
// - source coordinate (d + 0.5) / f − 0.5 in float, its fraction α → weights
//   round(2048·(1 − α)), round(2048·α) (ties to even), edge columns clamped;
// - a horizontal pass to 32-bit sums (value·2048), then the vertical pass with the rounding of
//   OpenCV's SIMD loop: ((s0 >> 4)·β0 >> 16) + ((s1 >> 4)·β1 >> 16), then (+2) >> 2;
// - when both factors are exactly 1/2, OpenCV's 2x2 box average ((a+b+c+d+2) >> 2; partial
//   boxes at odd edges: the rounded mean of the pixels present).
Image ResizeLinearLikeOpenCv(const Image& src, double fx, double fy);

}  // namespace mogserve::image
