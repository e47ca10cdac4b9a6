//===- FakeCuda.h - a CUDA driver and NCCL that record, for tests -*- C++ -*-===//
//
// A table of driver and NCCL entry points (CudaDriver::custom,
// Nccl::custom) backed by host memory, so that the cuda backend's step
// logic runs and is checked on machines without a GPU.
//
// Device memory is host memory (mapped on demand, so that a plan's KV
// cache costs nothing until touched). Work on a stream is queued and runs
// only when the host waits for it (cuStreamSynchronize, cuEventSynchronize,
// cuCtxSynchronize), as on a GPU that is slower than its host: a copy reads
// its pinned source and writes its destination when it runs, not when it is
// enqueued, so that a host that refills a staging buffer too early, or
// reads one too soon, sees the wrong values. Collectives run when every
// rank of the communicator has reached its own (waiting, with a time limit,
// for a rank whose thread has not enqueued it yet).
//
// Stream capture records work into a graph instead of queueing it;
// launching the instantiated graph queues its nodes. Calls a capturing
// thread may not make (synchronous copies, waits, allocations) fail with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the capture.
//
// Every call is recorded. Every copy's and collective's range must lie in
// one allocation of the right device (pinned host memory for the host side
// of an asynchronous copy); anything else fails the test (ADD_FAILURE) and
// the call, or the wait that runs it, returns CUDA_ERROR_ILLEGAL_ADDRESS.
// Kernels do nothing unless `onLaunch` emulates them: the fake does not know
// which parameters are pointers, the test does (from the plan).
//
// The entry points are plain function pointers, so they reach the fake
// through one global: one FakeCuda at a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Nccl.h"

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace volt::cuda::testing {

/// One recorded call.
struct FakeCall {
  std::string name;
  /// The device current on the calling thread (-1: none).
  int device = -1;
  /// Whether the call's stream was capturing.
  bool capturing = false;
  /// cuLaunchKernel: the kernel's name, the module it came from (its load
  /// order on the device), grid, block and parameter buffer.
  std::string kernel;
  int module = -1;
  std::array<unsigned, 3> grid{}, block{};
  std::vector<uint8_t> params;
  /// Copies: bytes; collectives: elements per rank.
  uint64_t count = 0;
};

/// A kernel launch as it runs on a device (queued directly, or a node of a
/// launched graph).
struct FakeLaunch {
  int device = -1;
  std::string kernel;
  int module = -1;
  std::array<unsigned, 3> grid{}, block{};
  /// Dynamic shared memory per block, in bytes.
  unsigned sharedBytes = 0;
  std::vector<uint8_t> params;
  bool fromGraph = false;
};

/// A graph as instantiated: its device and the calls captured into it.
struct FakeGraph {
  int device = -1;
  std::vector<FakeCall> nodes;
  size_t launches() const;
  size_t collectives() const;
};

class FakeCuda {
public:
  explicit FakeCuda(int devices = 1);
  /// Fails the test if objects are still alive (after unmapping them).
  ~FakeCuda();
  FakeCuda(const FakeCuda &) = delete;
  FakeCuda &operator=(const FakeCuda &) = delete;

  /// Tables whose entry points are this fake's.
  std::shared_ptr<CudaDriver> driver();
  std::shared_ptr<Nccl> nccl();

  // What the fake devices are; set before the backend is created.
  /// Per device, major * 10 + minor (default 70, a V100).
  std::vector<int> computeCapability;
  /// Per device: memory in all, and memory already used by others.
  uint64_t totalMemory = uint64_t{16} << 30;
  uint64_t usedByOthers = 0;
  /// When set, device allocations start filled with this byte, as a GPU's
  /// memory holds whatever was there before (0xFF: NaN in FP16 and FP32),
  /// instead of zero pages mapped on demand.
  std::optional<uint8_t> fillDeviceMemory;
  /// When not empty, cuModuleLoadDataEx refuses PTX with
  /// CUDA_ERROR_INVALID_PTX and writes this to the JIT error log.
  std::string jitErrorLog;
  /// What cuStreamEndCapture returns (0: success); a failure ends the
  /// capture without a graph.
  CUresult endCaptureResult = 0;
  /// The device whose captures end with endCaptureResult (-1: every one).
  int endCaptureDevice = -1;
  /// Asked before each kernel launch, graph launch, asynchronous copy and
  /// collective is queued: a non-zero result fails that call (a CUresult,
  /// or an NCCL result for collectives) and nothing is queued.
  std::function<int(const FakeCall &)> failCall;
  /// Emulates kernels: called as each launch runs, with the fake's lock
  /// held (deviceBytes may be called from it).
  std::function<void(const FakeLaunch &)> onLaunch;

  /// Puts `device` in the error state a kernel fault leaves a GPU in:
  /// every later wait on it returns CUDA_ERROR_ILLEGAL_ADDRESS.
  void fault(int device);

  // What happened.
  std::vector<FakeCall> calls() const;
  void clearCalls();
  /// Calls named `name`.
  size_t count(const std::string &name) const;
  /// cuLaunchKernel calls on a stream that was not capturing, and on one
  /// that was.
  size_t directLaunches() const;
  size_t capturedLaunches() const;
  /// Collectives enqueued while their stream was capturing.
  size_t capturedCollectives() const;
  /// Launches that ran (direct or from a graph).
  size_t executedLaunches() const;
  /// Every graph instantiated so far, in order.
  std::vector<FakeGraph> graphs() const;
  /// The kernel names asked of each module of `device`, in load order.
  std::vector<std::string> moduleFunctions(int device) const;
  /// Problems the fake detected (each also failed the test).
  std::vector<std::string> errors() const;

  /// [at, at + bytes) of `device`'s memory (-1: pinned host memory), or
  /// null (and the test fails, naming `what`) when it is not inside one of
  /// its allocations.
  uint8_t *deviceBytes(int device, uint64_t at, uint64_t bytes, const std::string &what);
  std::vector<int32_t> readInts(int device, uint64_t at, size_t count);
  std::vector<float> readFloats(int device, uint64_t at, size_t count);

  /// Objects created and not destroyed: device and pinned allocations,
  /// modules, streams, events, graphs and graph executables, retained
  /// contexts, NCCL communicators.
  int liveObjects() const;
  /// "2 allocations, 1 stream" (empty when none).
  std::string describeLive() const;
  /// Device memory allocated on `device`.
  uint64_t allocatedBytes(int device) const;
  /// The live allocations of `device`: base address to size.
  std::map<uint64_t, uint64_t> allocations(int device) const;

  /// The implementation's state (FakeCuda.cpp); public so that the entry
  /// points, plain functions, reach it.
  struct State;
  std::unique_ptr<State> state;
};

} // namespace volt::cuda::testing
