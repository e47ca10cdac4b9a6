//===- PlanEmulator.cpp ---------------------------------------------------===//
#include "tests/unit/cuda/PlanEmulator.h"

#include "runtime/cpu/TopCandidates.h"
#include "runtime/plan/Caches.h"

#include <gtest/gtest.h>

#include <cstring>

namespace volt::cuda::testing {
namespace {

using plan::ArgKind;
using plan::OperandKind;
using plan::OpKind;

std::string describe(const plan::Op &op) { return op.name() ? op.name()->str() : "?"; }

} // namespace

PlanEmulator::PlanEmulator(const plan::LoadedPlan &plan, FakeCuda &fake)
    : plan_(plan), fake_(fake) {
  const plan::Plan &p = plan.plan();
  vocab_ = p.model()->vocab_size();
  if (p.sampler()) {
    samplerKernel_ = static_cast<int>(p.sampler()->kernel());
    samplerK_ = p.sampler()->k();
  }
  ranks_.resize(p.ranks()->size());
  for (const plan::Rank *rank : *p.ranks()) {
    const auto &ops = *rank->ops();
    size_t head = ops.size();
    for (size_t i = 0; i < ops.size(); ++i) {
      const plan::Op *op = ops.Get(static_cast<flatbuffers::uoffset_t>(i));
      const plan::Operand *last = op->operands()->Get(op->operands()->size() - 1);
      if (last->kind() != OperandKind::Output)
        continue;
      head = i;
      if (op->kind() == OpKind::AllGather) {
        // The op whose output the all-gather reads.
        const plan::Operand *in = op->operands()->Get(0);
        for (size_t j = i; j-- > 0;) {
          const plan::Op *w = ops.Get(static_cast<flatbuffers::uoffset_t>(j));
          const plan::Operand *out = w->operands()->Get(w->operands()->size() - 1);
          if (w->launches() && out->kind() == in->kind() && out->index() == in->index()) {
            head = j;
            break;
          }
        }
      }
    }
    EXPECT_LT(head, ops.size()) << "rank " << rank->rank() << ": no op writes the logits";
    lmHead_.push_back(head);
  }
}

void PlanEmulator::install() {
  fake_.onLaunch = [this](const FakeLaunch &launch) { onLaunch(launch); };
}

std::vector<PlanEmulator::Arg> PlanEmulator::layout(const plan::Launch &launch) const {
  std::vector<Arg> args;
  size_t at = 0;
  if (!launch.args())
    return args;
  // The CUDA ABI: each parameter at its natural alignment.
  for (const plan::Arg *a : *launch.args()) {
    const size_t size = a->kind() == ArgKind::Pointer ? 8 : 4;
    at = (at + size - 1) / size * size;
    Arg arg;
    arg.kind = a->kind();
    arg.at = at;
    if (a->operand()) {
      arg.operand = a->operand()->kind();
      arg.index = a->operand()->index();
    }
    arg.offset = a->offset();
    args.push_back(arg);
    at += size;
  }
  return args;
}

uint64_t PlanEmulator::extent(uint32_t rank, const Arg &a, int64_t tokens, int64_t seqs,
                              int64_t rows) const {
  const plan::Rank *r = plan_.plan().ranks()->Get(rank);
  const uint64_t T = tokens > 0 ? static_cast<uint64_t>(tokens) : 1;
  const uint64_t S = seqs > 0 ? static_cast<uint64_t>(seqs) : 1;
  const uint64_t R = rows > 0 ? static_cast<uint64_t>(rows) : 1;
  auto rest = [&](uint64_t bytes) { return a.offset < bytes ? bytes - a.offset : 1; };
  switch (a.operand) {
  case OperandKind::Arena:
    return rest(r->buffers()->Get(a.index)->bytes());
  case OperandKind::Weight:
    return rest(r->weights()->Get(a.index)->bytes());
  case OperandKind::Cache: {
    auto layer = plan::cacheLayer(*r, a.index);
    return layer ? rest(layer->bytes) : 1;
  }
  case OperandKind::Workspace:
    return rest(r->workspace_bytes() - a.index);
  case OperandKind::Output:
    if (a.index == static_cast<uint32_t>(plan::StepOutput::Hidden))
      return tokens > 0 ? T * plan_.plan().model()->hidden_size() * 2 : 2;
    return rows > 0 ? R * vocab_ * 4 : 4;
  case OperandKind::Input:
    switch (static_cast<plan::StepInput>(a.index)) {
    case plan::StepInput::Tokens:
    case plan::StepInput::Positions:
    case plan::StepInput::SlotMapping:
    case plan::StepInput::StateSnapshots:
    case plan::StepInput::HiddenRows:
      return tokens > 0 ? T * 4 : 4;
    case plan::StepInput::LogitsRows:
      return rows > 0 ? R * 4 : 4;
    case plan::StepInput::SeqStarts:
      return seqs > 0 ? (S + 1) * 4 : 4;
    case plan::StepInput::BlockTables:
      return seqs > 0 ? S * plan_.plan().limits()->max_blocks_per_seq() * 4 : 4;
    default:
      return seqs > 0 ? S * 4 : 4;
    }
  }
  return 1;
}

void PlanEmulator::onLaunch(const FakeLaunch &launch) {
  const plan::Plan &p = plan_.plan();
  ASSERT_GE(launch.device, 0);
  ASSERT_LT(static_cast<size_t>(launch.device), ranks_.size());
  const uint32_t rank = static_cast<uint32_t>(launch.device);
  RankState &rs = ranks_[rank];
  if (launch.module == samplerKernel_) {
    runSampler(launch);
    return;
  }
  const plan::Rank *pr = p.ranks()->Get(rank);
  const auto &ops = *pr->ops();
  // The next op of the program that launches a kernel (wrapping to a new
  // step); kernels load one module each, in plan order.
  auto launching = [&](size_t i) {
    return ops.Get(static_cast<flatbuffers::uoffset_t>(i))->launches() &&
           ops.Get(static_cast<flatbuffers::uoffset_t>(i))->launches()->size() > 0;
  };
  auto nextLaunching = [&](size_t index) {
    for (size_t tries = 0; tries < ops.size() && (index >= ops.size() || !launching(index));
         ++tries)
      index = index + 1 >= ops.size() ? 0 : index + 1;
    return index >= ops.size() ? size_t{0} : index;
  };
  auto launchOf = [&](size_t index) -> const plan::Launch * {
    const plan::Op *o = ops.Get(static_cast<flatbuffers::uoffset_t>(index));
    const plan::Launch *found = nullptr;
    if (o->launches())
      for (const plan::Launch *l : *o->launches())
        if (static_cast<int>(l->kernel()) == launch.module)
          found = l;
    return found;
  };
  size_t index = nextLaunching(rs.nextOp);
  const plan::Launch *chosen = launchOf(index);
  // With a draft program, a step of either program may follow one that
  // ended: the target's ops [0, draft_ops_begin), the draft's after them.
  const size_t draftBegin = pr->draft_ops_begin();
  if (!chosen && draftBegin > 0 &&
      (rs.nextOp == 0 || rs.nextOp == draftBegin || rs.nextOp >= ops.size())) {
    const size_t other = nextLaunching(rs.nextOp == draftBegin ? 0 : draftBegin);
    if (const plan::Launch *l = launchOf(other)) {
      index = other;
      chosen = l;
    }
  }
  const plan::Op *op = ops.Get(static_cast<flatbuffers::uoffset_t>(index));
  ASSERT_TRUE(chosen) << "device " << launch.device << ": a launch of " << launch.kernel
                      << " (module " << launch.module << ") runs where op " << index << " '"
                      << describe(*op) << "' comes next";
  rs.nextOp = index + 1;
  launched.push_back({launch.device, index, chosen->kernel()});
  const std::string name = describe(*op);
  EXPECT_EQ(launch.kernel, p.kernels()->Get(chosen->kernel())->name()->str()) << name;

  const std::vector<Arg> args = layout(*chosen);
  const size_t size =
      args.empty() ? 0 : args.back().at + (args.back().kind == ArgKind::Pointer ? 8 : 4);
  ASSERT_EQ(launch.params.size(), size) << name << ": parameter buffer size";
  auto value = [&](const Arg &a, auto v) {
    std::memcpy(&v, launch.params.data() + a.at, sizeof(v));
    return v;
  };
  int64_t tokens = -1, seqs = -1, rows = -1;
  for (const Arg &a : args) {
    if (a.kind == ArgKind::TokenCount)
      tokens = value(a, int32_t{});
    if (a.kind == ArgKind::SeqCount)
      seqs = value(a, int32_t{});
    if (a.kind == ArgKind::RowCount)
      rows = value(a, int32_t{});
  }
  uint64_t outAt = 0;
  const plan::Operand *lastOperand = op->operands()->Get(op->operands()->size() - 1);
  for (const Arg &a : args) {
    if (a.kind != ArgKind::Pointer)
      continue;
    const uint64_t pointer = value(a, uint64_t{});
    const std::string what = "device " + std::to_string(launch.device) + ", op '" + name +
                             "', operand " + std::to_string(static_cast<int>(a.operand)) + ":" +
                             std::to_string(a.index);
    const uint64_t bytes = extent(rank, a, tokens, seqs, rows);
    if (!fake_.deviceBytes(launch.device, pointer, bytes, what))
      continue;
    // Every operand of a kind hangs off one base address: the workspace
    // off the arena's (it follows the arena), a cache layer off the cache
    // region's (runtime/plan/Caches.h).
    uint64_t within = a.offset;
    int kind = static_cast<int>(a.operand);
    uint32_t group = 0;
    switch (a.operand) {
    case OperandKind::Arena:
      within += pr->buffers()->Get(a.index)->offset();
      break;
    case OperandKind::Weight:
      within += pr->weights()->Get(a.index)->offset();
      break;
    case OperandKind::Workspace:
      within += pr->arena_bytes() + a.index;
      kind = static_cast<int>(OperandKind::Arena);
      break;
    case OperandKind::Cache: {
      auto layer = plan::cacheLayer(*pr, a.index);
      within += layer ? layer->offset : 0;
      break;
    }
    case OperandKind::Input:
      group = a.index; // an array each
      break;
    case OperandKind::Output:
      group = a.index; // the logits and the hidden rows: a buffer each
      break;
    }
    const auto key = std::make_pair(kind, group);
    const uint64_t base = pointer - within;
    auto [it, fresh] = rs.bases.emplace(key, base);
    EXPECT_TRUE(fresh || it->second == base)
        << what << ": base 0x" << std::hex << base << ", earlier ops imply 0x" << it->second;
    if (a.operand == OperandKind::Input)
      rs.inputs[a.index] = fake_.readInts(launch.device, pointer, bytes / 4);
    if (a.operand == OperandKind::Input &&
        a.index == static_cast<uint32_t>(plan::StepInput::Tokens))
      rs.tokensAt = pointer;
    if (a.operand == OperandKind::Input &&
        a.index == static_cast<uint32_t>(plan::StepInput::LogitsRows))
      rs.rowsAt = pointer;
    if (a.operand == lastOperand->kind() && a.index == lastOperand->index())
      outAt = pointer;
  }

  const size_t opIndex = index;
  if (op->kind() == OpKind::Attention && attention.size() < 64 &&
      op == ops.Get(static_cast<flatbuffers::uoffset_t>([&] {
        for (size_t i = 0; i < ops.size(); ++i)
          if (ops.Get(static_cast<flatbuffers::uoffset_t>(i))->kind() == OpKind::Attention)
            return i;
        return size_t{0};
      }()))) {
    SeenAttention seen;
    seen.device = launch.device;
    seen.tokens = static_cast<int32_t>(tokens);
    seen.seqs = static_cast<int32_t>(seqs);
    auto input = [&](plan::StepInput i) { return rs.inputs[static_cast<uint32_t>(i)]; };
    seen.positions = input(plan::StepInput::Positions);
    seen.slots = input(plan::StepInput::SlotMapping);
    seen.seqStarts = input(plan::StepInput::SeqStarts);
    seen.contextLens = input(plan::StepInput::ContextLens);
    seen.blockTables = input(plan::StepInput::BlockTables);
    attention.push_back(std::move(seen));
  }

  if (opIndex != lmHead_[rank])
    return;
  ++lmHeadLaunches;
  ASSERT_GT(rows, 0) << name << ": the LM head has no RowCount argument";
  ASSERT_NE(rs.tokensAt, 0u) << "the LM head ran before the embedding";
  ASSERT_NE(rs.rowsAt, 0u) << "the LM head ran before gather_rows";
  ASSERT_NE(outAt, 0u) << name << ": no pointer to its output";
  const uint32_t cols = op->kind() == OpKind::QLinear
                            ? op->params_as_QLinearParams()->out_features()
                            : op->params_as_LinearParams()->out_features();
  const uint64_t vocabStart = uint64_t{rank} * cols;
  const auto tokenRows = fake_.readInts(launch.device, rs.rowsAt, static_cast<size_t>(rows));
  auto *out = fake_.deviceBytes(launch.device, outAt, static_cast<uint64_t>(rows) * cols * 4,
                                name + " output");
  ASSERT_NE(out, nullptr);
  for (int64_t s = 0; s < rows; ++s) {
    const int32_t row = tokenRows[static_cast<size_t>(s)];
    ASSERT_GE(row, 0) << "logits row " << s;
    const int32_t token = fake_.readInts(launch.device, rs.tokensAt + uint64_t(row) * 4, 1)[0];
    for (uint32_t c = 0; c < cols; ++c) {
      const float v = logit(token, vocabStart + c);
      std::memcpy(out + (static_cast<uint64_t>(s) * cols + c) * 4, &v, 4);
    }
  }
}

void PlanEmulator::runSampler(const FakeLaunch &launch) {
  // top_candidates(logits, temperatures, ids, values, stats, seqs).
  ASSERT_EQ(launch.params.size(), 5 * 8 + 4u) << "the sampler's parameter buffer";
  uint64_t pointers[5];
  int32_t seqs = 0;
  std::memcpy(pointers, launch.params.data(), sizeof(pointers));
  std::memcpy(&seqs, launch.params.data() + sizeof(pointers), sizeof(seqs));
  SeenSampler seen;
  seen.device = launch.device;
  seen.fromGraph = launch.fromGraph;
  seen.grid = launch.grid[0];
  seen.threads = launch.block[0];
  seen.seqs = seqs;
  EXPECT_EQ(launch.device, 0) << "the sampler runs on rank 0";
  EXPECT_EQ(static_cast<int64_t>(launch.grid[0]), seqs) << "the sampler's grid.x is S";
  ASSERT_GT(seqs, 0);
  // The logits at the address the step program writes them.
  auto &bases = ranks_[static_cast<size_t>(launch.device)].bases;
  auto out = bases.find({static_cast<int>(plan::OperandKind::Output), 0});
  if (out != bases.end())
    EXPECT_EQ(pointers[0], out->second) << "the sampler reads the step's logits";
  const uint64_t S = static_cast<uint64_t>(seqs), k = samplerK_;
  const auto logits = fake_.readFloats(launch.device, pointers[0], S * vocab_);
  seen.temperatures = fake_.readFloats(launch.device, pointers[1], S);
  ASSERT_EQ(logits.size(), S * vocab_);
  ASSERT_EQ(seen.temperatures.size(), S);
  std::vector<int32_t> ids(S * k);
  std::vector<float> values(S * k), stats(S * 3);
  cpu::ThreadPool pool(1);
  cpu::topCandidates({static_cast<int64_t>(S), vocab_, static_cast<int64_t>(k)}, logits.data(),
                     seen.temperatures.data(), ids.data(), values.data(), stats.data(), pool);
  const std::pair<const void *, uint64_t> outputs[] = {
      {ids.data(), S * k * 4}, {values.data(), S * k * 4}, {stats.data(), S * 3 * 4}};
  for (size_t i = 0; i < 3; ++i) {
    uint8_t *to = fake_.deviceBytes(launch.device, pointers[2 + i], outputs[i].second,
                                    "the sampler's output " + std::to_string(i));
    ASSERT_NE(to, nullptr);
    std::memcpy(to, outputs[i].first, outputs[i].second);
  }
  sampler.push_back(std::move(seen));
}

float PlanEmulator::logit(int32_t token, uint64_t column) const {
  return 1000.0f * static_cast<float>(token) + static_cast<float>((7919 * column) % vocab_);
}

std::vector<float> PlanEmulator::expectedLogits(const std::vector<int32_t> &tokens,
                                                const std::vector<int32_t> &rows) const {
  std::vector<float> out;
  for (int32_t row : rows)
    for (uint32_t v = 0; v < vocab_; ++v)
      out.push_back(logit(tokens.at(static_cast<size_t>(row)), v));
  return out;
}

size_t PlanEmulator::launchesPerStep(uint32_t rank) const {
  size_t n = 0;
  for (const plan::Op *op : *plan_.plan().ranks()->Get(rank)->ops())
    n += op->launches() && op->launches()->size() > 0;
  return n;
}

std::vector<uint64_t> PlanEmulator::allReduceCounts(uint32_t rank, uint64_t tokens,
                                                    uint64_t seqs) const {
  const plan::Rank *r = plan_.plan().ranks()->Get(rank);
  std::vector<uint64_t> counts;
  for (const plan::Op *op : *r->ops()) {
    if (op->kind() != OpKind::AllReduce)
      continue;
    const plan::Operand *o = op->operands()->Get(0);
    const plan::Buffer *b =
        o->kind() == OperandKind::Arena ? r->buffers()->Get(o->index()) : nullptr;
    counts.push_back((b && b->per_token_bytes() == 0 ? seqs : tokens) *
                     op->params_as_AllReduceParams()->dim());
  }
  return counts;
}

} // namespace volt::cuda::testing
