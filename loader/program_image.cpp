// loader/program_image.cpp: ProgramImage's own methods (what load_program() builds is in
// load_program.cpp).
#include <cstring>

#include "loader/image_storage.h"

namespace amk::loader {

ProgramImage::ProgramImage() : storage_(std::make_unique<Storage>()) {}
ProgramImage::~ProgramImage() = default;

int32_t ProgramImage::buffer_index(const std::string& name) const {
  auto it = storage_->by_name.find(name);
  return it == storage_->by_name.end() ? -1 : it->second;
}

void ProgramImage::clear_state() {
  for (const Storage::Region& r : storage_->state) std::memset(r.ptr, 0, r.bytes);
  std::fill(counters_.begin(), counters_.end(), 0u);
  error_ = amk_error_slot_t{};
  abort_flag_ = 0;
  step_ = amk_step_t{};
  step_.epoch = 1;
}

const SafetensorsFile* ProgramImage::weights() const {
  return storage_->weights ? &*storage_->weights : nullptr;
}

int64_t ProgramImage::buffer_bytes(int32_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= storage_->bytes.size()) return -1;
  return storage_->bytes[index];
}

}  // namespace amk::loader
