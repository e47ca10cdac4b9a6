//===- WeightPacker.cpp ---------------------------------------------------===//
#include "compiler/pack/WeightPacker.h"

#include "compiler/model/Model.h"
#include "runtime/numerics/Half.h"
#include "runtime/numerics/Nvfp4.h"
#include "runtime/support/Strings.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace volt::pack {
namespace {

constexpr uint64_t kAlignment = 256;

uint64_t alignUp(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

/// The geometry of one part of one expert in the checkpoint and in the pack:
/// the runs of tensor rows this rank copies, and its columns.
struct PartSlice {
  /// [first row, rows) runs, in the tensor's rows (of its expert).
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t rows = 0;     ///< this rank's rows of the part (the runs' sum)
  int64_t tensorRows;   ///< the tensor's rows (per expert)
  int64_t rowBase = 0;  ///< rows before the view's expert in a stacked tensor
  int64_t expert = -1;  ///< the view's expert, or -1
  int64_t fullCols, colStart, cols; ///< cols = 0 for rank-1 weights
};

Result<PartSlice> sliceOf(const WeightSpec &spec, size_t part, size_t nameIndex, int rank) {
  bool stacked = spec.experts > 0;
  int64_t rowsDim = stacked ? 1 : 0;
  int64_t colsDim = static_cast<int64_t>(spec.shape.size()) - 1;
  bool hasCols = static_cast<int64_t>(spec.shape.size()) == rowsDim + 2;
  PartSlice s{};
  s.rows = spec.partRows[part];
  s.cols = hasCols ? spec.shape.back() : 0;
  s.fullCols = s.cols;
  int64_t rowParts = 1, rowSlice = 0;
  if (!spec.shards.empty()) {
    const Shard &sh = spec.shards.size() == 1 ? spec.shards[0] : spec.shards[part];
    int64_t slice = rank / sh.replicas;
    if (sh.parts > 1 && sh.dim == rowsDim) {
      rowParts = sh.parts;
      rowSlice = slice;
    } else if (sh.parts > 1 && hasCols && sh.dim == colsDim) {
      s.fullCols = s.cols * sh.parts;
      s.colStart = slice * s.cols;
    }
  }
  const int64_t partRows = s.rows * rowParts; // all ranks' rows of the part
  if (spec.views.empty()) {
    s.tensorRows = partRows;
    s.runs = {{rowSlice * s.rows, s.rows}};
    return s;
  }
  const RowView &v = spec.views[nameIndex];
  s.tensorRows = v.tensorRows;
  s.expert = v.expert;
  s.rowBase = v.expert >= 0 ? v.expert * v.tensorRows : 0;
  if (v.groups <= 1) {
    s.runs = {{v.offset + rowSlice * s.rows, s.rows}};
  } else {
    if (partRows % v.groups != 0 || v.groups % rowParts != 0)
      return Error("weight entry '" + spec.name + "': part " + std::to_string(part) + " of " +
                   std::to_string(partRows) + " rows in " + std::to_string(v.groups) +
                   " runs does not split over " + std::to_string(rowParts) + " ranks");
    const int64_t run = partRows / v.groups, perRank = v.groups / rowParts;
    for (int64_t g = rowSlice * perRank; g < (rowSlice + 1) * perRank; ++g)
      s.runs.emplace_back(v.offset + g * v.stride, run);
  }
  for (const auto &[first, rows] : s.runs)
    if (first < 0 || first + rows > v.tensorRows)
      return Error("weight entry '" + spec.name + "': part " + std::to_string(part) +
                   " reads rows [" + std::to_string(first) + ", " + std::to_string(first + rows) +
                   ") of a tensor of " + std::to_string(v.tensorRows));
  return s;
}

std::string shapeText(const model::Tensor &t) { return model::formatShape(t.shape()); }

/// Whether tensor `t` has the shape the slice reads: [tensorRows, fullCols]
/// (or [tensorRows] for rank 1), [E, tensorRows, fullCols] with an expert,
/// dimensions of 1 allowed between rows and columns. `cols` scales the
/// column count (NVFP4 data: 1/2, block scales: 1/16).
Status checkShape(const std::string &entry, const model::Tensor &t, const PartSlice &s,
                  int64_t fullCols) {
  const auto &shape = t.shape();
  size_t d = 0;
  bool ok = true;
  if (s.expert >= 0)
    ok = !shape.empty() && s.expert < shape[d++];
  ok = ok && d < shape.size() && shape[d++] == s.tensorRows;
  int64_t rest = 1;
  for (; d < shape.size(); ++d)
    rest *= shape[d];
  ok = ok && (s.cols ? rest == fullCols : rest == 1 && shape.size() == (s.expert >= 0 ? 2u : 1u));
  if (ok)
    return Status::success();
  std::vector<int64_t> want = s.cols ? std::vector<int64_t>{s.tensorRows, fullCols}
                                     : std::vector<int64_t>{s.tensorRows};
  if (s.expert >= 0)
    want.insert(want.begin(), s.expert + 1);
  return Error((entry.empty() ? "" : "weight entry '" + entry + "': ") + "tensor '" + t.name() +
               "': shape " + shapeText(t) + ", the plan expects " + model::formatShape(want) +
               (s.expert >= 0 ? " (at least that many experts)" : ""));
}

/// How an FP8 tensor's scale tensor maps a weight element to its scale.
struct Fp8Scale {
  const model::Tensor *tensor = nullptr;
  enum { PerTensor, PerRow, PerBlock } kind = PerTensor;
  int64_t blockCols = 0; ///< scales per row of blocks (PerBlock)

  float at(int64_t row, int64_t col) const {
    switch (kind) {
    case PerRow:
      return tensor->floatAt(static_cast<size_t>(row));
    case PerBlock:
      return tensor->floatAt(static_cast<size_t>((row / model::kFp8Block) * blockCols +
                                                 col / model::kFp8Block));
    case PerTensor:
      break;
    }
    return tensor->floatAt(0);
  }
};

Result<Fp8Scale> fp8ScaleOf(const model::Tensor &weight, const model::Tensor *scale,
                            const PartSlice &s) {
  if (!scale)
    return Error("tensor '" + weight.name() + "' is FP8 and the plan names no scale for it");
  if (s.expert >= 0)
    return Error("tensor '" + weight.name() +
                 "': FP8 experts stored stacked are not supported (a quantized export stores "
                 "them per expert)");
  if (scale->dtype() != model::DType::F32 && scale->dtype() != model::DType::BF16 &&
      scale->dtype() != model::DType::F16)
    return Error("tensor '" + scale->name() + "': dtype " +
                 std::string(model::dtypeName(scale->dtype())) + ", expected F32, BF16 or F16");
  const auto &shape = scale->shape();
  const int64_t rows = s.tensorRows, cols = s.cols ? s.fullCols : 1;
  const int64_t blockRows = (rows + model::kFp8Block - 1) / model::kFp8Block,
                blockCols = (cols + model::kFp8Block - 1) / model::kFp8Block;
  Fp8Scale out;
  out.tensor = scale;
  if (scale->entry->numElements() == 1 && shape.size() <= 1)
    out.kind = Fp8Scale::PerTensor;
  else if ((shape.size() == 1 && shape[0] == rows) ||
           (shape.size() == 2 && shape[0] == rows && shape[1] == 1))
    out.kind = Fp8Scale::PerRow;
  else if (shape.size() == 2 && shape[0] == blockRows && shape[1] == blockCols) {
    out.kind = Fp8Scale::PerBlock;
    out.blockCols = blockCols;
  } else
    return Error("tensor '" + scale->name() + "': shape " + shapeText(*scale) +
                 " is not a scale of the " + shapeText(weight) +
                 " FP8 weight (expected [], [rows], [rows, 1] or 128 x 128 blocks " +
                 model::formatShape(std::vector<int64_t>{blockRows, blockCols}) + ")");
  return out;
}

/// This rank's rows and columns of a dense tensor, as FP32; an FP8 E4M3
/// tensor times its scale.
Result<std::vector<float>> readDense(const model::Tensor &t, const PartSlice &s,
                                     const model::Tensor *fp8Scale = nullptr) {
  VOLT_RETURN_IF_ERROR(checkShape("", t, s, s.fullCols));
  const bool fp8 = t.dtype() == model::DType::F8E4M3;
  if (t.dtype() != model::DType::BF16 && t.dtype() != model::DType::F16 &&
      t.dtype() != model::DType::F32 && !fp8)
    return Error("tensor '" + t.name() + "': dtype " + std::string(model::dtypeName(t.dtype())) +
                 " cannot be converted to a dense kernel weight");
  Fp8Scale scale;
  if (fp8) {
    auto found = fp8ScaleOf(t, fp8Scale, s);
    if (!found)
      return found.error();
    scale = *found;
  }
  auto data = t.data();
  int64_t cols = s.cols ? s.cols : 1, fullCols = s.cols ? s.fullCols : 1;
  std::vector<float> values(static_cast<size_t>(s.rows * cols));
  float *dst = values.data();
  for (const auto &[first, rows] : s.runs) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = s.rowBase + first + r;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t col = s.colStart + c;
        size_t index = static_cast<size_t>(row * fullCols + col);
        // E4M3 × scale is formed in FP32 and rounded once, by the caller.
        *dst++ = fp8 ? nvfp4::decodeE4M3(data[index]) * scale.at(row, col) : model::floatAt(data, t.dtype(), index);
      }
    }
  }
  return values;
}

/// Appends a dense slice converted to FP16 or FP32.
Status appendDense(const model::Tensor &t, const PartSlice &s, int elementBytes, bool addOne,
                   const model::Tensor *fp8Scale, std::vector<uint8_t> &out) {
  auto values = readDense(t, s, fp8Scale);
  if (!values)
    return values.error();
  if (addOne)
    for (float &v : *values)
      v += 1.0f;
  size_t base = out.size();
  out.resize(base + values->size() * static_cast<size_t>(elementBytes));
  uint8_t *dst = out.data() + base;
  for (float v : *values) {
    if (elementBytes == 4) {
      std::memcpy(dst, &v, 4);
    } else {
      uint16_t h = floatToHalf(v);
      std::memcpy(dst, &h, 2);
    }
    dst += elementBytes;
  }
  return Status::success();
}

/// Appends this rank's slice of an FP8 name as its E4M3 bytes, and the F32
/// scale of each of its rows to `rowScales` (a per-tensor scale repeated).
Status appendFp8(const model::Checkpoint &ckpt, const WeightSpec &spec, size_t nameIndex,
                 const PartSlice &s, std::vector<uint8_t> &out, std::vector<float> &rowScales) {
  const std::string &name = spec.names[nameIndex];
  const model::Tensor *t = ckpt.find(name);
  if (!t)
    return Error("weight entry '" + spec.name + "': tensor '" + name +
                 "' is not in the checkpoint");
  if (t->dtype() != model::DType::F8E4M3 || !s.cols)
    return Error("weight entry '" + spec.name + "': tensor '" + name + "' has dtype " +
                 std::string(model::dtypeName(t->dtype())) +
                 "; the plan keeps this entry as FP8 E4M3 rows");
  VOLT_RETURN_IF_ERROR(checkShape(spec.name, *t, s, s.fullCols));
  const model::Tensor *scaleTensor =
      nameIndex < spec.scaleNames.size() ? ckpt.find(spec.scaleNames[nameIndex]) : nullptr;
  VOLT_ASSIGN_OR_RETURN(Fp8Scale scale, fp8ScaleOf(*t, scaleTensor, s));
  if (scale.kind == Fp8Scale::PerBlock)
    return Error("weight entry '" + spec.name + "': tensor '" + scaleTensor->name() +
                 "' scales 128 x 128 blocks, but the plan keeps this entry as FP8 rows with one "
                 "scale per row (recompile: the model's quantization config and its tensors "
                 "disagree)");
  auto data = t->data();
  for (const auto &[first, rows] : s.runs) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = s.rowBase + first + r;
      const uint8_t *src = data.data() + row * s.fullCols + s.colStart;
      out.insert(out.end(), src, src + s.cols);
      rowScales.push_back(scale.at(row, 0));
    }
  }
  return Status::success();
}

/// Appends a byte-matrix slice: rows of `rowBytes` from [byteStart, +bytes).
void appendBytes(std::span<const uint8_t> data, int64_t rowStart, int64_t rows, int64_t rowBytes,
                 int64_t byteStart, int64_t bytes, std::vector<uint8_t> &out) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *src = data.data() + (rowStart + r) * rowBytes + byteStart;
    out.insert(out.end(), src, src + bytes);
  }
}

Result<std::vector<uint8_t>> buildEntry(const model::Checkpoint &ckpt, const WeightSpec &spec,
                                        int rank, uint64_t &scalesOffset,
                                        uint64_t &epilogueOffset) {
  size_t parts = spec.partRows.size();
  int64_t experts = std::max<int64_t>(1, spec.experts);
  if (spec.names.size() != parts * static_cast<size_t>(experts))
    return Error("weight entry '" + spec.name + "': " + std::to_string(spec.names.size()) +
                 " names for " + std::to_string(parts) + " parts x " + std::to_string(experts) +
                 " experts");
  if (!spec.views.empty() && spec.views.size() != spec.names.size())
    return Error("weight entry '" + spec.name + "': " + std::to_string(spec.views.size()) +
                 " row views for " + std::to_string(spec.names.size()) + " names");
  std::vector<uint8_t> out, scales;
  std::vector<float> rowScales;
  out.reserve(entryBytes(spec));
  for (int64_t e = 0; e < experts; ++e) {
    for (size_t p = 0; p < parts; ++p) {
      const size_t nameIndex = static_cast<size_t>(e) * parts + p;
      const std::string &name = spec.names[nameIndex];
      VOLT_ASSIGN_OR_RETURN(PartSlice s, sliceOf(spec, p, nameIndex, rank));
      if (spec.nvfp4 && spec.fromDense) {
        // Quantized here, with the part's global scale; blocks of 16 along
        // K never straddle a column split (splits are whole blocks).
        const model::Tensor *t = ckpt.find(name);
        if (!t)
          return Error("weight entry '" + spec.name + "': tensor '" + name +
                       "' is not in the checkpoint");
        auto values = readDense(*t, s);
        if (!values)
          return values.error();
        size_t index = static_cast<size_t>(e) * parts + p;
        float global = index < spec.globalScales.size() ? spec.globalScales[index] : 1.0f;
        nvfp4::Quantized q = nvfp4::quantizeWithGlobalScale(*values, s.rows, s.cols, global);
        out.insert(out.end(), q.packed.begin(), q.packed.end());
        scales.insert(scales.end(), q.scales.begin(), q.scales.end());
        continue;
      }
      if (spec.fp8) {
        VOLT_RETURN_IF_ERROR(appendFp8(ckpt, spec, nameIndex, s, out, rowScales));
        continue;
      }
      if (!spec.nvfp4) {
        const model::Tensor *t = ckpt.find(name);
        if (!t)
          return Error("weight entry '" + spec.name + "': tensor '" + name +
                       "' is not in the checkpoint");
        const model::Tensor *scale = nullptr;
        if (nameIndex < spec.scaleNames.size() && !spec.scaleNames[nameIndex].empty()) {
          scale = ckpt.find(spec.scaleNames[nameIndex]);
          if (!scale)
            return Error("weight entry '" + spec.name + "': scale tensor '" +
                         spec.scaleNames[nameIndex] + "' is not in the checkpoint");
        }
        VOLT_RETURN_IF_ERROR(appendDense(*t, s, spec.elementBytes, spec.addOne, scale, out));
        continue;
      }
      const model::Tensor *packed = ckpt.find(name + ".weight_packed");
      if (!packed)
        packed = ckpt.find(name + ".weight");
      const model::Tensor *blockScales = ckpt.find(name + ".weight_scale");
      if (!packed || !blockScales)
        return Error("weight entry '" + spec.name + "': NVFP4 tensors of '" + name +
                     "' are not in the checkpoint");
      VOLT_RETURN_IF_ERROR(checkShape(spec.name, *packed, s, s.fullCols / 2));
      VOLT_RETURN_IF_ERROR(checkShape(spec.name, *blockScales, s, s.fullCols / 16));
      for (const auto &[first, rows] : s.runs) {
        appendBytes(packed->data(), s.rowBase + first, rows, s.fullCols / 2, s.colStart / 2,
                    s.cols / 2, out);
        appendBytes(blockScales->data(), s.rowBase + first, rows, s.fullCols / 16,
                    s.colStart / 16, s.cols / 16, scales);
      }
    }
  }
  if (spec.fp8) {
    scalesOffset = alignUp(out.size());
    out.resize(scalesOffset, 0);
    const auto *b = reinterpret_cast<const uint8_t *>(rowScales.data());
    out.insert(out.end(), b, b + 4 * rowScales.size());
  }
  if (spec.nvfp4) {
    scalesOffset = alignUp(out.size());
    out.resize(scalesOffset, 0);
    out.insert(out.end(), scales.begin(), scales.end());
    if (spec.experts > 0) {
      const size_t count = static_cast<size_t>(experts) * parts;
      if (spec.globalScales.size() != count)
        return Error("weight entry '" + spec.name + "': " +
                     std::to_string(spec.globalScales.size()) + " global scales for " +
                     std::to_string(experts) + " experts x " + std::to_string(parts) + " parts");
      epilogueOffset = alignUp(out.size());
      out.resize(epilogueOffset, 0);
      for (float g : spec.globalScales) {
        const float v = g * nvfp4::kEpilogueBias;
        const auto *b = reinterpret_cast<const uint8_t *>(&v);
        out.insert(out.end(), b, b + 4);
      }
    }
  }
  return out;
}

} // namespace

uint64_t checksum(const uint8_t *data, size_t size) { return XXH3_64bits(data, size); }

uint64_t entryBytes(const WeightSpec &spec, uint64_t *scalesOffset, uint64_t *epilogueOffset) {
  uint64_t elements = 1;
  for (int64_t d : spec.shape)
    elements *= static_cast<uint64_t>(d);
  if (spec.fp8) {
    const uint64_t scales = alignUp(elements);
    if (scalesOffset)
      *scalesOffset = scales;
    return scales + 4 * (elements / static_cast<uint64_t>(spec.shape.back()));
  }
  if (!spec.nvfp4)
    return elements * static_cast<uint64_t>(spec.elementBytes);
  uint64_t packed = alignUp(elements / 2);
  if (scalesOffset)
    *scalesOffset = packed;
  if (spec.experts <= 0)
    return packed + elements / 16;
  const uint64_t epilogue = alignUp(packed + elements / 16);
  if (epilogueOffset)
    *epilogueOffset = epilogue;
  return epilogue + 4 * static_cast<uint64_t>(spec.experts) * spec.partRows.size();
}

Result<PackResult> writePack(const model::Checkpoint &checkpoint,
                             const std::vector<WeightSpec> &specs, int rank,
                             const std::filesystem::path &path, const Progress &progress) {
  if (!checkpoint.hasWeights())
    return Error("the model directory has no weight files: a plan needs the weights (voltc "
                 "check and voltc compile --emit=memory work without them)");
  uint64_t total = 0;
  for (const WeightSpec &s : specs)
    total = alignUp(total) + entryBytes(s);

  std::filesystem::path tmp = path;
  tmp += ".partial";
  std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
  if (!file)
    return Error(tmp.string() + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                   &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  PackResult result;
  uint64_t offset = 0;
  // All-zero stretches are skipped, leaving file holes: packs of zero-filled
  // test checkpoints (volt-mkmodel --zeros) then cost no disk space.
  constexpr size_t kPage = 4096;
  static const std::vector<uint8_t> zeros(kPage, 0);
  auto write = [&](const uint8_t *data, size_t size) {
    XXH3_64bits_update(state.get(), data, size);
    size_t done = 0;
    while (done < size) {
      size_t n = std::min(kPage, size - done);
      if (n == kPage && std::memcmp(data + done, zeros.data(), kPage) == 0)
        file.seekp(static_cast<std::streamoff>(n), std::ios::cur);
      else
        file.write(reinterpret_cast<const char *>(data + done), static_cast<std::streamsize>(n));
      done += n;
    }
    offset += size;
  };
  for (const WeightSpec &spec : specs) {
    std::vector<uint8_t> pad(alignUp(offset) - offset, 0);
    write(pad.data(), pad.size());
    PackedEntry entry;
    auto bytes = buildEntry(checkpoint, spec, rank, entry.scalesOffset, entry.epilogueOffset);
    if (!bytes) {
      file.close();
      std::filesystem::remove(tmp);
      return bytes.error();
    }
    entry.offset = offset;
    entry.bytes = bytes->size();
    entry.checksum = checksum(bytes->data(), bytes->size());
    write(bytes->data(), bytes->size());
    result.entries.push_back(entry);
    if (progress)
      progress(offset, total);
  }
  file.close();
  std::error_code sizeError;
  if (file)
    std::filesystem::resize_file(tmp, offset, sizeError); // a trailing hole
  if (!file || sizeError) {
    std::filesystem::remove(tmp);
    return Error(tmp.string() + ": cannot write (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Error(path.string() + ": cannot rename from " + tmp.string() + ": " + ec.message());
  result.fileBytes = offset;
  result.fileChecksum = XXH3_64bits_digest(state.get());
  return result;
}

} // namespace volt::pack
