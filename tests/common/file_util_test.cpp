#include "common/file_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace mogserve {
namespace {

TEST(ReadFileBytesTest, ReadsFilesAndReportsErrors) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mogserve_file_util_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "bytes.bin";
  std::vector<uint8_t> content(200000);
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<uint8_t>(i * 31);
  FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(content.data(), 1, content.size(), f), content.size());
  std::fclose(f);

  StatusOr<std::vector<uint8_t>> read = ReadFileBytes(file.string());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, content);
  EXPECT_EQ(ReadFileBytes((dir / "missing.jpg").string()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadFileBytes(dir.string()).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(WriteTextFileTest, ReplacesTheFileAndNamesThePathOnFailure) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mogserve_write_text_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "report.md").string();
  ASSERT_TRUE(WriteTextFile(path, "a longer first version\n").ok());
  ASSERT_TRUE(WriteTextFile(path, "second").ok());
  StatusOr<std::vector<uint8_t>> read = ReadFileBytes(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::string(read->begin(), read->end()), "second");

  const std::string missing = (dir / "no_such_dir" / "x.json").string();
  const Status failed = WriteTextFile(missing, "x");
  EXPECT_EQ(failed.code(), StatusCode::kInternal);
  EXPECT_NE(failed.message().find(missing), std::string::npos) << failed.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mogserve
