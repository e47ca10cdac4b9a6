//===- StepProgram.cpp ----------------------------------------------------===//
#include "runtime/cuda/StepProgram.h"

#include "runtime/cuda/LaunchArgs.h"
#include "runtime/plan/Caches.h"
#include "runtime/plan/StepOperands.h"

#include <utility>

namespace volt::cuda {
namespace {

using plan::OperandKind;
using plan::OpKind;

} // namespace

Result<std::vector<StepAction>> buildStep(const RankView &rank, uint32_t tokens, uint32_t seqs,
                                          uint32_t logitsRows, plan::Program program) {
  const plan::Rank *pr = rank.plan;
  // Where an operand lies (plan::operandPlace): the region's device address
  // plus its offset.
  OperandAddress address = [&](const plan::Operand &o) -> Result<uint64_t> {
    VOLT_ASSIGN_OR_RETURN(plan::OperandPlace place, plan::operandPlace(*pr, o));
    switch (place.region) {
    case plan::Region::Arena:
      return rank.arena + place.offset;
    case plan::Region::Weights:
      return rank.weights + place.offset;
    case plan::Region::Input:
      return rank.inputs[static_cast<size_t>(place.input)];
    case plan::Region::Output:
      return rank.logits;
    case plan::Region::Cache:
      return rank.caches + place.offset;
    case plan::Region::Workspace:
      // The workspace follows the arena in the same allocation.
      return rank.arena + pr->arena_bytes() + place.offset;
    case plan::Region::Hidden:
      if (!rank.hidden)
        break;
      return rank.hidden;
    }
    return Error("internal error: an operand of an unknown region");
  };
  auto rows = [&](const plan::Operand *o) {
    return plan::operandRows(*pr, *o, tokens, logitsRows);
  };
  auto dtype = [&](const plan::Operand *o) { return plan::operandDtype(*pr, *o); };

  std::vector<StepAction> actions;
  const auto [firstOp, lastOp] = plan::programOps(*pr, program);
  for (uint32_t opIndex = firstOp; opIndex < lastOp; ++opIndex) {
    const plan::Op *op = pr->ops()->Get(opIndex);
    StepAction a;
    a.op = op->name() ? op->name()->str() : "?";
    const plan::Operand *first = op->operands()->Get(0);
    if (op->kind() == OpKind::AllReduce) {
      a.kind = StepAction::Kind::AllReduce;
      VOLT_ASSIGN_OR_RETURN(a.src, address(*first));
      a.dst = a.src;
      a.count = rows(first) * op->params_as_AllReduceParams()->dim();
      a.ncclType = dtype(first) == plan::DType::F32 ? kNcclFloat32 : kNcclFloat16;
      actions.push_back(std::move(a));
      continue;
    }
    if (op->kind() == OpKind::AllGather) {
      // NCCL concatenates the ranks' slices one after the other; the plan's
      // layout puts them side by side in each row: gather to the staging
      // buffer, then one strided copy per rank.
      const plan::Operand *out = op->operands()->Get(1);
      VOLT_ASSIGN_OR_RETURN(uint64_t in, address(*first));
      VOLT_ASSIGN_OR_RETURN(uint64_t dst, address(*out));
      const uint64_t n = rows(first), cols = op->params_as_AllGatherParams()->dim();
      const uint64_t elem = plan::dtypeBytes(dtype(first)), ranks = rank.ranks;
      a.kind = StepAction::Kind::AllGather;
      a.src = in;
      a.dst = rank.gather;
      a.count = n * cols;
      a.ncclType = elem == 4 ? kNcclFloat32 : kNcclFloat16;
      const std::string name = a.op;
      actions.push_back(std::move(a));
      for (uint64_t r = 0; r < ranks; ++r) {
        StepAction c;
        c.kind = StepAction::Kind::Copy2D;
        c.op = name;
        c.copy.srcMemoryType = kMemoryTypeDevice;
        c.copy.srcDevice = rank.gather + r * n * cols * elem;
        c.copy.srcPitch = cols * elem;
        c.copy.dstMemoryType = kMemoryTypeDevice;
        c.copy.dstDevice = dst + r * cols * elem;
        c.copy.dstPitch = ranks * cols * elem;
        c.copy.widthInBytes = cols * elem;
        c.copy.height = n;
        actions.push_back(std::move(c));
      }
      continue;
    }
    const plan::Launch *launch = selectLaunch(*op, tokens);
    if (!launch)
      return Error("op '" + a.op + "' has no kernel for a step of " + std::to_string(tokens) +
                   " tokens (the plan has no GPU launches: was it compiled for a GPU?)");
    if (launch->kernel() >= rank.functions.size())
      return Error("op '" + a.op + "' launches kernel " + std::to_string(launch->kernel()) +
                   " of " + std::to_string(rank.functions.size()));
    const uint64_t gx = gridExtent(launch->grid_x(), tokens, seqs, logitsRows),
                   gy = gridExtent(launch->grid_y(), tokens, seqs, logitsRows),
                   gz = gridExtent(launch->grid_z(), tokens, seqs, logitsRows);
    if (gx == 0 || gy == 0 || gz == 0)
      continue;
    VOLT_ASSIGN_OR_RETURN(a.params, packArguments(*launch, address, tokens, seqs, logitsRows));
    a.function = rank.functions[launch->kernel()];
    a.grid = {static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz)};
    a.block = {launch->block_x(), launch->block_y(), launch->block_z()};
    a.sharedBytes = launch->shared_bytes();
    actions.push_back(std::move(a));
  }
  return actions;
}

Status issueActions(const StreamTarget &target, std::span<const StepAction> actions) {
  CudaDriver &d = *target.driver;
  for (const StepAction &a : actions) {
    switch (a.kind) {
    case StepAction::Kind::Launch: {
      size_t size = a.params.size();
      void *extra[] = {kLaunchParamBufferPointer, const_cast<uint8_t *>(a.params.data()),
                       kLaunchParamBufferSize, &size, kLaunchParamEnd};
      VOLT_RETURN_IF_ERROR(d.check(d.cuLaunchKernel(a.function, a.grid[0], a.grid[1], a.grid[2],
                                                    a.block[0], a.block[1], a.block[2],
                                                    a.sharedBytes, target.stream, nullptr, extra),
                                   target.label + ": launching " + a.op));
      break;
    }
    case StepAction::Kind::AllReduce:
    case StepAction::Kind::AllGather: {
      if (!target.nccl)
        return Error(target.label + ": " + a.op + " is a collective and this plan has one rank");
      Nccl &n = *target.nccl;
      auto *src = reinterpret_cast<const void *>(a.src);
      auto *dst = reinterpret_cast<void *>(a.dst);
      if (a.kind == StepAction::Kind::AllReduce)
        VOLT_RETURN_IF_ERROR(n.check(
            n.ncclAllReduce(src, dst, a.count, a.ncclType, kNcclSum, target.comm, target.stream),
            target.label + ": " + a.op + " (all-reduce)"));
      else
        VOLT_RETURN_IF_ERROR(
            n.check(n.ncclAllGather(src, dst, a.count, a.ncclType, target.comm, target.stream),
                    target.label + ": " + a.op + " (all-gather)"));
      break;
    }
    case StepAction::Kind::Copy2D:
      VOLT_RETURN_IF_ERROR(d.check(d.cuMemcpy2DAsync(&a.copy, target.stream),
                                   target.label + ": " + a.op + " (columns)"));
      break;
    }
  }
  return Status::success();
}

Result<CapturedStep> CapturedStep::capture(const StreamTarget &target,
                                           std::vector<StepAction> actions) {
  CudaDriver &d = *target.driver;
  CapturedStep step;
  step.driver_ = &d;
  auto captureRun = [&](std::span<const StepAction> run) -> Status {
    VOLT_RETURN_IF_ERROR(
        d.check(d.cuStreamBeginCapture(target.stream, kStreamCaptureModeThreadLocal),
                target.label + ": cuStreamBeginCapture"));
    Status issued = issueActions(target, run);
    CUgraph graph = nullptr;
    // The capture is ended whatever happened, so that the stream leaves
    // capture mode; a failed capture may still hand back a graph.
    CUresult ended = d.cuStreamEndCapture(target.stream, &graph);
    if (!issued.ok() || ended != 0) {
      if (graph)
        d.cuGraphDestroy(graph);
      if (!issued.ok())
        return issued;
      return d.check(ended, target.label + ": cuStreamEndCapture");
    }
    CUgraphExec exec = nullptr;
    CUresult made = d.cuGraphInstantiateWithFlags(&exec, graph, 0);
    d.cuGraphDestroy(graph);
    VOLT_RETURN_IF_ERROR(d.check(made, target.label + ": cuGraphInstantiateWithFlags"));
    step.segments_.push_back(Segment{exec, {}});
    return Status::success();
  };
  size_t begin = 0;
  for (size_t i = 0; i <= actions.size(); ++i) {
    if (i < actions.size() && !actions[i].isCollective())
      continue;
    if (i > begin)
      VOLT_RETURN_IF_ERROR(
          captureRun(std::span<const StepAction>(actions).subspan(begin, i - begin)));
    if (i < actions.size())
      step.segments_.push_back(Segment{nullptr, std::move(actions[i])});
    begin = i + 1;
  }
  return step;
}

CapturedStep::CapturedStep(CapturedStep &&other) noexcept
    : driver_(other.driver_), segments_(std::move(other.segments_)) {
  other.segments_.clear();
}

CapturedStep &CapturedStep::operator=(CapturedStep &&other) noexcept {
  if (this != &other) {
    release();
    driver_ = other.driver_;
    segments_ = std::move(other.segments_);
    other.segments_.clear();
  }
  return *this;
}

CapturedStep::~CapturedStep() { release(); }

void CapturedStep::release() {
  for (Segment &s : segments_)
    if (s.graph)
      driver_->cuGraphExecDestroy(s.graph);
  segments_.clear();
}

Status CapturedStep::replay(const StreamTarget &target) const {
  CudaDriver &d = *target.driver;
  for (const Segment &s : segments_) {
    if (s.graph)
      VOLT_RETURN_IF_ERROR(
          d.check(d.cuGraphLaunch(s.graph, target.stream), target.label + ": cuGraphLaunch"));
    else
      VOLT_RETURN_IF_ERROR(issueActions(target, std::span<const StepAction>(&s.collective, 1)));
  }
  return Status::success();
}

size_t CapturedStep::graphCount() const {
  size_t n = 0;
  for (const Segment &s : segments_)
    n += s.graph != nullptr;
  return n;
}

} // namespace volt::cuda
