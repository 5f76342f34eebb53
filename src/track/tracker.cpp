#include "track/tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "common/detection.h"
#include "track/assignment.h"

namespace mogserve::track {

namespace {

// A box the filter and IoU can work with; others are answered but never tracked.
bool Valid(const Detection& d) {
  return std::isfinite(d.x1) && std::isfinite(d.y1) && std::isfinite(d.x2) && std::isfinite(d.y2) &&
         d.width() > 0 && d.height() > 0;
}

// Optimal matching of `faces[candidates]` to the predicted boxes `boxes[tracks]` by IoU, pairs
// under `min_iou` (or without any overlap, so that min_iou = 0 does not pair strangers) left out.
// Returns (track index, face index) pairs, indices into the full vectors.
std::vector<std::pair<int, int>> MatchByIoU(const std::vector<Detection>& boxes,
                                            const std::vector<int>& tracks,
                                            const std::vector<Detection>& faces,
                                            const std::vector<int>& candidates, float min_iou) {
  if (tracks.empty() || candidates.empty()) return {};
  const int rows = static_cast<int>(tracks.size());
  const int cols = static_cast<int>(candidates.size());
  std::vector<float> cost(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const float iou = IoU(boxes[tracks[r]], faces[candidates[c]]);
      cost[r * cols + c] = iou > 0 ? 1.0f - iou : std::numeric_limits<float>::infinity();
    }
  }
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [r, c] : Assign(cost, rows, cols, 1.0f - min_iou)) {
    pairs.emplace_back(tracks[r], candidates[c]);
  }
  return pairs;
}

// Each point at the same place relative to `to` as it was relative to `from`.
std::vector<Point> MovePoints(const std::vector<Point>& points, const Detection& from,
                              const Detection& to) {
  const float sx = from.width() > 0 ? to.width() / from.width() : 1.0f;
  const float sy = from.height() > 0 ? to.height() / from.height() : 1.0f;
  std::vector<Point> moved;
  moved.reserve(points.size());
  for (const Point& p : points) {
    moved.push_back({to.x1 + (p.x - from.x1) * sx, to.y1 + (p.y - from.y1) * sy});
  }
  return moved;
}

void SortByScore(std::vector<Detection>& faces) {
  std::stable_sort(faces.begin(), faces.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
}

}  // namespace

Tracker::Tracker(TrackerOptions options) : options_(options) {}

bool Tracker::Followed(const Track& track) const {
  return track.confirmed && track.misses <= std::max(options_.max_coast, 0);
}

Detection Tracker::Carried(const Track& track, const Detection& box) {
  Detection d;
  d.x1 = box.x1;
  d.y1 = box.y1;
  d.x2 = box.x2;
  d.y2 = box.y2;
  d.score = track.last.score;
  d.landmarks = MovePoints(track.last.landmarks, track.last, box);
  d.landmarks68 = MovePoints(track.last.landmarks68, track.last, box);
  d.track_id = track.id;
  d.tracked = true;
  return d;
}

void Tracker::AdvanceTo(double t_s) {
  if (!std::isfinite(t_s) || (started_ && !(t_s > last_t_s_))) return;  // earlier: as equal
  const double dt_s = started_ ? t_s - last_t_s_ : 0.0;
  last_t_s_ = t_s;
  started_ = true;
  for (Track& track : tracks_) track.filter.Predict(dt_s);
}

std::vector<int> Tracker::Associate(const std::vector<Detection>& faces) const {
  std::vector<Detection> boxes;
  boxes.reserve(tracks_.size());
  for (const Track& track : tracks_) boxes.push_back(track.filter.Box());
  std::vector<int> high, low;
  for (int f = 0; f < static_cast<int>(faces.size()); ++f) {
    if (!Valid(faces[f])) continue;
    if (faces[f].score >= options_.high_score) {
      high.push_back(f);
    } else if (faces[f].score >= options_.low_score) {
      low.push_back(f);
    }
  }
  std::vector<int> face_track(faces.size(), -1);
  std::vector<char> matched(tracks_.size(), 0);
  const auto tracks_where = [&](auto&& keep) {
    std::vector<int> out;
    for (int t = 0; t < static_cast<int>(tracks_.size()); ++t) {
      if (!matched[t] && keep(tracks_[t])) out.push_back(t);
    }
    return out;
  };
  const auto unmatched = [&](const std::vector<int>& candidates) {
    std::vector<int> out;
    for (int f : candidates) {
      if (face_track[f] < 0) out.push_back(f);
    }
    return out;
  };
  const auto match = [&](const std::vector<int>& tracks, const std::vector<int>& candidates,
                         float min_iou) {
    for (const auto& [t, f] : MatchByIoU(boxes, tracks, faces, candidates, min_iou)) {
      face_track[f] = t;
      matched[t] = 1;
    }
  };
  match(tracks_where([](const Track& t) { return t.confirmed; }), high, options_.match_iou);
  // A face the detector is unsure of only continues a track still followed: a track lost for
  // longer has drifted with its prediction, and an unsure face there is more often clutter.
  match(tracks_where([&](const Track& t) { return Followed(t); }), low, options_.low_match_iou);
  match(tracks_where([](const Track& t) { return !t.confirmed; }), unmatched(high),
        options_.match_iou);
  return face_track;
}

void Tracker::Age(const std::vector<char>& matched) {
  std::vector<Track> kept;
  kept.reserve(tracks_.size());
  for (size_t t = 0; t < tracks_.size(); ++t) {
    Track& track = tracks_[t];
    if (!matched[t]) {
      if (!track.confirmed) continue;
      track.hits = 0;
      if (++track.misses >= options_.max_misses) continue;
    }
    kept.push_back(std::move(track));
  }
  tracks_ = std::move(kept);
}

std::vector<Detection> Tracker::Update(double t_s, const std::vector<Detection>& faces) {
  AdvanceTo(t_s);
  const std::vector<int> face_track = Associate(faces);
  std::vector<Detection> answer;
  std::vector<char> matched(tracks_.size(), 0);
  for (size_t f = 0; f < faces.size(); ++f) {
    if (face_track[f] < 0) continue;
    Track& track = tracks_[face_track[f]];
    track.filter.Update(faces[f]);
    track.last = faces[f];
    track.misses = 0;
    if (++track.hits >= options_.min_hits) track.confirmed = true;
    matched[face_track[f]] = 1;
    answer.push_back(faces[f]);
    answer.back().track_id = track.id;
    answer.back().tracked = false;
  }
  Age(matched);
  for (size_t f = 0; f < faces.size(); ++f) {
    if (face_track[f] >= 0 || !(faces[f].score >= options_.high_score)) continue;
    answer.push_back(faces[f]);
    answer.back().tracked = false;
    answer.back().track_id = 0;
    if (!Valid(faces[f])) continue;  // answered, but nothing to follow
    Track track{next_id_++, KalmanBox(faces[f]), faces[f], options_.min_hits <= 1, 1, 0};
    answer.back().track_id = track.id;
    tracks_.push_back(std::move(track));
  }
  for (const Track& track : tracks_) {
    if (track.misses > 0 && Followed(track)) answer.push_back(Carried(track, track.filter.Box()));
  }
  SortByScore(answer);
  return answer;
}

std::vector<Detection> Tracker::Predict(double t_s) const {
  const double dt_s = started_ && t_s > last_t_s_ ? t_s - last_t_s_ : 0.0;
  std::vector<Detection> answer;
  for (const Track& track : tracks_) {
    if (Followed(track)) answer.push_back(Carried(track, track.filter.PredictedBox(dt_s)));
  }
  SortByScore(answer);
  return answer;
}

TrackerStats Tracker::stats() const {
  TrackerStats s;
  for (const Track& track : tracks_) {
    if (!track.confirmed) {
      ++s.tentative;
    } else {
      if (Followed(track)) ++s.confirmed;
      if (track.misses > 0) ++s.lost;
    }
  }
  s.started = next_id_ - 1;
  return s;
}

}  // namespace mogserve::track
