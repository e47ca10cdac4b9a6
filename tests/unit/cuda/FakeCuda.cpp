//===- FakeCuda.cpp - a CUDA driver and NCCL that record, for tests -------===//
//
// FakeCuda.h says what is emulated. The entry points are FakeDriver.cpp and
// FakeNccl.cpp, the device side FakeCudaQueue.cpp; here are the fake's own
// methods.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaState.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace volt::cuda::testing {

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
  case kInvalidPtx:
    return "CUDA_ERROR_INVALID_PTX";
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

size_t FakeGraph::launches() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const FakeCall &c) { return c.name == "cuLaunchKernel"; }));
}

size_t FakeGraph::collectives() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const FakeCall &c) { return c.name.rfind("nccl", 0) == 0; }));
}

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

std::map<uint64_t, uint64_t> FakeCuda::allocations(int device) const {
  Lock lock(state->mutex);
  std::map<uint64_t, uint64_t> out;
  for (const auto &[at, a] : state->memory)
    if (a.device == device)
      out[at] = a.bytes;
  return out;
}

} // namespace volt::cuda::testing
