// loader/host_memory.h: 64-byte aligned, zero-filled host allocations owned by a ProgramImage.
// Every block is at least 64 bytes, so even an empty buffer gets a distinct, non-null pointer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace amk::loader {

/// Alignment of every host allocation the loader makes (a cache line; enough for any vector load).
inline constexpr size_t kHostAlignment = 64;

/// One owned allocation. Move-only.
class HostBlock {
 public:
  /// Allocate `bytes` (rounded up to a multiple of 64, at least 64) and zero them. Returns an empty
  /// block (data() == nullptr) when the allocation fails.
  static HostBlock allocate(uint64_t bytes);

  void* data() const { return ptr_.get(); }
  /// Usable bytes (the rounded size).
  uint64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, Free> ptr_;
  uint64_t size_ = 0;
};

}  // namespace amk::loader
