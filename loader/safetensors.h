// loader/safetensors.h: a read-only, validating reader of Hugging Face safetensors files.
// Layout: 8-byte little-endian header length N, N bytes of JSON header, then the data section.
// open() maps the file (read-only, MAP_PRIVATE) and checks every header entry before returning, so
// a SafetensorsFile that exists is consistent: every tensor lies inside the data section, its byte
// size is numel * itemsize and no two tensors overlap. Errors name the tensor (or header field).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/enums.h"
#include "ir/status.h"

namespace amk::loader {

/// Element types a safetensors header may name (the format's full list).
enum class StDType { Bool, U8, I8, F8E4M3, F8E5M2, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

/// The header spelling ("BF16", "F8_E4M3", ...).
std::string_view st_dtype_name(StDType d);
/// The dtype spelled `name`, or nullopt for an unknown name.
std::optional<StDType> st_dtype_from_name(std::string_view name);
/// Bytes per element.
int st_dtype_itemsize(StDType d);
/// The IR dtype with the same bit layout, or nullopt (I16, U16, U32, F64, I64, U64 have none).
std::optional<ir::DType> st_dtype_to_ir(StDType d);
/// The safetensors dtype an IR dtype is stored as, or nullopt (I4 has no safetensors spelling).
std::optional<StDType> st_dtype_from_ir(ir::DType d);

/// One header entry, checked against the file.
struct TensorInfo {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  uint64_t begin = 0;  ///< byte offset into the data section
  uint64_t end = 0;    ///< one past the last byte; end - begin == numel * itemsize
  uint64_t nbytes() const { return end - begin; }
};

/// Headers longer than this are refused as corrupt (real headers are a few hundred KB at most).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull * 1000 * 1000;

/// An open, validated safetensors file. Move-only; the mapping lives as long as the object.
class SafetensorsFile {
 public:
  /// Map and validate `path`. IoError when it cannot be read; ParseError naming the tensor or
  /// field for anything malformed.
  static Result<SafetensorsFile> open(const std::string& path);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  /// The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  /// All tensors, in header order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// First byte of a tensor's data (inside the read-only mapping; valid while this object lives).
  const void* data(const TensorInfo& info) const;
  /// The `__metadata__` map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }
  /// Size of the whole file in bytes.
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  SafetensorsFile() = default;
  void unmap() noexcept;

  std::string path_;
  const uint8_t* map_ = nullptr;
  uint64_t file_bytes_ = 0;
  uint64_t data_offset_ = 0;  ///< 8 + N
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, std::string> metadata_;
};

/// One tensor for safetensors_write(): raw little-endian bytes of numel * itemsize.
struct TensorBytes {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Write a safetensors file (tensors in the given order, header padded with spaces to 8 bytes).
/// Used by tests and tools that make small weight files; checks sizes and names.
Status safetensors_write(const std::string& path, const std::vector<TensorBytes>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace amk::loader
