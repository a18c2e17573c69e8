// loader/decode_bindings.h: the program's `decode` section resolved and checked (internal to
// amk_loader; docs/OPCODES.md "The decode section").
#pragma once
#include "ir/program.h"
#include "ir/status.h"
#include "loader/loader.h"

namespace amk::loader {

/// Parse program.decode (null = no decode interface; every field optional). token_input must be
/// an IO_INPUT I32 buffer, next_token an I32 buffer, logits an F32/BF16/F16 buffer of `vocab`
/// elements (vocab defaults to its numel), max_seq no more than any KV cache's rows (shape[0]).
/// Unknown keys are ignored. InvalidArgument naming the field (`decode.logits`) otherwise.
Result<DecodeBindings> decode_bindings(const ir::Program& program);

}  // namespace amk::loader
