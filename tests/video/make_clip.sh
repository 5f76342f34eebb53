#!/usr/bin/env bash
# Builds the test clips of specs/video_streams.md §7 from tests/data/photos into OUT_DIR:
#   clip.mp4        10 s, 25 fps, 1280x720, H.264 (250 frames, a keyframe each second):
#                   frames 0-99 sample1.jpg slowly zooming (4 faces), 100-199 sample4.jpg panning
#                   (4-5 faces), 200-249 coffee.png (no face); Grace Hopper's portrait (300 px
#                   high, y 400) overlaid for t < 8 s, moving right by 100 px/s from x 40: its box
#                   proves which frame a result belongs to.
#   clip.ts         the same stream in MPEG-TS (what live TCP/UDP/HTTP sources carry)
#   clip_hevc.mp4   the same in H.265
#   clip_mjpeg.mkv  the same in MJPEG
#   clip_mpeg4.mp4  1 s of it in MPEG-4 part 2: a codec mogserve does not decode
#   audio_only.m4a  1 s of a sine tone: a source without video
#   clip_audio.mp4  clip.mp4's video stream copied, plus 10 s of a 440 Hz AAC sine track (48 kHz
#                   mono) and the container title "mogserve test clip": what the rewriter must
#                   carry through untouched
# Byte-identical on reruns: single-threaded encoders with fixed settings, and no muxer metadata
# that would vary (creation time, encoder version strings are fixed by -bitexact).
# Usage: make_clip.sh PHOTOS_DIR OUT_DIR
set -euo pipefail
P="$1"
OUT="$2"
mkdir -p "$OUT"
TMP="$OUT/.tmp.$$"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
FF=(ffmpeg -nostdin -v error -y)
BITEXACT=(-fflags +bitexact -flags:v +bitexact -map_metadata -1)

"${FF[@]}" -i "$P/sample1.jpg" -i "$P/sample4.jpg" -loop 1 -framerate 25 -i "$P/coffee.png" \
  -loop 1 -framerate 25 -i "$P/grace_hopper.jpg" -filter_complex "\
[0:v]crop=1920:1080:0:0,zoompan=z='1+0.0015*on':x='iw/2-iw/zoom/2':y='ih/2-ih/zoom/2':d=100:s=1280x720:fps=25,setsar=1[a];\
[1:v]crop=1920:1080:0:0,zoompan=z=1.2:x='on*2':y=0:d=100:s=1280x720:fps=25,setsar=1[b];\
[2:v]scale=1280:720,setsar=1,trim=duration=2,setpts=PTS-STARTPTS[c];[a][b][c]concat=n=3:v=1:a=0[bg];\
[3:v]scale=-2:300,setsar=1[f];[bg][f]overlay=x='40+100*t':y=400:enable='lt(t,8)':shortest=1,format=yuv420p[v]" \
  -map '[v]' -t 10 -r 25 -c:v libx264 -preset veryfast -threads 1 -g 25 -bf 0 \
  -x264-params threads=1:lookahead-threads=1 "${BITEXACT[@]}" "$TMP/clip.mp4"
"${FF[@]}" -i "$TMP/clip.mp4" -c copy -f mpegts "${BITEXACT[@]}" "$TMP/clip.ts"
"${FF[@]}" -i "$TMP/clip.mp4" -c:v libx265 -preset ultrafast \
  -x265-params keyint=25:bframes=0:pools=none:frame-threads=1:log-level=error -tag:v hvc1 \
  "${BITEXACT[@]}" "$TMP/clip_hevc.mp4"
"${FF[@]}" -i "$TMP/clip.mp4" -c:v mjpeg -q:v 5 -threads 1 "${BITEXACT[@]}" "$TMP/clip_mjpeg.mkv"
"${FF[@]}" -i "$TMP/clip.mp4" -t 1 -c:v mpeg4 -threads 1 "${BITEXACT[@]}" "$TMP/clip_mpeg4.mp4"
"${FF[@]}" -f lavfi -i sine=frequency=440:duration=1 -c:a aac -fflags +bitexact \
  -flags:a +bitexact -map_metadata -1 "$TMP/audio_only.m4a"
# -metadata after BITEXACT: its -map_metadata -1 drops the input's metadata, not this title.
"${FF[@]}" -i "$TMP/clip.mp4" -f lavfi -i sine=frequency=440:duration=10:sample_rate=48000 \
  -map 0:v -map 1:a -c:v copy -c:a aac -ar 48000 -ac 1 "${BITEXACT[@]}" -flags:a +bitexact \
  -metadata title="mogserve test clip" "$TMP/clip_audio.mp4"
mv "$TMP"/* "$OUT/"
