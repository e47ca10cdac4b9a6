#include <unistd.h>
#include "runtime/support/MappedFile.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace volt {
namespace {

TEST(MappedFile, MapsContents) {
  auto path = std::filesystem::temp_directory_path() /
              ("volt-mapped-file-test-" + std::to_string(::getpid()) + ".bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  auto file = MappedFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.message();
  ASSERT_EQ((*file)->size(), 5u);
  EXPECT_EQ((*file)->bytes()[0], 'h');
  std::filesystem::remove(path);
}

TEST(MappedFile, MissingFileIsAnErrorNamingThePath) {
  auto file = MappedFile::open("/nonexistent/volt/x.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.message().find("/nonexistent/volt/x.safetensors"), std::string::npos);
  EXPECT_NE(file.message().find("cannot open"), std::string::npos);
}

TEST(MappedFile, DirectoryIsRejected) {
  auto file = MappedFile::open("/tmp");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.message().find("not a regular file"), std::string::npos);
}

} // namespace
} // namespace volt
