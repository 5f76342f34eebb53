#!/usr/bin/python3
"""An RTSP server for the video tests (specs/video_streams.md §7): serves CLIP (an MP4 holding
H.264) at rtsp://127.0.0.1:PORT/live, each client its own pipeline from the clip's start
(unshared), paced at real time by the RTP sink's clock, as a camera sends it.

Usage: rtsp_server.py CLIP PORT. Prints "rtsp_server: ready rtsp://127.0.0.1:PORT/live" once it
listens; runs until killed. Needs Debian's python3-gi, gir1.2-gst-rtsp-server-1.0,
gstreamer1.0-plugins-good (qtdemux, rtph264pay) and -bad (h264parse); exits 3 naming what is
missing otherwise, so that the tests can skip with that message."""
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: rtsp_server.py CLIP PORT\n")
        return 2
    clip, port = sys.argv[1], sys.argv[2]
    if not os.path.isfile(clip):
        sys.stderr.write(f"rtsp_server: {clip}: no such file\n")
        return 2
    try:
        import gi
        gi.require_version("Gst", "1.0")
        gi.require_version("GstRtspServer", "1.0")
        from gi.repository import GLib, Gst, GstRtspServer
    except (ImportError, ValueError) as e:
        sys.stderr.write(f"rtsp_server: missing GStreamer's Python bindings ({e}); install "
                         "python3-gi gir1.2-gst-rtsp-server-1.0\n")
        return 3
    Gst.init(None)
    missing = [e for e in ("filesrc", "qtdemux", "h264parse", "rtph264pay")
               if Gst.ElementFactory.find(e) is None]
    if missing:
        sys.stderr.write(f"rtsp_server: missing GStreamer elements {', '.join(missing)}; install "
                         "gstreamer1.0-plugins-good gstreamer1.0-plugins-bad\n")
        return 3

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    location = clip.replace("\\", "\\\\").replace('"', '\\"')
    factory.set_launch(f'( filesrc location="{location}" ! qtdemux ! h264parse ! '
                       "rtph264pay name=pay0 pt=96 config-interval=1 )")
    factory.set_shared(False)  # each client gets the clip from its first frame
    server.get_mount_points().add_factory("/live", factory)
    if server.attach(None) == 0:
        sys.stderr.write(f"rtsp_server: cannot listen on 127.0.0.1:{port}\n")
        return 1
    print(f"rtsp_server: ready rtsp://127.0.0.1:{server.get_bound_port()}/live", flush=True)
    GLib.MainLoop().run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
