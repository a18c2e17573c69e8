// ir/enums.cpp: on-disk enum names (spec 1.1) and element sizes.
#include "ir/enums.h"

#include <array>

namespace amk::ir {
namespace {

constexpr std::array<std::string_view, kDTypeCount> kDTypeNames = {
    "F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL"};
constexpr std::array<int, kDTypeCount> kDTypeBits = {32, 16, 16, 8, 8, 32, 8, 4, 8, 8};
constexpr std::array<std::string_view, kMemSpaceCount> kMemSpaceNames = {"HBM", "GLOBAL_SCRATCH", "SMEM",
                                                                          "REGISTER"};
constexpr std::array<std::string_view, kBufferKindCount> kBufferKindNames = {
    "WEIGHT", "ACTIVATION", "KV_CACHE", "IO_INPUT", "IO_OUTPUT", "CONST"};
constexpr std::array<std::string_view, kOpcodeCount> kOpcodeNames = {
#define AMK_OPCODE(Name, SPEC, code, min_in, max_in, outs, req) #SPEC,
#include "ir/opcodes.def"
#undef AMK_OPCODE
};

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

template <size_t N>
std::string_view name_at(const std::array<std::string_view, N>& names, int32_t code) {
  return (code >= 0 && static_cast<size_t>(code) < N) ? names[code] : std::string_view("?");
}

}  // namespace

std::string_view dtype_name(DType d) { return name_at(kDTypeNames, static_cast<int32_t>(d)); }
std::string_view mem_space_name(MemSpace s) { return name_at(kMemSpaceNames, static_cast<int32_t>(s)); }
std::string_view buffer_kind_name(BufferKind k) { return name_at(kBufferKindNames, static_cast<int32_t>(k)); }
std::string_view opcode_name(Opcode op) { return name_at(kOpcodeNames, static_cast<int32_t>(op)); }

std::optional<DType> dtype_from_name(std::string_view n) { return lookup<DType>(kDTypeNames, n); }
std::optional<MemSpace> mem_space_from_name(std::string_view n) { return lookup<MemSpace>(kMemSpaceNames, n); }
std::optional<BufferKind> buffer_kind_from_name(std::string_view n) {
  return lookup<BufferKind>(kBufferKindNames, n);
}
std::optional<Opcode> opcode_from_name(std::string_view n) { return lookup<Opcode>(kOpcodeNames, n); }

int dtype_bits(DType d) {
  auto i = static_cast<size_t>(d);
  return i < kDTypeBits.size() ? kDTypeBits[i] : 0;
}

int64_t dtype_nbytes(DType d, int64_t count) {
  const int64_t bits = dtype_bits(d);
  return (count * bits + 7) / 8;
}

}  // namespace amk::ir
