// ir/enums.h: the canonical enums of the AMK IR (spec section 1.1) and their on-disk names.
// Numeric codes are canonical and mirrored by vm/abi.h (tests/ir/abi_sync_test.cpp checks it).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace amk::ir {

/// Element types. I4 is packed two per byte.
enum class DType : int32_t { F32 = 0, F16 = 1, BF16 = 2, F8E4M3 = 3, F8E5M2 = 4, I32 = 5, I8 = 6, I4 = 7, U8 = 8, Bool = 9 };
inline constexpr int kDTypeCount = 10;

/// Where a buffer lives.
enum class MemSpace : int32_t { Hbm = 0, GlobalScratch = 1, Smem = 2, Register = 3 };
inline constexpr int kMemSpaceCount = 4;

/// What a buffer is for; decides who may read and write it.
enum class BufferKind : int32_t { Weight = 0, Activation = 1, KvCache = 2, IoInput = 3, IoOutput = 4, Const = 5 };
inline constexpr int kBufferKindCount = 6;

/// The instruction set, expanded from ir/opcodes.def.
enum class Opcode : int32_t {
#define AMK_OPCODE(Name, SPEC, code, min_in, max_in, outs, req) Name = code,
#include "ir/opcodes.def"
#undef AMK_OPCODE
};
inline constexpr int kOpcodeCount = 20;

// ABI capacities (spec section 8).
inline constexpr int kMaxInputs = 8;
inline constexpr int kMaxOutputs = 4;
inline constexpr int kMaxWaits = 8;
inline constexpr int kMaxRank = 4;
/// ATTENTION_COMBINE merges at most this many partials (operands x their stacked rows; an amk
/// limit, instructions/attention_combine.h keeps the same).
inline constexpr int kMaxCombinePartials = 16;

/// Spec names ("BF16", "GEMV_TILE", ...) and the reverse look-ups; nullopt for unknown names.
std::string_view dtype_name(DType d);
std::string_view mem_space_name(MemSpace s);
std::string_view buffer_kind_name(BufferKind k);
std::string_view opcode_name(Opcode op);
std::optional<DType> dtype_from_name(std::string_view name);
std::optional<MemSpace> mem_space_from_name(std::string_view name);
std::optional<BufferKind> buffer_kind_from_name(std::string_view name);
std::optional<Opcode> opcode_from_name(std::string_view name);

/// Bits per element (4 for I4).
int dtype_bits(DType d);
/// Bytes needed for `count` elements, rounding packed sub-byte types up.
int64_t dtype_nbytes(DType d, int64_t count);

/// WEIGHT, CONST and IO_INPUT: never written by a task, readable without a producer.
inline bool buffer_kind_is_readonly(BufferKind k) {
  return k == BufferKind::Weight || k == BufferKind::Const || k == BufferKind::IoInput;
}
/// ACTIVATION and IO_OUTPUT: hold nothing until a task of this pass writes them.
inline bool buffer_kind_is_transient(BufferKind k) {
  return k == BufferKind::Activation || k == BufferKind::IoOutput;
}
/// SMEM and REGISTER live on one SM; every task touching such a buffer must run there.
inline bool mem_space_is_on_chip(MemSpace s) { return s == MemSpace::Smem || s == MemSpace::Register; }

}  // namespace amk::ir
