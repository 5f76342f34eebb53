// Tracker: faces over time in one video stream, in the ByteTrack / SORT family. Pure logic like
// the scheduler: no threads, no I/O, no clock of its own (the caller passes each frame's
// presentation time), so tests drive it frame by frame.
//
// Each track is a constant-velocity Kalman filter over the box (centre, width, height and their
// rates, in pixels and pixels per second; KalmanBox). Update associates a detected frame's faces
// with the tracks as ByteTrack does:
//   1. faces scoring at least `high_score` against every confirmed or lost track, by IoU with the
//      track's predicted box (optimal assignment, pairs below `match_iou` not matched);
//   2. faces scoring in [low_score, high_score) against the confirmed tracks still unmatched that
//      are followed (matched on the previous detected frame, or coasting: lost for at most
//      max_coast; with max_coast = 0 this is ByteTrack's "tracked" state), by `low_match_iou`: a
//      face the detector is unsure of continues a track, but never starts one;
//   3. high faces still unmatched against tentative tracks (`match_iou`);
//   4. high faces still unmatched start tentative tracks (birth), ids in the order of `faces`.
// A pair is matched only when its IoU is above 0 and at least the pass's threshold; the
// assignment is lapjv's with cost 1 - IoU and cost_limit 1 - threshold (track/assignment.h).
// A tentative track is confirmed after `min_hits` matched detected frames in a row and is removed
// at its first miss. A confirmed track that misses is lost; it is removed at its `max_misses`-th
// detected frame in a row without a match, so a face hidden on fewer than max_misses detected
// frames can get its id back. Track ids count up from 1 per Tracker and are never given again,
// whatever was removed. A face whose box is not finite or has no area is never tracked: when it
// scores high it is still answered, with track_id 0.
#pragma once

#include <cstdint>
#include <vector>

#include "mogserve/result.h"
#include "track/kalman_box.h"

namespace mogserve::track {

struct TrackerOptions {
  float high_score = 0.5f;     // faces from here on are answered, matched first, start tracks
  float low_score = 0.1f;      // faces in [low, high) only continue confirmed tracks
  float match_iou = 0.2f;      // passes 1 and 3: least IoU of a face with a predicted box
  float low_match_iou = 0.5f;  // pass 2
  int min_hits = 2;            // matched detected frames in a row that confirm a tentative track
  int max_misses = 30;         // detected frames in a row a lost track waits to be found again
  // A lost track is still answered (tracked = true, at its predicted box) on this many detected
  // frames after its last match, so a face the detector misses for a few frames stays covered;
  // 0: lost tracks are not answered.
  int max_coast = 5;
};

struct TrackerStats {
  int64_t confirmed = 0;  // tracks followed now (matched on the last detected frame, or coasting)
  // Confirmed tracks that missed on the last detected frame and are still kept (the coasting
  // ones among them are counted in `confirmed` too).
  int64_t lost = 0;
  int64_t tentative = 0;  // all matched on the last detected frame (a miss removes them)
  int64_t started = 0;    // ids given so far
};

class Tracker {
 public:
  explicit Tracker(TrackerOptions options = {});

  // A detected frame at presentation time `t_s` (non-decreasing from call to call; an earlier
  // time is taken as equal to the last) with every face the detector found (any order, any
  // score: those below low_score are ignored). Returns the frame's answer, highest score first:
  // every face scoring at least high_score with its track_id (tracked = false); faces in
  // [low_score, high_score) that continued a confirmed track, with its id; and confirmed tracks
  // lost for at most max_coast detected frames, at their predicted box with tracked = true and
  // the score of their last match. The boxes of matched faces are the detector's own; landmarks
  // of carried faces are the last matched ones moved and scaled with the box.
  std::vector<Detection> Update(double t_s, const std::vector<Detection>& faces);

  // A frame that was not detected, at time `t_s` (an earlier time than the last Update's is taken
  // as equal): the confirmed tracks Update would answer as carried (matched on the last detected
  // frame, or lost for at most max_coast), at their boxes predicted for `t_s`, tracked = true,
  // highest score first. Changes nothing.
  std::vector<Detection> Predict(double t_s) const;

  TrackerStats stats() const;

 private:
  struct Track {
    int64_t id = 0;
    KalmanBox filter;  // predicted to the last detected frame's time
    Detection last;    // the last matched face: the detector's box, score and landmarks
    bool confirmed = false;
    int hits = 0;    // matched detected frames in a row
    int misses = 0;  // detected frames in a row without a match
  };

  // Moves the clock to `t_s` and every track's filter with it.
  void AdvanceTo(double t_s);
  // ByteTrack's three passes over the tracks' predicted boxes: for each face, the index in
  // tracks_ of the track it continues, or -1.
  std::vector<int> Associate(const std::vector<Detection>& faces) const;
  // After a frame's matches: counts a miss on every unmatched track and removes the tentative
  // ones and those lost too long.
  void Age(const std::vector<char>& matched);
  // A confirmed track answered on the last detected frame: matched, or lost for at most
  // max_coast detected frames.
  bool Followed(const Track& track) const;
  // `track` carried to `box` (its predicted box): tracked = true, last match's score, its
  // landmarks moved and scaled from the last matched box to `box`.
  static Detection Carried(const Track& track, const Detection& box);

  TrackerOptions options_;
  std::vector<Track> tracks_;
  int64_t next_id_ = 1;
  bool started_ = false;  // an Update has set last_t_s_
  double last_t_s_ = 0;
};

}  // namespace mogserve::track
