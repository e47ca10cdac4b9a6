//===- CudaTest.cpp - the cuda backend's pieces that need no GPU ----------===//
//
// Loading the driver and NCCL (a missing library is an error naming it,
// never a crash), the launch selection, grid rules and parameter buffers
// the backend builds, and the refusals create() makes before touching a
// device. Running kernels is tests/gpu's job (label gpu).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/LaunchArgs.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/RankThreads.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace volt::cuda {
namespace {

TEST(CudaDriver, AMissingLibraryIsNamed) {
  auto d = CudaDriver::load({"libvolt-no-such-cuda.so.1"});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("the CUDA driver library is not installed (tried "
                             "libvolt-no-such-cuda.so.1 ("),
            std::string::npos)
      << d.message();
  EXPECT_NE(d.message().find("the cpu backend does not"), std::string::npos);
}

TEST(CudaDriver, TheDefaultLibraryLoadsOrIsNamed) {
  auto d = CudaDriver::load();
  if (d.ok()) {
    EXPECT_GE((*d)->version(), 11000) << (*d)->library();
    EXPECT_EQ((*d)->describe(2).rfind("CUDA_ERROR_OUT_OF_MEMORY", 0), 0u);
  } else {
    // No driver here: the message names what was tried (or why cuInit failed).
    EXPECT_TRUE(d.message().find("libcuda.so.1") != std::string::npos) << d.message();
  }
}

TEST(Nccl, AMissingLibraryIsNamed) {
  auto n = Nccl::load({"libvolt-no-such-nccl.so.2"});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.message().find("NCCL is not installed (tried libvolt-no-such-nccl.so.2"),
            std::string::npos)
      << n.message();
}

TEST(Nccl, TheDefaultLibraryLoadsOrIsNamed) {
  auto n = Nccl::load();
  if (n.ok()) {
    EXPECT_GE((*n)->version(), 20000) << (*n)->library();
    Status s = (*n)->check(1, "ncclAllReduce");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().rfind("ncclAllReduce: ", 0), 0u);
  } else {
    EXPECT_NE(n.message().find("libnccl.so.2"), std::string::npos) << n.message();
  }
}

/// A launch with one argument of every kind, in a finished FlatBuffer.
struct LaunchFixture {
  flatbuffers::FlatBufferBuilder b;
  const plan::Op *op = nullptr;

  LaunchFixture() {
    std::vector<flatbuffers::Offset<plan::Launch>> launches;
    for (uint32_t maxTokens : {8u, 44u, 1u << 30}) {
      plan::Operand weight(plan::OperandKind::Weight, 2), arena(plan::OperandKind::Arena, 5);
      std::vector<flatbuffers::Offset<plan::Arg>> args = {
          plan::CreateArg(b, plan::ArgKind::I32, nullptr, 0, -7),
          plan::CreateArg(b, plan::ArgKind::Pointer, &weight, 4096),
          plan::CreateArg(b, plan::ArgKind::TokenCount),
          plan::CreateArg(b, plan::ArgKind::F32, nullptr, 0, 0, 1.5f),
          plan::CreateArg(b, plan::ArgKind::F32, nullptr, 0, 0, -2.0f),
          plan::CreateArg(b, plan::ArgKind::F32, nullptr, 0, 0, 0.25f),
          plan::CreateArg(b, plan::ArgKind::Pointer, &arena),
          plan::CreateArg(b, plan::ArgKind::SeqCount),
          plan::CreateArg(b, plan::ArgKind::RowCount)};
      plan::GridDim x(0, 0, 40, 1, 0), y(1, 0, 0, 32, 0), z(0, 1, 3, 2, 0);
      launches.push_back(plan::CreateLaunch(b, maxTokens, maxTokens == 8 ? 0 : 1, &x, &y, &z, 256,
                                            1, 1, 0, b.CreateVector(args)));
    }
    auto o = plan::CreateOp(b, plan::OpKind::QLinear, 0, plan::OpParams::NONE, 0,
                            b.CreateVector(launches));
    b.Finish(o);
    op = flatbuffers::GetRoot<plan::Op>(b.GetBufferPointer());
  }
};

TEST(LaunchArgs, TheFirstLaunchCoveringTheTokenCountServes) {
  LaunchFixture f;
  EXPECT_EQ(selectLaunch(*f.op, 1)->max_tokens(), 8u);
  EXPECT_EQ(selectLaunch(*f.op, 8)->max_tokens(), 8u);
  EXPECT_EQ(selectLaunch(*f.op, 9)->max_tokens(), 44u);
  EXPECT_EQ(selectLaunch(*f.op, 2048)->max_tokens(), 1u << 30);
  flatbuffers::FlatBufferBuilder b;
  b.Finish(plan::CreateOp(b, plan::OpKind::AllReduce));
  EXPECT_EQ(selectLaunch(*flatbuffers::GetRoot<plan::Op>(b.GetBufferPointer()), 1), nullptr);
}

TEST(LaunchArgs, GridRules) {
  LaunchFixture f;
  const plan::Launch *l = selectLaunch(*f.op, 1);
  EXPECT_EQ(gridExtent(l->grid_x(), 100, 3, 3), 40u);
  EXPECT_EQ(gridExtent(l->grid_y(), 100, 3, 3), 4u); // ceil(100 / 32)
  EXPECT_EQ(gridExtent(l->grid_y(), 96, 3, 3), 3u);
  EXPECT_EQ(gridExtent(l->grid_z(), 100, 3, 9), 3u); // ceil((3 + 3) / 2)
  EXPECT_EQ(gridExtent(nullptr, 100, 3, 3), 1u);
  // One block per logits row (a verify step: R > S).
  const plan::GridDim perRow(0, 0, 0, 1, 1), halfRows(0, 1, 1, 2, 1);
  EXPECT_EQ(gridExtent(&perRow, 100, 3, 7), 7u);
  EXPECT_EQ(gridExtent(&halfRows, 100, 3, 7), 6u); // ceil((3 + 7 + 1) / 2)
}

TEST(LaunchArgs, ParametersAreLaidOutAsTheKernelsDeclareThem) {
  LaunchFixture f;
  const plan::Launch *l = selectLaunch(*f.op, 1);
  auto address = [](const plan::Operand &o) -> Result<uint64_t> {
    return o.kind() == plan::OperandKind::Weight ? 0x7f0000000000ull + o.index() * 0x1000000
                                                 : 0x7e0000000000ull + o.index();
  };
  auto params = packArguments(*l, address, 37, 3, 5);
  ASSERT_TRUE(params.ok()) << params.message();
  // int (0), pointer (8: aligned), int T (16), 3 floats (20, 24, 28),
  // pointer (32), int S (40), int R (44): 48 bytes.
  ASSERT_EQ(params->size(), 48u);
  auto at = [&](size_t offset, auto value) {
    std::memcpy(&value, params->data() + offset, sizeof(value));
    return value;
  };
  EXPECT_EQ(at(0, int32_t{}), -7);
  EXPECT_EQ(at(8, uint64_t{}), 0x7f0000000000ull + 2 * 0x1000000 + 4096);
  EXPECT_EQ(at(16, int32_t{}), 37);
  EXPECT_EQ(at(20, float{}), 1.5f);
  EXPECT_EQ(at(24, float{}), -2.0f);
  EXPECT_EQ(at(28, float{}), 0.25f);
  EXPECT_EQ(at(32, uint64_t{}), 0x7e0000000000ull + 5);
  EXPECT_EQ(at(40, int32_t{}), 3);
  EXPECT_EQ(at(44, int32_t{}), 5);

  auto failing = [](const plan::Operand &) -> Result<uint64_t> {
    return Error("operand 1:2 is outside the plan");
  };
  auto bad = packArguments(*l, failing, 1, 1, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "operand 1:2 is outside the plan");
}

/// A minimal plan with no weights, for `arch`.
std::filesystem::path writePlan(const std::string &arch) {
  flatbuffers::FlatBufferBuilder b;
  auto rank = plan::CreateRank(
      b, 0, b.CreateVector(std::vector<flatbuffers::Offset<plan::Op>>{}),
      b.CreateVector(std::vector<flatbuffers::Offset<plan::Buffer>>{}), 0, 0, 0,
      b.CreateVector(std::vector<flatbuffers::Offset<plan::WeightEntry>>{}),
      plan::CreateWeightPack(b, b.CreateString("weights.rank0.bin"), 0, 0),
      b.CreateVector(std::vector<flatbuffers::Offset<plan::CacheGroup>>{
          plan::CreateCacheGroup(b, plan::CacheKind::PagedKv, b.CreateString("kv"),
                                 b.CreateVector(std::vector<uint32_t>{0}), plan::DType::F16, 1, 16,
                                 1, 8, 0, 0, 0, 2 * 16 * 8 * 2)}),
      2 * 16 * 8 * 2);
  auto model = plan::CreateModelInfo(b, b.CreateString("Qwen3MoeForCausalLM"), 512);
  auto limits = plan::CreateLimits(b, 2048, 8, 64, 128);
  auto root = plan::CreatePlan(b, plan::kFormatVersion, 0, 0, 0, 0, b.CreateString(arch), 0, 1,
                               plan::DType::F16, model, limits, plan::CreateTokenizer(b), 0,
                               b.CreateVector(std::vector<flatbuffers::Offset<plan::Rank>>{rank}));
  plan::FinishPlanBuffer(b, root);
  auto dir = std::filesystem::temp_directory_path() /
             ("volt-cuda-test-" + std::to_string(::getpid()) + "-" + arch);
  std::filesystem::create_directories(dir);
  auto path = dir / "plan.vplan";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(b.GetBufferPointer()),
             static_cast<std::streamsize>(b.GetSize()));
  return path;
}

TEST(CudaBackend, RefusesACpuPlan) {
  plan::LoadOptions options;
  options.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(writePlan("cpu"), options);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  auto backend = CudaBackend::create(**loaded);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.message().find("the plan was compiled for cpu, not for a GPU; run it with "
                                   "--backend cpu"),
            std::string::npos)
      << backend.message();
}

TEST(CudaBackend, NamesTheMissingDriver) {
  plan::LoadOptions options;
  options.loadWeights = false;
  auto loaded = plan::LoadedPlan::load(writePlan("sm_70"), options);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  CudaBackendOptions cuda;
  cuda.driverLibraries = {"libvolt-no-such-cuda.so.1"};
  auto backend = CudaBackend::create(**loaded, cuda);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.message().find("the CUDA driver library is not installed"), std::string::npos)
      << backend.message();
}

} // namespace
} // namespace volt::cuda

namespace volt::cuda {
namespace {

TEST(RankThreads, EveryRankRunsAtOnceOnItsOwnThread) {
  // NCCL needs every rank's collective issued at once from different
  // threads: here each call waits until all four ranks have started, which
  // would never happen if two ranks shared a thread. Rank r keeps its
  // thread from step to step.
  RankThreads threads(4);
  std::vector<std::thread::id> first(4);
  for (int step = 0; step < 50; ++step) {
    std::mutex mu;
    std::condition_variable cv;
    int started = 0;
    std::vector<std::thread::id> ids(4);
    threads.run([&](size_t r) {
      std::unique_lock<std::mutex> lock(mu);
      ids[r] = std::this_thread::get_id();
      ++started;
      cv.notify_all();
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == 4; }))
          << "rank " << r << " ran alone";
    });
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    for (size_t r = 1; r < 4; ++r) {
      EXPECT_NE(ids[r], ids[0]);
      if (step == 0)
        first[r] = ids[r];
      EXPECT_EQ(ids[r], first[r]) << "rank " << r << " moved to another thread";
    }
  }
  RankThreads one(1);
  int calls = 0;
  one.run([&](size_t r) { calls += int(r) + 1; });
  EXPECT_EQ(calls, 1);
}

} // namespace
} // namespace volt::cuda
