//===- FakeNccl.cpp - FakeCuda's NCCL entry points ------------------------===//
//
// One function per line of runtime/cuda/NcclSymbols.def. Collectives are
// queued on their stream like any work, and run when every rank's stream
// has reached its part (FakeCudaQueue.cpp).
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda/FakeCudaState.h"

#include <algorithm>

namespace volt::cuda::testing {
namespace {

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

} // namespace volt::cuda::testing
