// loader/allocate.cpp: pages, activations, KV caches and IO buffers.
#include "loader/allocate.h"

#include "loader/names.h"

namespace amk::loader {
namespace {

Status out_of_memory(const std::string& who, int64_t bytes) {
  return Status(StatusCode::Internal, who + ": out of host memory for " + std::to_string(bytes) + " bytes");
}

/// A zeroed block that clear_state() will zero again.
void* allocate_state(ProgramImage::Storage& storage, int64_t bytes) {
  void* p = storage.allocate(static_cast<uint64_t>(bytes));
  if (p != nullptr) storage.state.push_back({p, static_cast<uint64_t>(bytes)});
  return p;
}

}  // namespace

Status allocate_buffers(const ir::Program& program, ProgramImage::Storage& storage) {
  std::vector<bool> paged(program.buffers.size(), false);
  if (program.pages) {
    std::vector<void*> page_ptr(program.pages->pages.size(), nullptr);
    for (const ir::Page& page : program.pages->pages) {
      page_ptr[page.id.value] = allocate_state(storage, page.nbytes);
      if (page_ptr[page.id.value] == nullptr) return out_of_memory("page " + std::to_string(page.id.value), page.nbytes);
    }
    // Ids are dense (check_structure), so they index these tables directly.
    std::vector<const ir::Buffer*> buffer_by_id(program.buffers.size());
    for (const ir::Buffer& b : program.buffers) buffer_by_id[b.id.value] = &b;
    std::vector<const ir::Page*> page_by_id(program.pages->pages.size());
    for (const ir::Page& g : program.pages->pages) page_by_id[g.id.value] = &g;
    for (const auto& [bid, pid] : program.pages->buffer_to_page) {
      const ir::Buffer* b = buffer_by_id[bid.value];
      const ir::Page* page = page_by_id[pid.value];
      const std::string where = buffer_name(*b) + " on page " + std::to_string(pid.value);
      if (b->kind != ir::BufferKind::Activation)
        return Status(StatusCode::InvalidArgument, where + ": only ACTIVATION buffers can be bound to a page, this one is " +
                                                       std::string(ir::buffer_kind_name(b->kind)));
      if (b->nbytes() > page->nbytes)
        return Status(StatusCode::InvalidArgument, where + ": the buffer needs " + std::to_string(b->nbytes()) +
                                                       " bytes, the page holds " + std::to_string(page->nbytes));
      storage.ptrs[bid.value] = page_ptr[pid.value];
      storage.bytes[bid.value] = b->nbytes();
      paged[bid.value] = true;
    }
  }
  for (const ir::Buffer& b : program.buffers) {
    if (b.kind == ir::BufferKind::Weight || b.kind == ir::BufferKind::Const || paged[b.id.value]) continue;
    void* p = allocate_state(storage, b.nbytes());
    if (p == nullptr) return out_of_memory(buffer_name(b), b.nbytes());
    storage.ptrs[b.id.value] = p;
    storage.bytes[b.id.value] = b.nbytes();
  }
  return Status::ok();
}

}  // namespace amk::loader
