//===- FakeDriver.cpp - FakeCuda's CUDA driver entry points ---------------===//
//
// One function per line of runtime/cuda/CudaSymbols.def, each looking up its
// handles first (a destroyed or foreign one is CUDA_ERROR_INVALID_HANDLE,
// never a crash) and recording the call.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaState.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace volt::cuda::testing {
namespace {

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
  if (device >= 0 && gFake->fillDeviceMemory)
    std::memset(p, *gFake->fillDeviceMemory, bytes);
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
CUresult fakeModuleLoadDataEx(CUmodule *module, const void *image, unsigned count, int *options,
                              void **values) {
  {
    State &s = st();
    Lock lock(s.mutex);
    s.log.push_back(callNamed("cuModuleLoadDataEx"));
    if (!gFake->jitErrorLog.empty()) {
      // The driver's PTX compiler refuses the text: its log goes to the
      // caller's buffer, NUL-terminated within the size given.
      char *buffer = nullptr;
      size_t size = 0;
      for (unsigned i = 0; i < count; ++i) {
        if (options[i] == kJitErrorLogBuffer)
          buffer = static_cast<char *>(values[i]);
        if (options[i] == kJitErrorLogBufferSizeBytes)
          size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
      }
      if (buffer && size > 0) {
        const size_t n = std::min(size - 1, gFake->jitErrorLog.size());
        std::memcpy(buffer, gFake->jitErrorLog.data(), n);
        buffer[n] = '\0';
      }
      return kInvalidPtx;
    }
  }
  return fakeModuleLoadData(module, image);
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
  op.launch.sharedBytes = shared;
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

} // namespace

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
  d->cuModuleLoadDataEx = fakeModuleLoadDataEx;
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

} // namespace volt::cuda::testing
