//===- Cubin.cpp ----------------------------------------------------------===//
//
// Facts used (checked on NVRTC 11.8 sm_70 and NVRTC 13.0 sm_75 cubins):
// - e_machine 190 (EM_CUDA). The SM version is the low byte of e_flags for
//   ELF ABI version 7 and below, the second byte from ABI version 8 on.
// - `.text.<kernel>`: sh_info holds the kernel's symbol index in its low 24
//   bits and its register count in the top 8.
// - `.nv.info` (module-wide) and `.nv.info.<kernel>` hold records: a format
//   byte and an attribute byte, then for format 0x04 a u16 size and that
//   many bytes, for 0x03 and 0x02 a u16 value, for 0x01 nothing.
//   Module-wide 0x2f (register count), 0x11 (frame size), 0x12 (minimum
//   stack size) carry (symbol index u32, value u32); per-kernel 0x05 carries
//   the launch bounds' block size (x, y, z as u32).
// - `.nv.shared.<kernel>`'s size is the static shared memory.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Cubin.h"

#include <cstring>
#include <map>

namespace volt::codegen {
namespace {

constexpr uint16_t kMachineCuda = 190;

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0, info = 0;
};

class Reader {
public:
  Reader(std::span<const uint8_t> bytes, const std::string &name) : bytes_(bytes), name_(name) {}

  template <typename T> bool read(uint64_t offset, T &out) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T))
      return false;
    std::memcpy(&out, bytes_.data() + offset, sizeof(T));
    return true;
  }
  bool inside(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::string cString(uint64_t offset) const {
    std::string s;
    while (offset < bytes_.size() && bytes_[offset] != 0)
      s.push_back(static_cast<char>(bytes_[offset++]));
    return s;
  }
  Error error(const std::string &what) const { return Error(name_ + ": " + what); }

private:
  std::span<const uint8_t> bytes_;
  const std::string &name_;
};

/// Walks the attribute records of one `.nv.info*` section.
template <typename Visit> bool forEachAttribute(const Reader &r, const Section &s, Visit &&visit) {
  uint64_t p = s.offset, end = s.offset + s.size;
  while (p + 2 <= end) {
    uint8_t format = 0, attribute = 0;
    r.read(p, format);
    r.read(p + 1, attribute);
    if (format == 0x04) {
      uint16_t size = 0;
      if (!r.read(p + 2, size) || p + 4 + size > end)
        return false;
      visit(attribute, p + 4, size);
      p += 4 + size;
    } else if (format >= 0x01 && format <= 0x03) {
      // No value, a byte or a half word: each record is four bytes.
      p += 4;
    } else {
      return false;
    }
  }
  return true;
}

} // namespace

const CubinKernel *CubinInfo::find(const std::string &name) const {
  for (const CubinKernel &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

Result<CubinInfo> readCubin(std::span<const uint8_t> bytes, const std::string &name) {
  Reader r(bytes, name);
  static const uint8_t kMagic[] = {0x7f, 'E', 'L', 'F', 2 /*ELF64*/, 1 /*little endian*/};
  if (bytes.size() < 64 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return r.error("not a little-endian ELF64 file (a cubin was expected)");
  uint8_t abiVersion = bytes[8];
  uint16_t machine = 0, shentsize = 0, shnum = 0, shstrndx = 0;
  uint32_t flags = 0;
  uint64_t shoff = 0;
  r.read(0x12, machine);
  r.read(0x28, shoff);
  r.read(0x30, flags);
  r.read(0x3a, shentsize);
  r.read(0x3c, shnum);
  r.read(0x3e, shstrndx);
  if (machine != kMachineCuda)
    return r.error("ELF machine " + std::to_string(machine) + ", expected " +
                   std::to_string(kMachineCuda) + " (NVIDIA CUDA)");
  if (shentsize != 64 || shstrndx >= shnum || !r.inside(shoff, uint64_t{shnum} * 64))
    return r.error("section header table out of range");

  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    uint64_t h = shoff + uint64_t{i} * 64;
    uint32_t nameOffset = 0;
    Section &s = sections[i];
    r.read(h, nameOffset);
    r.read(h + 4, s.type);
    r.read(h + 0x18, s.offset);
    r.read(h + 0x20, s.size);
    r.read(h + 0x28, s.link);
    r.read(h + 0x2c, s.info);
    s.name = std::to_string(nameOffset); // resolved below
  }
  const Section &names = sections[shstrndx];
  if (!r.inside(names.offset, names.size))
    return r.error("section name table out of range");
  for (Section &s : sections) {
    uint64_t nameOffset = std::stoull(s.name);
    if (nameOffset >= names.size)
      return r.error("section name out of range");
    s.name = r.cString(names.offset + nameOffset);
    // NOBITS sections (.nv.shared.*) occupy no file bytes.
    if (s.type != 8 && !r.inside(s.offset, s.size))
      return r.error("section '" + s.name + "' lies outside the file");
  }

  CubinInfo info;
  info.smVersion = static_cast<int>(abiVersion >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
  std::map<uint32_t, size_t> bySymbol;
  const std::string text = ".text.", shared = ".nv.shared.", kernelInfo = ".nv.info.";
  for (const Section &s : sections)
    if (s.name.compare(0, text.size(), text) == 0) {
      CubinKernel k;
      k.name = s.name.substr(text.size());
      k.registers = s.info >> 24;
      bySymbol[s.info & 0xffffff] = info.kernels.size();
      info.kernels.push_back(k);
    }
  auto kernelNamed = [&](const std::string &kernel) -> CubinKernel * {
    for (CubinKernel &k : info.kernels)
      if (k.name == kernel)
        return &k;
    return nullptr;
  };
  for (const Section &s : sections) {
    if (s.name.compare(0, shared.size(), shared) == 0) {
      if (CubinKernel *k = kernelNamed(s.name.substr(shared.size())))
        k->staticSharedBytes = static_cast<uint32_t>(s.size);
    } else if (s.name == ".nv.info") {
      bool ok = forEachAttribute(r, s, [&](uint8_t attribute, uint64_t at, uint16_t size) {
        uint32_t symbol = 0, value = 0;
        if (size != 8 || !r.read(at, symbol) || !r.read(at + 4, value))
          return;
        auto it = bySymbol.find(symbol);
        if (it == bySymbol.end())
          return;
        CubinKernel &k = info.kernels[it->second];
        if (attribute == 0x2f)
          k.registers = value;
        else if (attribute == 0x11 || attribute == 0x12)
          k.localBytes = std::max(k.localBytes, value);
      });
      if (!ok)
        return r.error("malformed .nv.info section");
    } else if (s.name.compare(0, kernelInfo.size(), kernelInfo) == 0) {
      CubinKernel *k = kernelNamed(s.name.substr(kernelInfo.size()));
      if (!k)
        continue;
      bool ok = forEachAttribute(r, s, [&](uint8_t attribute, uint64_t at, uint16_t size) {
        uint32_t x = 0, y = 1, z = 1;
        if (attribute == 0x05 && size == 12 && r.read(at, x) && r.read(at + 4, y) &&
            r.read(at + 8, z))
          k->maxThreadsPerBlock = x * y * z;
      });
      if (!ok)
        return r.error("malformed " + s.name + " section");
    }
  }
  return info;
}

} // namespace volt::codegen
