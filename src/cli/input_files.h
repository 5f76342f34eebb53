// The image files a command line names: files as given, folders searched recursively for
// .jpg/.jpeg/.jpe/.png/.webp (any case) in sorted order. Shared by `detect` and `eval compare`.
#pragma once

#include <string>
#include <vector>

namespace mogserve::cli {

struct InputFile {
  std::string path;
  std::string relative;  // below the folder it was found in (a named file: its file name)
};

std::vector<InputFile> CollectInputFiles(const std::vector<std::string>& paths);

}  // namespace mogserve::cli
