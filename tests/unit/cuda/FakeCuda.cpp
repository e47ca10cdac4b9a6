//===- FakeCuda.cpp - a CUDA driver and NCCL that record, for tests -------===//
//
// FakeCuda.h says what is emulated. Handles are pointers to the objects
// below; every handle passed in is looked up first, so a destroyed or
// foreign one is CUDA_ERROR_INVALID_HANDLE rather than a crash.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCuda.h"

#include "runtime/numerics/Half.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace volt::cuda::testing {
namespace {

// cuda.h's values of the codes the fake returns.
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidContext = 201,
                   kInvalidImage = 200, kInvalidHandle = 400, kNotFound = 500, kNotReady = 600,
                   kIllegalAddress = 700, kCaptureUnsupported = 900, kCaptureInvalidated = 901,
                   kUnknown = 999;
constexpr NcclResult kNcclInvalidArgument = 4, kNcclInternalError = 3;
/// How long a collective waits for a peer's thread to enqueue its part.
constexpr auto kCollectiveWait = std::chrono::seconds(20);

/// The fake the entry points serve.
FakeCuda *gFake = nullptr;

const char *errorName(CUresult code) {
  switch (code) {
  case kSuccess:
    return "CUDA_SUCCESS";
  case kInvalidValue:
    return "CUDA_ERROR_INVALID_VALUE";
  case kOutOfMemory:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case kInvalidImage:
    return "CUDA_ERROR_INVALID_IMAGE";
  case kInvalidContext:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case kInvalidHandle:
    return "CUDA_ERROR_INVALID_HANDLE";
  case kNotFound:
    return "CUDA_ERROR_NOT_FOUND";
  case kNotReady:
    return "CUDA_ERROR_NOT_READY";
  case kIllegalAddress:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case kCaptureUnsupported:
    return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case kCaptureInvalidated:
    return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  default:
    return nullptr;
  }
}

} // namespace

size_t FakeGraph::launches() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const FakeCall &c) { return c.name == "cuLaunchKernel"; }));
}

size_t FakeGraph::collectives() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const FakeCall &c) { return c.name.rfind("nccl", 0) == 0; }));
}

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
  uint8_t *bytesAt(int device, uint64_t at, uint64_t bytes, const std::string &what) {
    auto it = memory.upper_bound(at);
    if (it != memory.begin()) {
      --it;
      if (at >= it->first && bytes <= it->second.bytes &&
          at - it->first <= it->second.bytes - bytes) {
        if (it->second.device == device)
          return reinterpret_cast<uint8_t *>(at);
        fail(what + ": " + std::to_string(bytes) + " bytes at 0x" + hex(at) + " lie in memory of " +
             where(it->second.device) + ", not of " + where(device));
        return nullptr;
      }
    }
    fail(what + ": " + std::to_string(bytes) + " bytes at 0x" + hex(at) + " are outside every " +
         "allocation of " + where(device));
    return nullptr;
  }
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

  CUresult execute(Op &op) {
    switch (op.kind) {
    case Op::Launch:
      ++executedLaunches;
      if (gFake->onLaunch)
        gFake->onLaunch(op.launch);
      return kSuccess;
    case Op::Copy: {
      uint8_t *dst = bytesAt(op.dstDevice, op.dst, op.bytes, "copy destination");
      uint8_t *src = bytesAt(op.srcDevice, op.src, op.bytes, "copy source");
      if (!dst || !src)
        return kIllegalAddress;
      std::memmove(dst, src, op.bytes);
      return kSuccess;
    }
    case Op::Copy2D: {
      const CudaMemcpy2D &c = op.copy;
      for (size_t y = 0; y < c.height; ++y) {
        uint64_t from =
            (c.srcMemoryType == kMemoryTypeDevice ? c.srcDevice
                                                  : reinterpret_cast<uint64_t>(c.srcHost)) +
            (c.srcY + y) * c.srcPitch + c.srcXInBytes;
        uint64_t to =
            (c.dstMemoryType == kMemoryTypeDevice ? c.dstDevice
                                                  : reinterpret_cast<uint64_t>(c.dstHost)) +
            (c.dstY + y) * c.dstPitch + c.dstXInBytes;
        uint8_t *dst = bytesAt(c.dstMemoryType == kMemoryTypeDevice ? op.dstDevice : -1, to,
                               c.widthInBytes, "2D copy destination row " + std::to_string(y));
        uint8_t *src = bytesAt(c.srcMemoryType == kMemoryTypeDevice ? op.srcDevice : -1, from,
                               c.widthInBytes, "2D copy source row " + std::to_string(y));
        if (!dst || !src)
          return kIllegalAddress;
        std::memmove(dst, src, c.widthInBytes);
      }
      return kSuccess;
    }
    case Op::Memset: {
      uint8_t *dst = bytesAt(op.dstDevice, op.dst, op.bytes, "memset");
      if (!dst)
        return kIllegalAddress;
      std::memset(dst, op.value, op.bytes);
      return kSuccess;
    }
    case Op::Record:
      if (events.count(op.event) && op.event->generation == op.generation)
        op.event->pending = false;
      return kSuccess;
    case Op::AllReduce:
    case Op::AllGather:
      break;
    }
    return kUnknown;
  }

  /// Runs the collective at the head of each rank's stream.
  CUresult collective(std::vector<Stream *> &members) {
    std::vector<Op> ops;
    for (Stream *m : members) {
      ops.push_back(std::move(m->queue.front()));
      m->queue.pop_front();
    }
    const Op &first = ops.front();
    for (const Op &o : ops)
      if (o.kind != first.kind || o.bytes != first.bytes || o.type != first.type) {
        fail("collective " + std::to_string(first.seq) + " of communicator " +
             std::to_string(first.clique) + " differs between ranks (kind, count or type)");
        return kIllegalAddress;
      }
    const uint64_t elem = first.type == kNcclFloat32 ? 4 : 2, n = first.bytes;
    const size_t ranks = ops.size();
    std::vector<uint8_t *> src(ranks), dst(ranks);
    const uint64_t outBytes = (first.kind == Op::AllGather ? ranks : 1) * n * elem;
    for (size_t r = 0; r < ranks; ++r) {
      src[r] = bytesAt(members[r]->device, ops[r].src, n * elem, "collective input");
      dst[r] = bytesAt(members[r]->device, ops[r].dst, outBytes, "collective output");
      if (!src[r] || !dst[r])
        return kIllegalAddress;
    }
    std::vector<uint8_t> out(outBytes);
    if (first.kind == Op::AllGather) {
      for (size_t r = 0; r < ranks; ++r)
        std::memcpy(out.data() + r * n * elem, src[r], n * elem);
    } else {
      for (uint64_t i = 0; i < n; ++i) {
        float sum = 0;
        for (size_t r = 0; r < ranks; ++r) {
          if (elem == 4) {
            float v;
            std::memcpy(&v, src[r] + i * 4, 4);
            sum += v;
          } else {
            uint16_t h;
            std::memcpy(&h, src[r] + i * 2, 2);
            sum += volt::halfToFloat(h);
          }
        }
        if (elem == 4) {
          std::memcpy(out.data() + i * 4, &sum, 4);
        } else {
          uint16_t h = volt::floatToHalf(sum);
          std::memcpy(out.data() + i * 2, &h, 2);
        }
      }
    }
    for (size_t r = 0; r < ranks; ++r)
      std::memcpy(dst[r], out.data(), outBytes);
    return kSuccess;
  }

  /// Runs the head of `s`'s queue; a collective first brings every peer's
  /// stream to its part (waiting for a peer thread to enqueue it).
  CUresult runHead(Stream &s, std::unique_lock<std::recursive_mutex> &lock) {
    if (s.queue.front().kind != Op::AllReduce && s.queue.front().kind != Op::AllGather) {
      Op op = std::move(s.queue.front());
      s.queue.pop_front();
      return execute(op);
    }
    const Op key = s.queue.front();
    const auto deadline = std::chrono::steady_clock::now() + kCollectiveWait;
    for (;;) {
      if (s.queue.empty() || s.queue.front().id != key.id)
        return kSuccess; // another thread ran it meanwhile
      std::vector<Stream *> members(static_cast<size_t>(key.ranks), nullptr);
      members[static_cast<size_t>(key.rank)] = &s;
      bool missing = false, advanced = false;
      for (int r = 0; r < key.ranks && !advanced; ++r) {
        if (r == key.rank)
          continue;
        Stream *peer = nullptr;
        bool atHead = false;
        for (auto &[p, other] : streams)
          for (size_t i = 0; i < other->queue.size() && !peer; ++i) {
            const Op &o = other->queue[i];
            if ((o.kind == Op::AllReduce || o.kind == Op::AllGather) && o.clique == key.clique &&
                o.rank == r && o.seq == key.seq) {
              peer = other.get();
              atHead = i == 0;
            }
          }
        if (!peer) {
          missing = true;
        } else if (!atHead) {
          if (CUresult rc = runHead(*peer, lock))
            return rc;
          advanced = true;
        } else {
          members[static_cast<size_t>(r)] = peer;
        }
      }
      if (advanced)
        continue;
      if (!missing)
        return collective(members);
      if (changed.wait_until(lock, deadline) == std::cv_status::timeout) {
        fail("a collective on device " + std::to_string(s.device) + " waited " +
             std::to_string(kCollectiveWait.count()) +
             " s for its peers: they never issued theirs");
        s.queue.pop_front();
        return kUnknown;
      }
    }
  }

  /// Runs `s`'s queued work until `done` holds.
  CUresult drive(Stream &s, std::unique_lock<std::recursive_mutex> &lock,
                 const std::function<bool()> &done) {
    // A faulted device runs nothing more, as a GPU whose context took a
    // fault: its queued work is dropped.
    if (faulted[static_cast<size_t>(s.device)]) {
      s.queue.clear();
      return kIllegalAddress;
    }
    while (!done()) {
      if (s.queue.empty()) {
        fail("waiting on device " + std::to_string(s.device) + " for work never queued");
        return kUnknown;
      }
      if (CUresult rc = runHead(s, lock)) {
        faulted[static_cast<size_t>(s.device)] = true;
        return rc;
      }
    }
    return faulted[static_cast<size_t>(s.device)] ? kIllegalAddress : kSuccess;
  }
};

namespace {

using State = FakeCuda::State;
using Lock = std::unique_lock<std::recursive_mutex>;

State &st() { return *gFake->state; }

FakeCall callNamed(const char *name) {
  FakeCall c;
  c.name = name;
  c.device = st().currentDevice();
  return c;
}

/// The stream of a handle, checked to belong to the current device.
State::Stream *streamOf(CUstream handle, CUresult &rc) {
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

// Device and context.

CUresult fakeInit(unsigned) { return kSuccess; }
CUresult fakeDriverGetVersion(int *v) {
  *v = 12040;
  return kSuccess;
}
CUresult fakeGetErrorName(CUresult code, const char **name) {
  *name = errorName(code);
  return *name ? kSuccess : kInvalidValue;
}
CUresult fakeGetErrorString(CUresult code, const char **text) {
  *text = errorName(code) ? "(fake CUDA)" : nullptr;
  return *text ? kSuccess : kInvalidValue;
}
CUresult fakeDeviceGetCount(int *n) {
  *n = st().devices;
  return kSuccess;
}
CUresult fakeDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= st().devices)
    return kInvalidValue;
  *d = ordinal;
  return kSuccess;
}
CUresult fakeDeviceGetName(char *name, int length, CUdevice d) {
  std::snprintf(name, static_cast<size_t>(length), "Fake V100 %d", d);
  return kSuccess;
}
CUresult fakeDeviceGetAttribute(int *value, int attribute, CUdevice d) {
  if (d < 0 || d >= st().devices)
    return kInvalidValue;
  const int cc = gFake->computeCapability[static_cast<size_t>(d)];
  switch (attribute) {
  case kAttrComputeCapabilityMajor:
    *value = cc / 10;
    return kSuccess;
  case kAttrComputeCapabilityMinor:
    *value = cc % 10;
    return kSuccess;
  case kAttrMultiprocessorCount:
    *value = 80;
    return kSuccess;
  case kAttrMaxSharedMemoryPerBlockOptin:
    *value = 96 << 10;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}
CUresult fakeDeviceTotalMem(size_t *bytes, CUdevice) {
  *bytes = gFake->totalMemory;
  return kSuccess;
}
CUresult fakePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
  Lock lock(st().mutex);
  if (d < 0 || d >= st().devices)
    return kInvalidValue;
  State::Context &c = *st().contexts[static_cast<size_t>(d)];
  ++c.retained;
  *ctx = reinterpret_cast<CUcontext>(&c);
  return kSuccess;
}
CUresult fakePrimaryCtxRelease(CUdevice d) {
  Lock lock(st().mutex);
  if (d < 0 || d >= st().devices || st().contexts[static_cast<size_t>(d)]->retained == 0)
    return kInvalidContext;
  --st().contexts[static_cast<size_t>(d)]->retained;
  return kSuccess;
}
CUresult fakeCtxSetCurrent(CUcontext ctx) {
  Lock lock(st().mutex);
  for (const auto &c : st().contexts)
    if (reinterpret_cast<CUcontext>(c.get()) == ctx) {
      if (c->retained == 0)
        return kInvalidContext;
      State::current() = {st().generation, c->device};
      return kSuccess;
    }
  return kInvalidContext;
}
CUresult fakeCtxSynchronize() {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuCtxSynchronize"));
  if (s.forbiddenInCapture("cuCtxSynchronize"))
    return kCaptureUnsupported;
  const int device = s.currentDevice();
  if (device < 0)
    return kInvalidContext;
  for (auto &[key, stream] : s.streams)
    if (stream->device == device)
      if (CUresult rc = s.drive(*stream, lock, [&] { return stream->queue.empty(); }))
        return rc;
  return kSuccess;
}

// Memory.

CUresult fakeMemGetInfo(size_t *freeBytes, size_t *total) {
  Lock lock(st().mutex);
  const int device = st().currentDevice();
  if (device < 0)
    return kInvalidContext;
  const uint64_t used = gFake->usedByOthers + gFake->allocatedBytes(device);
  *total = gFake->totalMemory;
  *freeBytes = used >= *total ? 0 : *total - used;
  return kSuccess;
}
void *mapBytes(uint64_t bytes) {
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
CUresult allocate(uint64_t bytes, int device, void **out) {
  State &s = st();
  if (bytes == 0)
    return kInvalidValue;
  if (device >= 0) {
    size_t freeBytes = 0, total = 0;
    fakeMemGetInfo(&freeBytes, &total);
    if (bytes > freeBytes)
      return kOutOfMemory;
  }
  void *p = mapBytes(bytes);
  if (!p)
    return kOutOfMemory;
  s.memory[reinterpret_cast<uint64_t>(p)] = {bytes, device};
  *out = p;
  return kSuccess;
}
CUresult release(uint64_t at, bool pinned) {
  State &s = st();
  auto it = s.memory.find(at);
  if (it == s.memory.end() || (it->second.device < 0) != pinned)
    return kInvalidValue;
  munmap(reinterpret_cast<void *>(at), it->second.bytes);
  s.memory.erase(it);
  return kSuccess;
}
CUresult fakeMemAlloc(CUdeviceptr *p, size_t bytes) {
  State &s = st();
  Lock lock(s.mutex);
  FakeCall call = callNamed("cuMemAlloc");
  call.count = bytes;
  s.log.push_back(call);
  if (s.forbiddenInCapture("cuMemAlloc"))
    return kCaptureUnsupported;
  if (s.currentDevice() < 0)
    return kInvalidContext;
  void *out = nullptr;
  CUresult rc = allocate(bytes, s.currentDevice(), &out);
  *p = reinterpret_cast<CUdeviceptr>(out);
  return rc;
}
CUresult fakeMemFree(CUdeviceptr p) {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("cuMemFree"));
  if (st().forbiddenInCapture("cuMemFree"))
    return kCaptureUnsupported;
  return release(p, false);
}
CUresult fakeMemAllocHost(void **p, size_t bytes) {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("cuMemAllocHost"));
  if (st().forbiddenInCapture("cuMemAllocHost"))
    return kCaptureUnsupported;
  if (st().currentDevice() < 0)
    return kInvalidContext;
  return allocate(bytes, -1, p);
}
CUresult fakeMemFreeHost(void *p) {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("cuMemFreeHost"));
  return release(reinterpret_cast<uint64_t>(p), true);
}
CUresult fakeMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  State &s = st();
  Lock lock(s.mutex);
  FakeCall call = callNamed("cuMemcpyHtoD");
  call.count = bytes;
  s.log.push_back(call);
  if (s.forbiddenInCapture("cuMemcpyHtoD"))
    return kCaptureUnsupported;
  uint8_t *to = s.bytesAt(s.currentDevice(), dst, bytes, "cuMemcpyHtoD destination");
  if (!to)
    return kIllegalAddress;
  std::memcpy(to, src, bytes);
  return kSuccess;
}
CUresult fakeMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  State &s = st();
  Lock lock(s.mutex);
  FakeCall call = callNamed("cuMemcpyDtoH");
  call.count = bytes;
  s.log.push_back(call);
  if (s.forbiddenInCapture("cuMemcpyDtoH"))
    return kCaptureUnsupported;
  uint8_t *from = s.bytesAt(s.currentDevice(), src, bytes, "cuMemcpyDtoH source");
  if (!from)
    return kIllegalAddress;
  std::memcpy(dst, from, bytes);
  return kSuccess;
}
CUresult enqueueCopy(const char *name, uint64_t dst, int dstSide, uint64_t src, int srcSide,
                     size_t bytes, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  // Sides: 0 the stream's device, -1 pinned host memory.
  State::Op op;
  op.kind = State::Op::Copy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  op.dstDevice = dstSide < 0 ? -1 : target->device;
  op.srcDevice = srcSide < 0 ? -1 : target->device;
  // Checked now as well as when run, so that the test names the call.
  if (!s.bytesAt(op.dstDevice, dst, bytes, std::string(name) + " destination") ||
      !s.bytesAt(op.srcDevice, src, bytes, std::string(name) + " source"))
    return kIllegalAddress;
  FakeCall call = callNamed(name);
  call.count = bytes;
  if (int failed = s.injected(call, *target))
    return failed;
  s.enqueue(*target, std::move(op), std::move(call));
  return kSuccess;
}
CUresult fakeMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream) {
  return enqueueCopy("cuMemcpyHtoDAsync", dst, 0, reinterpret_cast<uint64_t>(src), -1, bytes,
                     stream);
}
CUresult fakeMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return enqueueCopy("cuMemcpyDtoHAsync", reinterpret_cast<uint64_t>(dst), -1, src, 0, bytes,
                     stream);
}
CUresult fakeMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return enqueueCopy("cuMemcpyDtoDAsync", dst, 0, src, 0, bytes, stream);
}
CUresult fakeMemcpy2DAsync(const CudaMemcpy2D *copy, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  State::Op op;
  op.kind = State::Op::Copy2D;
  op.copy = *copy;
  op.dstDevice = op.srcDevice = target->device;
  FakeCall call = callNamed("cuMemcpy2DAsync");
  call.count = copy->widthInBytes * copy->height;
  if (copy->widthInBytes > copy->srcPitch || copy->widthInBytes > copy->dstPitch) {
    s.fail("cuMemcpy2DAsync: rows of " + std::to_string(copy->widthInBytes) +
           " bytes wider than a pitch");
    return kInvalidValue;
  }
  s.enqueue(*target, std::move(op), std::move(call));
  return kSuccess;
}
CUresult fakeMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  State::Op op;
  op.kind = State::Op::Memset;
  op.dst = dst;
  op.bytes = bytes;
  op.value = value;
  op.dstDevice = target->device;
  FakeCall call = callNamed("cuMemsetD8Async");
  call.count = bytes;
  s.enqueue(*target, std::move(op), std::move(call));
  return kSuccess;
}

// Modules.

/// The bytes of a module image: an ELF file's extent from its headers, or
/// a NUL-terminated PTX text.
std::string imageBytes(const void *image) {
  const auto *b = static_cast<const uint8_t *>(image);
  if (std::memcmp(b,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return std::string(static_cast<const char *>(image));
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, b + at, 8);
    return v;
  };
  auto u16 = [&](size_t at) {
    uint16_t v;
    std::memcpy(&v, b + at, 2);
    return v;
  };
  const uint64_t shoff = u64(0x28), phoff = u64(0x20);
  const uint16_t shentsize = u16(0x3a), shnum = u16(0x3c), phentsize = u16(0x36), phnum = u16(0x38);
  uint64_t end =
      std::max<uint64_t>(shoff + uint64_t{shentsize} * shnum, phoff + uint64_t{phentsize} * phnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const size_t h = shoff + size_t{i} * shentsize;
    uint32_t type;
    std::memcpy(&type, b + h + 4, 4);
    if (type != 8) // SHT_NOBITS occupies no file bytes
      end = std::max(end, u64(h + 0x18) + u64(h + 0x20));
  }
  return std::string(reinterpret_cast<const char *>(b), end);
}
CUresult fakeModuleLoadData(CUmodule *module, const void *image) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuModuleLoadData"));
  if (s.forbiddenInCapture("cuModuleLoadData"))
    return kCaptureUnsupported;
  const int device = s.currentDevice();
  if (device < 0)
    return kInvalidContext;
  if (!image)
    return kInvalidValue;
  auto m = std::make_unique<State::Module>();
  m->device = device;
  m->ordinal = s.modulesLoaded[static_cast<size_t>(device)]++;
  m->image = imageBytes(image);
  if (m->image.empty())
    return kInvalidImage;
  s.moduleFunctions[static_cast<size_t>(device)].emplace_back();
  *module = reinterpret_cast<CUmodule>(m.get());
  s.modules[m.get()] = std::move(m);
  return kSuccess;
}
CUresult fakeModuleUnload(CUmodule module) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuModuleUnload"));
  auto it = s.modules.find(reinterpret_cast<State::Module *>(module));
  if (it == s.modules.end())
    return kInvalidHandle;
  for (auto &[name, f] : it->second->functions)
    s.functions.erase(f.get());
  s.modules.erase(it);
  return kSuccess;
}
CUresult fakeModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  State &s = st();
  Lock lock(s.mutex);
  auto it = s.modules.find(reinterpret_cast<State::Module *>(module));
  if (it == s.modules.end())
    return kInvalidHandle;
  State::Module &m = *it->second;
  // Kernels are looked up by name: it must be in the image (a cubin's
  // symbol table, a PTX .entry).
  if (m.image.find(name) == std::string::npos)
    return kNotFound;
  auto &f = m.functions[name];
  if (!f) {
    f = std::make_unique<State::Function>(State::Function{&m, name});
    s.functions.insert(f.get());
    auto &names = s.moduleFunctions[static_cast<size_t>(m.device)][static_cast<size_t>(m.ordinal)];
    names += (names.empty() ? "" : ",") + std::string(name);
  }
  *function = reinterpret_cast<CUfunction>(f.get());
  return kSuccess;
}
CUresult fakeFuncSetAttribute(CUfunction function, int attribute, int value) {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("cuFuncSetAttribute"));
  auto *f = reinterpret_cast<State::Function *>(function);
  if (!st().functions.count(f))
    return kInvalidHandle;
  if (attribute != kFuncAttrMaxDynamicSharedSizeBytes || value < 0 || value > (96 << 10))
    return kInvalidValue;
  f->maxDynamicShared = value;
  return kSuccess;
}
CUresult fakeLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, CUstream stream,
                          void **kernelParams, void **extra) {
  State &s = st();
  Lock lock(s.mutex);
  auto *f = reinterpret_cast<State::Function *>(function);
  if (!s.functions.count(f))
    return kInvalidHandle;
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  if (f->module->device != target->device)
    return kInvalidContext;
  if (kernelParams || !extra)
    return kInvalidValue; // the backend passes one packed buffer
  const uint8_t *buffer = nullptr;
  size_t size = 0;
  for (size_t i = 0; extra[i] != kLaunchParamEnd; i += 2) {
    if (extra[i] == kLaunchParamBufferPointer)
      buffer = static_cast<const uint8_t *>(extra[i + 1]);
    else if (extra[i] == kLaunchParamBufferSize)
      size = *static_cast<const size_t *>(extra[i + 1]);
    else
      return kInvalidValue;
  }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024 ||
      (size && !buffer))
    return kInvalidValue;
  if (shared > static_cast<unsigned>(f->maxDynamicShared)) {
    s.fail("launching " + f->name + " with " + std::to_string(shared) +
           " bytes of dynamic shared memory, above its limit of " +
           std::to_string(f->maxDynamicShared) + " (cuFuncSetAttribute)");
    return kInvalidValue;
  }
  State::Op op;
  op.kind = State::Op::Launch;
  op.launch.device = target->device;
  op.launch.kernel = f->name;
  op.launch.module = f->module->ordinal;
  op.launch.grid = {gx, gy, gz};
  op.launch.block = {bx, by, bz};
  op.launch.params.assign(buffer, buffer + size);
  FakeCall call = callNamed("cuLaunchKernel");
  call.kernel = f->name;
  call.module = f->module->ordinal;
  call.grid = op.launch.grid;
  call.block = op.launch.block;
  call.params = op.launch.params;
  if (int failed = s.injected(call, *target))
    return failed;
  s.enqueue(*target, std::move(op), std::move(call));
  return kSuccess;
}

// Streams and events.

CUresult fakeStreamCreate(CUstream *stream, unsigned) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuStreamCreate"));
  if (s.currentDevice() < 0)
    return kInvalidContext;
  auto created = std::make_unique<State::Stream>();
  created->device = s.currentDevice();
  *stream = reinterpret_cast<CUstream>(created.get());
  s.streams[created.get()] = std::move(created);
  return kSuccess;
}
CUresult fakeStreamDestroy(CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuStreamDestroy"));
  auto it = s.streams.find(reinterpret_cast<State::Stream *>(stream));
  if (it == s.streams.end())
    return kInvalidHandle;
  // As on a GPU, queued work still runs.
  State::Stream &target = *it->second;
  s.drive(target, lock, [&] { return target.queue.empty(); });
  for (auto &[key, e] : s.events)
    if (e->stream == &target)
      e->stream = nullptr;
  s.streams.erase(reinterpret_cast<State::Stream *>(stream));
  return kSuccess;
}
CUresult fakeStreamSynchronize(CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuStreamSynchronize"));
  if (s.forbiddenInCapture("cuStreamSynchronize"))
    return kCaptureUnsupported;
  auto it = s.streams.find(reinterpret_cast<State::Stream *>(stream));
  if (it == s.streams.end())
    return kInvalidHandle;
  State::Stream &target = *it->second;
  return s.drive(target, lock, [&] { return target.queue.empty(); });
}
CUresult fakeEventCreate(CUevent *event, unsigned) {
  State &s = st();
  Lock lock(s.mutex);
  if (s.currentDevice() < 0)
    return kInvalidContext;
  auto e = std::make_unique<State::Event>();
  e->device = s.currentDevice();
  *event = reinterpret_cast<CUevent>(e.get());
  s.events[e.get()] = std::move(e);
  return kSuccess;
}
CUresult fakeEventDestroy(CUevent event) {
  Lock lock(st().mutex);
  return st().events.erase(reinterpret_cast<State::Event *>(event)) ? kSuccess : kInvalidHandle;
}
CUresult fakeEventRecord(CUevent event, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  auto it = s.events.find(reinterpret_cast<State::Event *>(event));
  if (it == s.events.end())
    return kInvalidHandle;
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  if (it->second->device != target->device)
    return kInvalidContext;
  if (target->capturing) {
    // Legal in CUDA, but such an event never completes for the host: the
    // backend records its events outside captures.
    s.fail("cuEventRecord on a capturing stream (device " + std::to_string(target->device) + ")");
    target->invalidated = true;
    return kCaptureUnsupported;
  }
  State::Op op;
  op.kind = State::Op::Record;
  op.event = it->second.get();
  s.enqueue(*target, std::move(op), callNamed("cuEventRecord"));
  return kSuccess;
}
CUresult fakeEventSynchronize(CUevent event) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuEventSynchronize"));
  if (s.forbiddenInCapture("cuEventSynchronize"))
    return kCaptureUnsupported;
  auto it = s.events.find(reinterpret_cast<State::Event *>(event));
  if (it == s.events.end())
    return kInvalidHandle;
  State::Event &e = *it->second;
  if (s.faulted[static_cast<size_t>(e.device)]) {
    if (e.stream)
      e.stream->queue.clear();
    return kIllegalAddress;
  }
  if (!e.pending)
    return kSuccess;
  return s.drive(*e.stream, lock, [&] { return !e.pending; });
}
CUresult fakeEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0;
  return kSuccess;
}
CUresult fakeEventQuery(CUevent event) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuEventQuery"));
  if (s.forbiddenInCapture("cuEventQuery"))
    return kCaptureUnsupported;
  auto it = s.events.find(reinterpret_cast<State::Event *>(event));
  if (it == s.events.end())
    return kInvalidHandle;
  if (s.faulted[static_cast<size_t>(it->second->device)])
    return kIllegalAddress;
  return it->second->pending ? kNotReady : kSuccess;
}

// Graphs.

CUresult fakeStreamBeginCapture(CUstream stream, int mode) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuStreamBeginCapture"));
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  if (target->capturing || mode < 0 || mode > 2)
    return kInvalidValue;
  target->capturing = true;
  target->invalidated = false;
  target->captureThread = std::this_thread::get_id();
  target->captured.clear();
  target->capturedCalls.clear();
  return kSuccess;
}
CUresult fakeStreamEndCapture(CUstream stream, CUgraph *graph) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuStreamEndCapture"));
  *graph = nullptr;
  auto it = s.streams.find(reinterpret_cast<State::Stream *>(stream));
  if (it == s.streams.end())
    return kInvalidHandle;
  State::Stream &target = *it->second;
  if (!target.capturing)
    return kInvalidValue;
  if (target.captureThread != std::this_thread::get_id())
    return kCaptureUnsupported; // thread-local capture: ended where begun
  target.capturing = false;
  auto nodes = std::move(target.captured);
  auto calls = std::move(target.capturedCalls);
  target.captured.clear();
  target.capturedCalls.clear();
  if (target.invalidated)
    return kCaptureInvalidated;
  if (gFake->endCaptureResult != kSuccess &&
      (gFake->endCaptureDevice < 0 || gFake->endCaptureDevice == target.device))
    return gFake->endCaptureResult;
  auto g = std::make_unique<State::Graph>();
  g->device = target.device;
  g->nodes = std::move(nodes);
  g->calls = std::move(calls);
  *graph = reinterpret_cast<CUgraph>(g.get());
  s.graphs[g.get()] = std::move(g);
  return kSuccess;
}
CUresult fakeGraphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("cuGraphInstantiateWithFlags"));
  auto it = s.graphs.find(reinterpret_cast<State::Graph *>(graph));
  if (it == s.graphs.end())
    return kInvalidHandle;
  auto e = std::make_unique<State::Graph>(*it->second);
  for (State::Op &op : e->nodes)
    op.launch.fromGraph = true;
  s.instantiated.push_back(FakeGraph{e->device, e->calls});
  *exec = reinterpret_cast<CUgraphExec>(e.get());
  s.execs[e.get()] = std::move(e);
  return kSuccess;
}
CUresult fakeGraphLaunch(CUgraphExec exec, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  auto it = s.execs.find(reinterpret_cast<State::Graph *>(exec));
  if (it == s.execs.end())
    return kInvalidHandle;
  CUresult rc;
  State::Stream *target = streamOf(stream, rc);
  if (!target)
    return rc;
  if (target->capturing || it->second->device != target->device)
    return kInvalidValue;
  if (int failed = s.injected(callNamed("cuGraphLaunch"), *target))
    return failed;
  s.log.push_back(callNamed("cuGraphLaunch"));
  for (const State::Op &node : it->second->nodes) {
    State::Op op = node;
    op.id = s.nextOp++;
    if (op.kind == State::Op::AllReduce || op.kind == State::Op::AllGather)
      op.seq = s.nextSeq(op);
    target->queue.push_back(std::move(op));
  }
  s.changed.notify_all();
  return kSuccess;
}
CUresult fakeGraphExecDestroy(CUgraphExec exec) {
  Lock lock(st().mutex);
  // Safe while launched: the launch queued copies of the nodes.
  return st().execs.erase(reinterpret_cast<State::Graph *>(exec)) ? kSuccess : kInvalidHandle;
}
CUresult fakeGraphDestroy(CUgraph graph) {
  Lock lock(st().mutex);
  return st().graphs.erase(reinterpret_cast<State::Graph *>(graph)) ? kSuccess : kInvalidHandle;
}

// NCCL.

NcclResult ncclVersion(int *v) {
  *v = 21903;
  return 0;
}
const char *ncclError(NcclResult code) {
  switch (code) {
  case kNcclInternalError:
    return "internal error (fake NCCL)";
  case kNcclInvalidArgument:
    return "invalid argument (fake NCCL)";
  default:
    return "unknown result (fake NCCL)";
  }
}
NcclResult ncclInitAll(NcclComm *comms, int n, const int *devices) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("ncclCommInitAll"));
  if (n < 1)
    return kNcclInvalidArgument;
  const int clique = s.cliques++;
  for (int r = 0; r < n; ++r) {
    const int device = devices ? devices[r] : r;
    if (device < 0 || device >= s.devices)
      return kNcclInvalidArgument;
    auto c = std::make_unique<State::Comm>(State::Comm{clique, r, n, device, 0});
    comms[r] = reinterpret_cast<NcclComm>(c.get());
    s.comms[c.get()] = std::move(c);
  }
  return 0;
}
NcclResult ncclDestroy(NcclComm comm) {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("ncclCommDestroy"));
  return st().comms.erase(reinterpret_cast<State::Comm *>(comm)) ? 0 : kNcclInvalidArgument;
}
NcclResult ncclAbort(NcclComm handle) {
  State &s = st();
  Lock lock(s.mutex);
  s.log.push_back(callNamed("ncclCommAbort"));
  auto it = s.comms.find(reinterpret_cast<State::Comm *>(handle));
  if (it == s.comms.end())
    return kNcclInvalidArgument;
  // Its queued collectives end without running.
  for (auto &[key, stream] : s.streams)
    std::erase_if(stream->queue, [&](const State::Op &op) {
      return (op.kind == State::Op::AllReduce || op.kind == State::Op::AllGather) &&
             op.clique == it->second->clique && op.rank == it->second->rank;
    });
  s.comms.erase(it);
  s.changed.notify_all();
  return 0;
}
NcclResult enqueueCollective(const char *name, State::Op::Kind kind, const void *send, void *recv,
                             size_t count, int type, NcclComm handle, CUstream stream) {
  State &s = st();
  Lock lock(s.mutex);
  auto it = s.comms.find(reinterpret_cast<State::Comm *>(handle));
  if (it == s.comms.end())
    return kNcclInvalidArgument;
  const State::Comm &comm = *it->second;
  auto sit = s.streams.find(reinterpret_cast<State::Stream *>(stream));
  if (sit == s.streams.end() || sit->second->device != comm.device) {
    s.fail(std::string(name) + ": the stream is not on the communicator's device " +
           std::to_string(comm.device));
    return kNcclInvalidArgument;
  }
  if (type != kNcclFloat16 && type != kNcclFloat32)
    return kNcclInvalidArgument;
  State::Op op;
  op.kind = kind;
  op.src = reinterpret_cast<uint64_t>(send);
  op.dst = reinterpret_cast<uint64_t>(recv);
  op.bytes = count;
  op.type = type;
  op.clique = comm.clique;
  op.rank = comm.rank;
  op.ranks = comm.ranks;
  FakeCall call = callNamed(name);
  call.count = count;
  if (int failed = s.injected(call, *sit->second))
    return failed;
  s.enqueue(*sit->second, std::move(op), std::move(call));
  return 0;
}
NcclResult ncclReduce(const void *send, void *recv, size_t count, int type, int op, NcclComm comm,
                      CUstream stream) {
  if (op != kNcclSum)
    return kNcclInvalidArgument;
  return enqueueCollective("ncclAllReduce", State::Op::AllReduce, send, recv, count, type, comm,
                           stream);
}
NcclResult ncclGather(const void *send, void *recv, size_t count, int type, NcclComm comm,
                      CUstream stream) {
  return enqueueCollective("ncclAllGather", State::Op::AllGather, send, recv, count, type, comm,
                           stream);
}
NcclResult ncclGroupBegin() {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("ncclGroupStart"));
  return 0;
}
NcclResult ncclGroupFinish() {
  Lock lock(st().mutex);
  st().log.push_back(callNamed("ncclGroupEnd"));
  return 0;
}

} // namespace

FakeCuda::FakeCuda(int devices)
    : computeCapability(static_cast<size_t>(devices), 70), state(std::make_unique<State>(devices)) {
  EXPECT_EQ(gFake, nullptr) << "one FakeCuda at a time";
  gFake = this;
  state->modulesLoaded.assign(static_cast<size_t>(devices), 0);
  state->moduleFunctions.resize(static_cast<size_t>(devices));
  state->faulted.assign(static_cast<size_t>(devices), false);
}

FakeCuda::~FakeCuda() {
  if (int n = liveObjects())
    ADD_FAILURE() << "fake CUDA: " << n << " objects left alive: " << describeLive();
  for (auto &[at, a] : state->memory)
    munmap(reinterpret_cast<void *>(at), a.bytes);
  gFake = nullptr;
}

std::shared_ptr<CudaDriver> FakeCuda::driver() {
  auto d = CudaDriver::custom("libcuda.so.1 (fake)", 12040);
  d->cuInit = fakeInit;
  d->cuDriverGetVersion = fakeDriverGetVersion;
  d->cuGetErrorName = fakeGetErrorName;
  d->cuGetErrorString = fakeGetErrorString;
  d->cuDeviceGetCount = fakeDeviceGetCount;
  d->cuDeviceGet = fakeDeviceGet;
  d->cuDeviceGetName = fakeDeviceGetName;
  d->cuDeviceGetAttribute = fakeDeviceGetAttribute;
  d->cuDeviceTotalMem = fakeDeviceTotalMem;
  d->cuDevicePrimaryCtxRetain = fakePrimaryCtxRetain;
  d->cuDevicePrimaryCtxRelease = fakePrimaryCtxRelease;
  d->cuCtxSetCurrent = fakeCtxSetCurrent;
  d->cuCtxSynchronize = fakeCtxSynchronize;
  d->cuMemGetInfo = fakeMemGetInfo;
  d->cuMemAlloc = fakeMemAlloc;
  d->cuMemFree = fakeMemFree;
  d->cuMemAllocHost = fakeMemAllocHost;
  d->cuMemFreeHost = fakeMemFreeHost;
  d->cuMemcpyHtoD = fakeMemcpyHtoD;
  d->cuMemcpyDtoH = fakeMemcpyDtoH;
  d->cuMemcpyHtoDAsync = fakeMemcpyHtoDAsync;
  d->cuMemcpyDtoHAsync = fakeMemcpyDtoHAsync;
  d->cuMemcpyDtoDAsync = fakeMemcpyDtoDAsync;
  d->cuMemcpy2DAsync = fakeMemcpy2DAsync;
  d->cuMemsetD8Async = fakeMemsetD8Async;
  d->cuModuleLoadData = fakeModuleLoadData;
  d->cuModuleUnload = fakeModuleUnload;
  d->cuModuleGetFunction = fakeModuleGetFunction;
  d->cuFuncSetAttribute = fakeFuncSetAttribute;
  d->cuLaunchKernel = fakeLaunchKernel;
  d->cuStreamCreate = fakeStreamCreate;
  d->cuStreamDestroy = fakeStreamDestroy;
  d->cuStreamSynchronize = fakeStreamSynchronize;
  d->cuEventCreate = fakeEventCreate;
  d->cuEventDestroy = fakeEventDestroy;
  d->cuEventRecord = fakeEventRecord;
  d->cuEventSynchronize = fakeEventSynchronize;
  d->cuEventElapsedTime = fakeEventElapsedTime;
  d->cuEventQuery = fakeEventQuery;
  d->cuStreamBeginCapture = fakeStreamBeginCapture;
  d->cuStreamEndCapture = fakeStreamEndCapture;
  d->cuGraphInstantiateWithFlags = fakeGraphInstantiate;
  d->cuGraphLaunch = fakeGraphLaunch;
  d->cuGraphExecDestroy = fakeGraphExecDestroy;
  d->cuGraphDestroy = fakeGraphDestroy;
  return d;
}

std::shared_ptr<Nccl> FakeCuda::nccl() {
  auto n = Nccl::custom("libnccl.so.2 (fake)", 21903);
  n->ncclGetVersion = ncclVersion;
  n->ncclGetErrorString = ncclError;
  n->ncclCommInitAll = ncclInitAll;
  n->ncclCommDestroy = ncclDestroy;
  n->ncclCommAbort = ncclAbort;
  n->ncclAllReduce = ncclReduce;
  n->ncclAllGather = ncclGather;
  n->ncclGroupStart = ncclGroupBegin;
  n->ncclGroupEnd = ncclGroupFinish;
  return n;
}

void FakeCuda::fault(int device) {
  Lock lock(state->mutex);
  state->faulted.at(static_cast<size_t>(device)) = true;
}

std::vector<FakeCall> FakeCuda::calls() const {
  Lock lock(state->mutex);
  return state->log;
}

void FakeCuda::clearCalls() {
  Lock lock(state->mutex);
  state->log.clear();
}

size_t FakeCuda::count(const std::string &name) const {
  Lock lock(state->mutex);
  return static_cast<size_t>(std::count_if(state->log.begin(), state->log.end(),
                                           [&](const FakeCall &c) { return c.name == name; }));
}

size_t FakeCuda::directLaunches() const {
  Lock lock(state->mutex);
  return static_cast<size_t>(std::count_if(state->log.begin(), state->log.end(), [](auto &c) {
    return c.name == "cuLaunchKernel" && !c.capturing;
  }));
}

size_t FakeCuda::capturedLaunches() const {
  Lock lock(state->mutex);
  return static_cast<size_t>(std::count_if(state->log.begin(), state->log.end(), [](auto &c) {
    return c.name == "cuLaunchKernel" && c.capturing;
  }));
}

size_t FakeCuda::capturedCollectives() const {
  Lock lock(state->mutex);
  return static_cast<size_t>(std::count_if(state->log.begin(), state->log.end(), [](auto &c) {
    return c.name.rfind("nccl", 0) == 0 && c.capturing;
  }));
}

size_t FakeCuda::executedLaunches() const {
  Lock lock(state->mutex);
  return state->executedLaunches;
}

std::vector<FakeGraph> FakeCuda::graphs() const {
  Lock lock(state->mutex);
  return state->instantiated;
}

std::vector<std::string> FakeCuda::moduleFunctions(int device) const {
  Lock lock(state->mutex);
  return state->moduleFunctions.at(static_cast<size_t>(device));
}

std::vector<std::string> FakeCuda::errors() const {
  Lock lock(state->mutex);
  return state->errors;
}

uint8_t *FakeCuda::deviceBytes(int device, uint64_t at, uint64_t bytes, const std::string &what) {
  Lock lock(state->mutex);
  return state->bytesAt(device, at, bytes, what);
}

std::vector<int32_t> FakeCuda::readInts(int device, uint64_t at, size_t count) {
  std::vector<int32_t> out(count);
  if (const uint8_t *p = deviceBytes(device, at, count * 4, "readInts"))
    std::memcpy(out.data(), p, count * 4);
  return out;
}

std::vector<float> FakeCuda::readFloats(int device, uint64_t at, size_t count) {
  std::vector<float> out(count);
  if (const uint8_t *p = deviceBytes(device, at, count * 4, "readFloats"))
    std::memcpy(out.data(), p, count * 4);
  return out;
}

int FakeCuda::liveObjects() const {
  Lock lock(state->mutex);
  return state->live();
}

std::string FakeCuda::describeLive() const {
  Lock lock(state->mutex);
  const State &s = *state;
  int retained = 0;
  for (const auto &c : s.contexts)
    retained += c->retained;
  std::string out;
  auto add = [&](size_t n, const char *what) {
    if (n)
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(s.memory.size(), "allocations");
  add(s.modules.size(), "modules");
  add(s.streams.size(), "streams");
  add(s.events.size(), "events");
  add(s.graphs.size(), "graphs");
  add(s.execs.size(), "graph executables");
  add(static_cast<size_t>(retained), "retained contexts");
  add(s.comms.size(), "NCCL communicators");
  return out;
}

uint64_t FakeCuda::allocatedBytes(int device) const {
  Lock lock(state->mutex);
  uint64_t total = 0;
  for (const auto &[at, a] : state->memory)
    if (a.device == device)
      total += a.bytes;
  return total;
}

} // namespace volt::cuda::testing
