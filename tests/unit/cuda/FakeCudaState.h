//===- FakeCudaState.h - FakeCuda's state, private to its files -*- C++ -*-===//
//
// The objects behind FakeCuda's handles, the queues that hold device work
// until the host waits for it, and what the entry points share. Private to
// FakeCuda*.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/unit/cuda/FakeCuda.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

namespace volt::cuda::testing {

// cuda.h's values of the codes the fake returns.
inline constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidContext = 201,
                          kInvalidImage = 200, kInvalidPtx = 218, kInvalidHandle = 400,
                          kNotFound = 500, kNotReady = 600, kIllegalAddress = 700,
                          kCaptureUnsupported = 900, kCaptureInvalidated = 901, kUnknown = 999;
inline constexpr NcclResult kNcclInvalidArgument = 4, kNcclInternalError = 3;
/// How long a collective waits for a peer's thread to enqueue its part.
inline constexpr auto kCollectiveWait = std::chrono::seconds(20);

/// "CUDA_ERROR_OUT_OF_MEMORY" (null for a code the fake does not return).
const char *errorName(CUresult code);

/// The fake the entry points serve (FakeCuda.h: one at a time).
extern FakeCuda *gFake;

/// Everything the fake holds, guarded by `mutex` (recursive: onLaunch may
/// call back into the fake while work runs).
struct FakeCuda::State {
  struct Allocation {
    uint64_t bytes = 0;
    int device = -1; // -1: pinned host memory
  };
  struct Module;
  struct Function {
    Module *module = nullptr;
    std::string name;
    /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: above 48 KiB only
    /// once opted in.
    int maxDynamicShared = 48 << 10;
  };
  struct Module {
    int device = 0, ordinal = 0;
    std::string image;
    std::map<std::string, std::unique_ptr<Function>> functions;
  };
  struct Stream;
  struct Event {
    int device = 0;
    bool pending = false;
    uint64_t generation = 0;
    Stream *stream = nullptr;
  };
  struct Comm {
    int clique = 0, rank = 0, ranks = 1, device = 0;
    uint64_t seq = 0;
  };
  /// One piece of queued (or captured) device work.
  struct Op {
    enum Kind : uint8_t {
      Launch,
      Copy,
      Copy2D,
      Memset,
      Record,
      AllReduce,
      AllGather
    } kind = Launch;
    uint64_t id = 0;
    FakeLaunch launch;
    // Copy and Memset (dst only): the memory each side lies in (a device,
    // -1 pinned host memory).
    uint64_t dst = 0, src = 0, bytes = 0;
    int dstDevice = 0, srcDevice = 0;
    uint8_t value = 0;
    CudaMemcpy2D copy;
    // Record.
    Event *event = nullptr;
    uint64_t generation = 0;
    // Collectives (elements per rank).
    int clique = 0, rank = 0, ranks = 1, type = 0;
    uint64_t seq = 0;
  };
  struct Stream {
    int device = 0;
    std::deque<Op> queue;
    bool capturing = false, invalidated = false;
    std::thread::id captureThread;
    std::vector<Op> captured;
    std::vector<FakeCall> capturedCalls;
  };
  struct Graph {
    int device = 0;
    std::vector<Op> nodes;
    std::vector<FakeCall> calls;
  };
  struct Context {
    int device = 0, retained = 0;
  };

  explicit State(int devices) : devices(devices) {
    static uint64_t nextGeneration = 1;
    generation = nextGeneration++;
    for (int d = 0; d < devices; ++d)
      contexts.push_back(std::make_unique<Context>(Context{d, 0}));
  }

  int devices;
  uint64_t generation = 0;
  mutable std::recursive_mutex mutex;
  std::condition_variable_any changed;
  std::vector<std::unique_ptr<Context>> contexts;
  std::map<uint64_t, Allocation> memory; // by base address
  std::map<Module *, std::unique_ptr<Module>> modules;
  std::set<Function *> functions;
  std::map<Stream *, std::unique_ptr<Stream>> streams;
  std::map<Event *, std::unique_ptr<Event>> events;
  std::map<Graph *, std::unique_ptr<Graph>> graphs, execs;
  std::map<Comm *, std::unique_ptr<Comm>> comms;
  std::vector<int> modulesLoaded; // per device
  std::vector<std::vector<std::string>> moduleFunctions;
  int cliques = 0;
  uint64_t nextOp = 1;
  std::vector<FakeCall> log;
  std::vector<FakeGraph> instantiated;
  std::vector<std::string> errors;
  size_t executedLaunches = 0;
  std::vector<bool> faulted; // per device: sticky, as a GPU's error state

  void fail(const std::string &message) {
    errors.push_back(message);
    ADD_FAILURE() << "fake CUDA: " << message;
  }
  uint8_t *bytesAt(int device, uint64_t at, uint64_t bytes, const std::string &what);
  static std::string hex(uint64_t v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(v));
    return text;
  }
  static std::string where(int device) {
    return device < 0 ? std::string("pinned host memory") : "device " + std::to_string(device);
  }
  int live() const {
    int n = static_cast<int>(memory.size() + modules.size() + streams.size() + events.size() +
                             graphs.size() + execs.size() + comms.size());
    for (const auto &c : contexts)
      n += c->retained;
    return n;
  }

  // The calling thread's current context, tagged with the fake it belongs to.
  struct Current {
    uint64_t generation = 0;
    int device = -1;
  };
  static Current &current() {
    thread_local Current c;
    return c;
  }
  int currentDevice() const { return current().generation == generation ? current().device : -1; }
  /// The capture, if any, the calling thread has begun and not ended.
  Stream *threadCapture() {
    for (auto &[key, s] : streams)
      if (s->capturing && s->captureThread == std::this_thread::get_id())
        return s.get();
    return nullptr;
  }
  /// A call a capturing thread may not make: it invalidates the capture.
  bool forbiddenInCapture(const char *name) {
    Stream *s = threadCapture();
    if (!s)
      return false;
    s->invalidated = true;
    FakeCall call;
    call.name = name;
    call.device = currentDevice();
    call.capturing = true;
    log.push_back(call);
    return true;
  }

  /// What failCall says of `call` (logged either way).
  int injected(FakeCall call, Stream &s) {
    if (!gFake->failCall)
      return 0;
    call.capturing = s.capturing;
    const int rc = gFake->failCall(call);
    if (rc) {
      call.name += " (failed)";
      log.push_back(std::move(call));
    }
    return rc;
  }
  void enqueue(Stream &s, Op op, FakeCall call) {
    op.id = nextOp++;
    call.capturing = s.capturing;
    log.push_back(call);
    if (s.capturing) {
      s.captured.push_back(std::move(op));
      s.capturedCalls.push_back(std::move(call));
      return;
    }
    if (op.kind == Op::AllReduce || op.kind == Op::AllGather)
      op.seq = nextSeq(op);
    if (op.kind == Op::Record) {
      op.event->pending = true;
      op.event->stream = &s;
      op.generation = ++op.event->generation;
    }
    s.queue.push_back(std::move(op));
    changed.notify_all();
  }
  std::map<std::pair<int, int>, uint64_t> seqs; // (clique, rank) -> next
  uint64_t nextSeq(const Op &op) { return seqs[{op.clique, op.rank}]++; }

  CUresult execute(Op &op);

  /// Runs the collective at the head of each rank's stream.
  CUresult collective(std::vector<Stream *> &members);

  /// Runs the head of `s`'s queue; a collective first brings every peer's
  /// stream to its part (waiting for a peer thread to enqueue it).
  CUresult runHead(Stream &s, std::unique_lock<std::recursive_mutex> &lock);

  /// Runs `s`'s queued work until `done` holds.
  CUresult drive(Stream &s, std::unique_lock<std::recursive_mutex> &lock,
                 const std::function<bool()> &done);
};

using State = FakeCuda::State;
using Lock = std::unique_lock<std::recursive_mutex>;

inline State &st() { return *gFake->state; }

inline FakeCall callNamed(const char *name) {
  FakeCall c;
  c.name = name;
  c.device = st().currentDevice();
  return c;
}

/// The stream of a handle, checked to belong to the current device.
inline State::Stream *streamOf(CUstream handle, CUresult &rc) {
  State &s = st();
  auto it = s.streams.find(reinterpret_cast<State::Stream *>(handle));
  if (it == s.streams.end()) {
    rc = kInvalidHandle;
    return nullptr;
  }
  if (it->second->device != s.currentDevice()) {
    rc = kInvalidContext;
    return nullptr;
  }
  rc = kSuccess;
  return it->second.get();
}

} // namespace volt::cuda::testing
