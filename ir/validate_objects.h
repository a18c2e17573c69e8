// ir/validate_objects.h: memory objects and their accesses, grouped for the race checker and the
// adversarial simulator (internal). An object is a buffer, addressed as [rows, cols] elements (or
// as bytes for packed sub-byte dtypes, where two tiles may share a byte), or a page shared by
// several buffers, addressed as bytes (every bound buffer starts at byte 0 of its page).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/access.h"
#include "ir/validate_index.h"

namespace amk::ir::detail {

/// A half-open box in object coordinates (byte objects use row [0, 1) and cols = bytes).
struct Box {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

struct ObjAccess {
  int32_t task = 0;      ///< task position
  int32_t buffer = 0;    ///< buffer position
  bool write = false;
  int32_t box_begin = 0, box_end = 0;  ///< into MemObjects::boxes
  bool accumulate = false;             ///< a write that adds into the memory (Access::accumulate)
};

struct MemObjects {
  int32_t n_buffers = 0;                 ///< objects [0, n_buffers) are buffers, the rest pages
  std::vector<int32_t> page_object;      ///< per buffer: its page's object, or -1
  std::vector<int32_t> object_page;      ///< per page object: the page position
  std::vector<uint8_t> byte_mode;        ///< per object
  std::vector<int32_t> begin;            ///< CSR object -> accesses (in the given task sequence order)
  std::vector<ObjAccess> accesses;
  std::vector<Box> boxes;
  int32_t n_objects() const { return static_cast<int32_t>(begin.size()) - 1; }
};

/// Accesses of the tasks in `sequence`, in that order, for every buffer, and for every page that
/// binds two or more buffers. Requires resolved buffer references for those tasks.
MemObjects build_objects(const ProgramIndex& ix, const std::vector<int32_t>& sequence);

/// A region of `buffer` in byte coordinates of its memory (clamped to the buffer).
void region_bytes(const Buffer& buffer, const Region& r, std::vector<Box>& out);

}  // namespace amk::ir::detail
