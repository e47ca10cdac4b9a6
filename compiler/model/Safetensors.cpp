//===- Safetensors.cpp ----------------------------------------------------===//
#include "compiler/model/Safetensors.h"

#include "runtime/support/CheckedMath.h"
#include "runtime/support/Strings.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace volt::model {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  uint64_t size;
};

constexpr std::array<DTypeInfo, 16> kDTypes = {{
    {DType::Bool, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::F8E5M2, "F8_E5M2", 1},
    {DType::F8E4M3, "F8_E4M3", 1},
    {DType::F8E8M0, "F8_E8M0", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
}};

std::string inQuotes(std::string_view s) { return "'" + std::string(s) + "'"; }

/// Reads a non-negative integer that fits in int64 from a JSON value.
std::optional<uint64_t> asCount(const nlohmann::json &v) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>();
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i >= 0)
      return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

Result<TensorEntry> parseEntry(const std::string &name, const nlohmann::json &v,
                               std::string_view fileName) {
  std::string where = std::string(fileName) + ": tensor " + inQuotes(name);
  if (!v.is_object())
    return Error(where + ": expected an object with dtype, shape and data_offsets");
  TensorEntry entry;
  entry.name = name;

  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string())
    return Error(where + ": missing string field 'dtype'");
  auto parsed = parseDType(dtype->get<std::string>());
  if (!parsed)
    return Error(where + ": " + parsed.message());
  entry.dtype = *parsed;

  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array())
    return Error(where + ": missing array field 'shape'");
  for (const auto &d : *shape) {
    auto n = asCount(d);
    if (!n || *n > static_cast<uint64_t>(INT64_MAX))
      return Error(where + ": shape must hold non-negative integers, found " + shape->dump());
    entry.shape.push_back(static_cast<int64_t>(*n));
  }

  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2)
    return Error(where + ": missing field 'data_offsets' (an array [begin, end])");
  auto begin = asCount((*offsets)[0]);
  auto end = asCount((*offsets)[1]);
  if (!begin || !end)
    return Error(where + ": data_offsets must be non-negative integers, found " + offsets->dump());
  if (*end < *begin)
    return Error(where + ": data_offsets " + offsets->dump() + " end before they begin");
  entry.begin = *begin;
  entry.end = *end;

  auto elements = checkedProduct(entry.shape);
  auto bytes = elements ? checkedMul(*elements, dtypeSize(entry.dtype)) : std::nullopt;
  if (!bytes)
    return Error(where + ": shape " + formatShape(entry.shape) + " overflows 64-bit byte counts");
  if (*bytes != entry.numBytes())
    return Error(where + ": shape " + formatShape(entry.shape) + " of " +
                 std::string(dtypeName(entry.dtype)) + " needs " + std::to_string(*bytes) +
                 " bytes, but data_offsets " + offsets->dump() + " hold " +
                 std::to_string(entry.numBytes()));
  return entry;
}

} // namespace

std::string_view dtypeName(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].name; }

uint64_t dtypeSize(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].size; }

Result<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (info.name == name)
      return info.dtype;
  std::vector<std::string> names;
  for (const DTypeInfo &info : kDTypes)
    names.emplace_back(info.name);
  return Error("unsupported dtype " + inQuotes(name) + " (supported: " + joinList(names) + ")");
}

std::string formatShape(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

uint64_t TensorEntry::numElements() const { return checkedProduct(shape).value_or(0); }

Result<SafetensorsHeader> parseSafetensorsHeader(std::span<const uint8_t> bytes, uint64_t fileSize,
                                                 std::string_view fileName) {
  std::string file(fileName);
  if (fileSize < 8 || bytes.size() < 8)
    return Error(file + ": file is " + std::to_string(fileSize) +
                 " bytes; a safetensors file starts with an 8-byte header length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | bytes[static_cast<size_t>(i)];
  if (headerLen > kMaxHeaderBytes)
    return Error(file + ": header length " + std::to_string(headerLen) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (8 + headerLen > fileSize)
    return Error(file + ": header length " + std::to_string(headerLen) +
                 " runs past the end of the file (" + std::to_string(fileSize) +
                 " bytes): the file is truncated or not a safetensors file");
  if (bytes.size() < 8 + headerLen)
    return Error(file + ": only " + std::to_string(bytes.size()) + " bytes of the header given");
  auto text = bytes.subspan(8, headerLen);
  if (text.empty() || text[0] != '{')
    return Error(file + ": header does not start with '{' (not a safetensors file?)");

  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception &e) {
    return Error(file + ": header is not valid JSON: " + e.what());
  }
  if (!json.is_object())
    return Error(file + ": header must be a JSON object");

  SafetensorsHeader header;
  header.dataOffset = 8 + headerLen;
  header.tensors.reserve(json.size());
  for (const auto &[name, value] : json.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        return Error(file + ": __metadata__ must be an object of strings");
      for (const auto &[k, v] : value.items()) {
        if (!v.is_string())
          return Error(file + ": __metadata__ value of " + inQuotes(k) + " must be a string");
        header.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto entry = parseEntry(name, value, fileName);
    if (!entry)
      return entry.error();
    header.tensors.push_back(std::move(*entry));
  }

  // The byte ranges must tile the data buffer exactly.
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorEntry &a, const TensorEntry &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t dataSize = fileSize - header.dataOffset;
  uint64_t cursor = 0;
  const TensorEntry *previous = nullptr;
  for (const TensorEntry &t : header.tensors) {
    if (t.begin < cursor)
      return Error(file + ": tensors " + inQuotes(previous->name) + " and " + inQuotes(t.name) +
                   " overlap (bytes " + std::to_string(t.begin) + ".." + std::to_string(cursor) +
                   ")");
    if (t.begin > cursor)
      return Error(file + ": " + std::to_string(t.begin - cursor) + " bytes at offset " +
                   std::to_string(cursor) + " before tensor " + inQuotes(t.name) +
                   " belong to no tensor");
    if (t.end > dataSize)
      return Error(file + ": truncated: tensor " + inQuotes(t.name) + " needs data bytes up to " +
                   std::to_string(t.end) + ", but the file holds only " + std::to_string(dataSize) +
                   " (file size " + std::to_string(fileSize) + ")");
    cursor = t.end;
    previous = &t;
  }
  if (cursor != dataSize)
    return Error(file + ": " + std::to_string(dataSize - cursor) +
                 " bytes after the last tensor belong to no tensor");
  return header;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::filesystem::path &path) {
  auto file = MappedFile::open(path.string());
  if (!file)
    return file.error();
  auto header = parseSafetensorsHeader((*file)->bytes(), (*file)->size(), path.string());
  if (!header)
    return header.error();
  return std::unique_ptr<SafetensorsFile>(
      new SafetensorsFile(std::move(*file), std::move(*header)));
}

void SafetensorsWriter::add(std::string name, DType dtype, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
  Pending p;
  p.entry.name = std::move(name);
  p.entry.dtype = dtype;
  p.entry.shape = std::move(shape);
  p.entry.begin = dataBytes_;
  p.entry.end = dataBytes_ + bytes.size();
  dataBytes_ = p.entry.end;
  p.bytes = std::move(bytes);
  tensors_.push_back(std::move(p));
}

void SafetensorsWriter::addZeros(std::string name, DType dtype, std::vector<int64_t> shape) {
  Pending p;
  p.entry.name = std::move(name);
  p.entry.dtype = dtype;
  p.entry.shape = std::move(shape);
  p.entry.begin = dataBytes_;
  p.entry.end = dataBytes_ + p.entry.numElements() * dtypeSize(dtype);
  dataBytes_ = p.entry.end;
  tensors_.push_back(std::move(p));
}

Status SafetensorsWriter::write(const std::filesystem::path &path) const {
  // nlohmann's default object is ordered by key, which makes the header (and
  // so the file) independent of insertion order details.
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty())
    header["__metadata__"] = metadata_;
  for (const Pending &p : tensors_) {
    header[p.entry.name] = {{"dtype", dtypeName(p.entry.dtype)},
                            {"shape", p.entry.shape},
                            {"data_offsets", {p.entry.begin, p.entry.end}}};
  }
  std::string text = header.dump();
  // Pad with spaces so the data buffer starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> prefix(8 + text.size());
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    prefix[static_cast<size_t>(i)] = static_cast<uint8_t>(len >> (8 * i));
  std::memcpy(prefix.data() + 8, text.data(), text.size());

  std::filesystem::path tmp = path;
  tmp += ".partial";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error(tmp.string() + ": cannot create: " + std::strerror(errno));
  auto fail = [&](const std::string &what) -> Status {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Error(tmp.string() + ": " + what + ": " + std::strerror(err));
  };
  auto writeAt = [&](const uint8_t *data, size_t n, uint64_t offset) {
    while (n > 0) {
      ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      data += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return true;
  };
  if (!writeAt(prefix.data(), prefix.size(), 0))
    return fail("cannot write");
  for (const Pending &p : tensors_) {
    if (!p.bytes.empty() && !writeAt(p.bytes.data(), p.bytes.size(), prefix.size() + p.entry.begin))
      return fail("cannot write");
  }
  // Zero tensors at the end are holes: extend the file to its full size.
  if (::ftruncate(fd, static_cast<off_t>(prefix.size() + dataBytes_)) != 0)
    return fail("cannot extend");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Error(tmp.string() + ": cannot close: " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Error(path.string() + ": cannot rename from " + tmp.string() + ": " + ec.message());
  return Status::success();
}

} // namespace volt::model
