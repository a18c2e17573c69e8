// loader/allocate.h: host memory for every buffer that is not a weight (internal to amk_loader).
#pragma once
#include "ir/program.h"
#include "ir/status.h"
#include "loader/image_storage.h"

namespace amk::loader {

/// ACTIVATION buffers: with `pages`, one block per page, and every buffer bound to a page starts at
/// its base (it must fit: nbytes <= page.nbytes); unbound activations get their own block.
/// KV_CACHE, IO_INPUT and IO_OUTPUT: their own blocks. SMEM/REGISTER buffers get host memory too
/// (the CPU VM has no shared memory). Blocks are 64-byte aligned and zeroed, and recorded in
/// storage.state for clear_state(). Only ACTIVATION buffers may be bound to a page.
Status allocate_buffers(const ir::Program& program, ProgramImage::Storage& storage);

}  // namespace amk::loader
