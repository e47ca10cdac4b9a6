#include "runtime/support/HugePages.h"

#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

namespace volt {
namespace {

TEST(TransparentHugePages, TheBracketedWordIsTheSetting) {
  EXPECT_EQ(parseTransparentHugePages("always [madvise] never\n"), TransparentHugePages::Madvise);
  EXPECT_EQ(parseTransparentHugePages("[always] madvise never\n"), TransparentHugePages::Always);
  EXPECT_EQ(parseTransparentHugePages("always madvise [never]\n"), TransparentHugePages::Never);
  EXPECT_EQ(parseTransparentHugePages(""), TransparentHugePages::Unknown);
  EXPECT_EQ(parseTransparentHugePages("always madvise never"), TransparentHugePages::Unknown);
  EXPECT_EQ(parseTransparentHugePages("[sometimes] never"), TransparentHugePages::Unknown);
  EXPECT_EQ(parseTransparentHugePages("[always"), TransparentHugePages::Unknown);
  EXPECT_STREQ(toString(TransparentHugePages::Madvise), "madvise");
}

TEST(AvailableMemory, IsMemAvailableInBytes) {
  EXPECT_EQ(parseAvailableMemory("MemTotal:       24563120 kB\n"
                                 "MemFree:         1234567 kB\n"
                                 "MemAvailable:   20000000 kB\n"
                                 "Buffers:          12345 kB\n"),
            uint64_t{20000000} * 1024);
  EXPECT_EQ(parseAvailableMemory("MemTotal:       24563120 kB\n"), 0u);
  EXPECT_EQ(parseAvailableMemory("MemAvailable:   lots kB\n"), 0u);
  EXPECT_EQ(parseAvailableMemory("MemAvailable:   20 MB\n"), 0u);
  EXPECT_EQ(parseAvailableMemory("MemAvailable:   99999999999999999999999 kB\n"), 0u);
  EXPECT_EQ(parseAvailableMemory(""), 0u);
}

TEST(HugePageCopyPays, WhereTheKernelHasHugePagesAndMemoryAllows) {
  const uint64_t gib = uint64_t{1} << 30;
  std::string why;
  EXPECT_TRUE(hugePageCopyPays(TransparentHugePages::Madvise, 3 * gib, 4 * gib, why));
  EXPECT_TRUE(hugePageCopyPays(TransparentHugePages::Always, 3 * gib, 4 * gib, why));
  EXPECT_TRUE(why.empty()) << why;

  EXPECT_FALSE(hugePageCopyPays(TransparentHugePages::Never, gib, 16 * gib, why));
  EXPECT_EQ(why, "transparent huge pages are off: /sys/kernel/mm/transparent_hugepage/enabled "
                 "says never");
  EXPECT_FALSE(hugePageCopyPays(TransparentHugePages::Unknown, gib, 16 * gib, why));
  EXPECT_EQ(why, "transparent huge pages are not known here: "
                 "/sys/kernel/mm/transparent_hugepage/enabled says unknown");

  EXPECT_FALSE(hugePageCopyPays(TransparentHugePages::Madvise, 3 * gib + 1, 4 * gib, why));
  EXPECT_EQ(why, "the packs (3.00 GiB) would take more than 3/4 of the available memory "
                 "(4.00 GiB)");
  EXPECT_FALSE(hugePageCopyPays(TransparentHugePages::Madvise, gib, 0, why));
  EXPECT_EQ(why, "the packs (1.00 GiB) would take more than 3/4 of the available memory, which "
                 "/proc/meminfo does not say");
}

constexpr const char *kSmaps =
    "7f0000000000-7f0000400000 r--p 00000000 00:00 0 \n"
    "Size:               4096 kB\n"
    "AnonHugePages:      4096 kB\n"
    "7f0000400000-7f0000600000 r--p 00000000 00:00 0 \n"
    "AnonHugePages:      2048 kB\n"
    "7f0001000000-7f0001400000 r--p 00000000 fd:00 1234      /tmp/weights.rank0.bin\n"
    "AnonHugePages:         0 kB\n"
    "FilePmdMapped:      4096 kB\n";

TEST(AnonHugeBytes, SumsTheMappingsInTheRange) {
  EXPECT_EQ(parseAnonHugeBytes(kSmaps, 0x7f0000000000, 0x7f0000600000), uint64_t{6} << 20);
  EXPECT_EQ(parseAnonHugeBytes(kSmaps, 0x7f0000400000, 0x7f0000600000), uint64_t{2} << 20);
  // A mapping reaching past the range counts its bytes inside it at most.
  EXPECT_EQ(parseAnonHugeBytes(kSmaps, 0x7f0000000000, 0x7f0000200000), uint64_t{2} << 20);
  EXPECT_EQ(parseAnonHugeBytes(kSmaps, 0x7f0000600000, 0x7f0002000000), 0u);
  EXPECT_EQ(parseAnonHugeBytes("", 0, UINTPTR_MAX), 0u);
  EXPECT_EQ(parseAnonHugeBytes("AnonHugePages: 2048 kB\n", 0, UINTPTR_MAX), 0u);
}

TEST(HugePageCopy, HoldsTheBytesOnAHugePageBoundary) {
  std::vector<uint8_t> bytes((size_t{5} << 20) + 123);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  auto copy = HugePageCopy::of(bytes, "test bytes");
  ASSERT_TRUE(copy.ok()) << copy.message();
  auto held = (*copy)->bytes();
  ASSERT_EQ(held.size(), bytes.size());
  EXPECT_NE(held.data(), bytes.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(held.data()) % (uintptr_t{2} << 20), 0u);
  EXPECT_TRUE(std::equal(held.begin(), held.end(), bytes.begin()));
  EXPECT_LE((*copy)->hugeBytes(), bytes.size());
}

TEST(HugePageCopy, ALargeCopyTakenBySeveralThreadsHoldsEveryByte) {
  // 37 huge pages and a partial one: enough pieces for the copy's helper
  // threads, the last piece short.
  std::vector<uint8_t> bytes((size_t{37} << 21) + 4097);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>((i * 0x9E3779B1u) >> 11);
  auto copy = HugePageCopy::of(bytes, "test bytes");
  ASSERT_TRUE(copy.ok()) << copy.message();
  ASSERT_EQ((*copy)->bytes().size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), (*copy)->bytes().begin()));
}

TEST(HugePageCopy, OfNothingIsEmpty) {
  auto copy = HugePageCopy::of({}, "nothing");
  ASSERT_TRUE(copy.ok()) << copy.message();
  EXPECT_TRUE((*copy)->bytes().empty());
}

TEST(HugePageCopy, MemoryThatCannotBeHadIsAnErrorNamingTheBytes) {
  // A span of 2^62 bytes is never read: the allocation fails first.
  std::span<const uint8_t> huge(reinterpret_cast<const uint8_t *>(uintptr_t{4096}),
                                size_t{1} << 62);
  auto copy = HugePageCopy::of(huge, "the weight pack of rank 3");
  ASSERT_FALSE(copy.ok());
  EXPECT_NE(copy.message().find("the weight pack of rank 3"), std::string::npos);
  EXPECT_NE(copy.message().find("cannot allocate"), std::string::npos);
}

} // namespace
} // namespace volt
