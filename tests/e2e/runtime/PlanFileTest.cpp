// A plan or weight pack that is not exactly what the compiler wrote is
// refused by name, before anything is served from it.
#include "PlanFixture.h"
#include <unistd.h>

#include "runtime/executor/CpuBackend.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/serving/Generate.h"
#include "runtime/serving/Session.h"

#include <fstream>
#include <gtest/gtest.h>

namespace volt {
namespace {

/// This process's scratch folder, removed when it exits.
std::filesystem::path scratchRoot() {
  static struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("volt-planfile-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } root;
  return root.path;
}

/// A copy of a freshly compiled tp=2 plan and its packs, to damage.
std::filesystem::path copyOfPlan(const std::string &name) {
  testing::PlanRequest r;
  r.tensorParallelSize = 2;
  auto plan = testing::compilePlan(r);
  auto dir = scratchRoot() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char *f : {"plan.vplan", "weights.rank0.bin", "weights.rank1.bin"})
    std::filesystem::copy_file(plan.parent_path() / f, dir / f);
  return dir / "plan.vplan";
}

std::string loadError(const std::filesystem::path &plan) {
  auto loaded = plan::LoadedPlan::load(plan);
  return loaded.ok() ? "" : loaded.message();
}

void patchByte(const std::filesystem::path &file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5A));
}

TEST(PlanFile, AnIntactPlanLoads) {
  auto plan = copyOfPlan("intact");
  auto loaded = plan::LoadedPlan::load(plan);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ((*loaded)->plan().tensor_parallel_size(), 2u);
  EXPECT_EQ((*loaded)->plan().format_version(), plan::kFormatVersion);
  EXPECT_EQ((*loaded)->plan().arch()->str(), "cpu");
}

TEST(PlanFile, TruncatedPlan) {
  auto plan = copyOfPlan("truncated");
  std::filesystem::resize_file(plan, std::filesystem::file_size(plan) / 2);
  EXPECT_NE(loadError(plan).find("corrupt or truncated"), std::string::npos) << loadError(plan);
}

TEST(PlanFile, NotAPlan) {
  auto plan = copyOfPlan("notaplan");
  std::ofstream(plan, std::ios::trunc) << "model: m\ntarget: cpu\n";
  EXPECT_NE(loadError(plan).find("not a volt plan"), std::string::npos) << loadError(plan);
  std::filesystem::remove(plan);
  EXPECT_NE(loadError(plan).find("cannot open"), std::string::npos) << loadError(plan);
}

TEST(PlanFile, OtherFormatVersion) {
  flatbuffers::FlatBufferBuilder b;
  plan::PlanBuilder p(b);
  p.add_format_version(plan::kFormatVersion + 1);
  plan::FinishPlanBuffer(b, p.Finish());
  auto status = plan::LoadedPlan::verifyBuffer({b.GetBufferPointer(), b.GetSize()}, "future.vplan");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(
      status.message().find("plan format version " + std::to_string(plan::kFormatVersion + 1) +
                            ", this runtime reads version " + std::to_string(plan::kFormatVersion)),
      std::string::npos)
      << status.message();
}

TEST(PlanFile, ChangedWeightPack) {
  auto plan = copyOfPlan("changed");
  patchByte(plan.parent_path() / "weights.rank1.bin", 300);
  std::string e = loadError(plan);
  EXPECT_NE(e.find("weights.rank1.bin: checksum"), std::string::npos) << e;
  EXPECT_NE(e.find("copy it again"), std::string::npos) << e;
}

TEST(PlanFile, TruncatedWeightPack) {
  auto plan = copyOfPlan("shortpack");
  auto pack = plan.parent_path() / "weights.rank0.bin";
  std::filesystem::resize_file(pack, std::filesystem::file_size(pack) - 1);
  std::string e = loadError(plan);
  EXPECT_NE(e.find("weights.rank0.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(PlanFile, MissingWeightPack) {
  auto plan = copyOfPlan("nopack");
  std::filesystem::remove(plan.parent_path() / "weights.rank1.bin");
  std::string e = loadError(plan);
  EXPECT_NE(e.find("weights.rank1.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("copy it beside the plan"), std::string::npos) << e;
}

TEST(PlanFile, AGpuPlanRunsOnTheCpuBackendAsTheCpuPlanDoes) {
  // A GPU plan holds the same ops and weight layouts as a cpu plan, plus
  // kernels; the cpu backend runs it and gives the cpu plan's tokens.
  testing::PlanRequest cpu;
  cpu.tensorParallelSize = 2;
  testing::PlanRequest gpu = cpu;
  gpu.target = "v100-sxm2-32gb";
  auto gpuPlan = testing::compilePlan(gpu);
  auto loaded = plan::LoadedPlan::load(gpuPlan);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ((*loaded)->plan().arch()->str(), "sm_70");
  ASSERT_TRUE((*loaded)->plan().kernels() && (*loaded)->plan().kernels()->size() > 0);
  std::vector<int32_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79};
  std::vector<std::vector<int32_t>> tokens;
  for (const auto &path : {testing::compilePlan(cpu), gpuPlan}) {
    serving::SessionOptions options;
    options.backend = "cpu";
    auto session = serving::Session::open(path, options);
    ASSERT_TRUE(session.ok()) << session.message();
    EXPECT_EQ((*session)->backendName(), "cpu");
    engine::SamplingParams greedy;
    greedy.temperature = 0;
    greedy.maxTokens = 16;
    greedy.ignoreEos = true;
    auto g = serving::generate(**session, prompt, greedy);
    ASSERT_TRUE(g.ok()) << g.message();
    tokens.push_back(g->tokens);
  }
  EXPECT_EQ(tokens[0].size(), 16u);
  EXPECT_EQ(tokens[0], tokens[1]);
}

TEST(PlanFile, SamplerThreadsDefaultToTheCoresAndAreChecked) {
  auto path = testing::compilePlan(testing::PlanRequest{});
  serving::SessionOptions options;
  options.backend = "cpu";
  auto session = serving::Session::open(path, options);
  ASSERT_TRUE(session.ok()) << session.message();
  const int32_t threads = (*session)->engine().config().samplerThreads;
  EXPECT_GE(threads, 1);
  EXPECT_LE(threads, 8);
  options.samplerThreads = 3;
  session = serving::Session::open(path, options);
  ASSERT_TRUE(session.ok()) << session.message();
  EXPECT_EQ((*session)->engine().config().samplerThreads, 3);
  options.samplerThreads = -1;
  session = serving::Session::open(path, options);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.message().find("sampler threads: expected 0 (one per core) to 256, found -1"),
            std::string::npos)
      << session.message();
}

} // namespace
} // namespace volt
