// loader/image_storage.h: what a ProgramImage owns besides its tables (internal to amk_loader).
// The stages of load_program() (bind_weights, allocate_buffers) record here every block they
// allocate and every region clear_state() must zero.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/host_memory.h"
#include "loader/loader.h"
#include "loader/safetensors.h"

namespace amk::loader {

struct ProgramImage::Storage {
  /// The weights file; kept open because zero-copy buffers point into its mapping.
  std::optional<SafetensorsFile> weights;
  /// Every host allocation (copied/synthesized weights, pages, activations, KV caches, IO).
  std::vector<HostBlock> blocks;
  /// Mutable state: the regions clear_state() zeroes.
  struct Region {
    void* ptr;
    uint64_t bytes;
  };
  std::vector<Region> state;
  /// Per buffer id: resolved pointer and the bytes it owns.
  std::vector<void*> ptrs;
  std::vector<int64_t> bytes;
  std::unordered_map<std::string, int32_t> by_name;

  /// A new zeroed block of `bytes`, or nullptr when the host is out of memory.
  void* allocate(uint64_t bytes_wanted) {
    HostBlock b = HostBlock::allocate(bytes_wanted);
    void* p = b.data();
    if (p != nullptr) blocks.push_back(std::move(b));
    return p;
  }
};

}  // namespace amk::loader
