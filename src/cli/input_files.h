// The image files a command line names: files as given, folders searched recursively for
// .jpg/.jpeg/.jpe/.png/.webp (any case) in sorted order. Shared by `detect`, `anonymize` and
// `eval compare`.
#pragma once

#include <string>
#include <vector>

namespace mogserve::cli {

struct InputFile {
  std::string path;
  std::string relative;  // below the folder it was found in (a named file: its file name)
};

// `with_videos`: folders also give their video files (IsVideoInput), for `anonymize`.
std::vector<InputFile> CollectInputFiles(const std::vector<std::string>& paths,
                                         bool with_videos = false);

// Whether `path` names a video file by its extension (.mp4 .mov .mkv .m4v .avi .webm .ts, any
// case), and whether `anonymize` can write one there (.mp4 .mov .mkv: H.264).
bool IsVideoInput(const std::string& path);
bool IsVideoOutput(const std::string& path);

}  // namespace mogserve::cli
