//===- FakeCudaQueue.cpp - FakeCuda's device side: running queued work ----===//
//
// Work runs when the host waits for it: the head of a stream's queue runs,
// a collective once every rank's stream has reached its part.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaState.h"

#include "runtime/numerics/Half.h"

#include <gtest/gtest.h>

#include <cstring>

namespace volt::cuda::testing {

uint8_t *FakeCuda::State::bytesAt(int device, uint64_t at, uint64_t bytes,
                                  const std::string &what) {
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

CUresult FakeCuda::State::execute(Op &op) {
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
      uint64_t to = (c.dstMemoryType == kMemoryTypeDevice ? c.dstDevice
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

CUresult FakeCuda::State::collective(std::vector<Stream *> &members) {
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

CUresult FakeCuda::State::runHead(Stream &s, std::unique_lock<std::recursive_mutex> &lock) {
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
           std::to_string(kCollectiveWait.count()) + " s for its peers: they never issued theirs");
      s.queue.pop_front();
      return kUnknown;
    }
  }
}

CUresult FakeCuda::State::drive(Stream &s, std::unique_lock<std::recursive_mutex> &lock,
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

} // namespace volt::cuda::testing
