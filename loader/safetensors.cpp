// loader/safetensors.cpp: open a safetensors file by mmap (read-only, MAP_PRIVATE) and check it.
// The mapping is never written: weights bound zero-copy point straight into it, and any store
// through such a pointer faults instead of corrupting the file.
#include "loader/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "loader/safetensors_header.h"

namespace amk::loader {
namespace {

struct DTypeRow {
  StDType dtype;
  std::string_view name;
  int itemsize;
  int ir;  ///< ir::DType code, or -1
};

constexpr std::array<DTypeRow, 15> kDTypes = {{
    {StDType::Bool, "BOOL", 1, static_cast<int>(ir::DType::Bool)},
    {StDType::U8, "U8", 1, static_cast<int>(ir::DType::U8)},
    {StDType::I8, "I8", 1, static_cast<int>(ir::DType::I8)},
    {StDType::F8E4M3, "F8_E4M3", 1, static_cast<int>(ir::DType::F8E4M3)},
    {StDType::F8E5M2, "F8_E5M2", 1, static_cast<int>(ir::DType::F8E5M2)},
    {StDType::I16, "I16", 2, -1},
    {StDType::U16, "U16", 2, -1},
    {StDType::F16, "F16", 2, static_cast<int>(ir::DType::F16)},
    {StDType::BF16, "BF16", 2, static_cast<int>(ir::DType::BF16)},
    {StDType::I32, "I32", 4, static_cast<int>(ir::DType::I32)},
    {StDType::U32, "U32", 4, -1},
    {StDType::F32, "F32", 4, static_cast<int>(ir::DType::F32)},
    {StDType::F64, "F64", 8, -1},
    {StDType::I64, "I64", 8, -1},
    {StDType::U64, "U64", 8, -1},
}};

const DTypeRow& row(StDType d) { return kDTypes[static_cast<size_t>(d)]; }

Status io_error(const std::string& path, const std::string& what) {
  return Status(StatusCode::IoError, path + ": " + what + ": " + std::strerror(errno));
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string_view st_dtype_name(StDType d) { return row(d).name; }
int st_dtype_itemsize(StDType d) { return row(d).itemsize; }

std::optional<StDType> st_dtype_from_name(std::string_view name) {
  for (const DTypeRow& r : kDTypes)
    if (r.name == name) return r.dtype;
  return std::nullopt;
}

std::optional<ir::DType> st_dtype_to_ir(StDType d) {
  if (row(d).ir < 0) return std::nullopt;
  return static_cast<ir::DType>(row(d).ir);
}

std::optional<StDType> st_dtype_from_ir(ir::DType d) {
  for (const DTypeRow& r : kDTypes)
    if (r.ir == static_cast<int>(d)) return r.dtype;
  return std::nullopt;
}

static_assert(kDTypes.size() == static_cast<size_t>(StDType::U64) + 1, "kDTypes must list every StDType in order");

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = io_error(path, "cannot stat");
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(StatusCode::IoError, path + ": not a regular file");
  }
  file.file_bytes_ = static_cast<uint64_t>(st.st_size);
  if (file.file_bytes_ < 8) {
    ::close(fd);
    return Status(StatusCode::ParseError, path + ": file is " + std::to_string(file.file_bytes_) +
                                              " bytes, shorter than the 8-byte header length");
  }
  void* map = ::mmap(nullptr, file.file_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (map == MAP_FAILED) {
    errno = map_errno;
    return io_error(path, "cannot mmap");
  }
  file.map_ = static_cast<const uint8_t*>(map);

  const uint64_t n = read_le64(file.map_);
  if (n > kSafetensorsMaxHeaderBytes)
    return Status(StatusCode::ParseError, path + ": header length " + std::to_string(n) + " is absurd (more than " +
                                              std::to_string(kSafetensorsMaxHeaderBytes) + " bytes)");
  if (n > file.file_bytes_ - 8)
    return Status(StatusCode::ParseError, path + ": header length " + std::to_string(n) + " exceeds the file (" +
                                              std::to_string(file.file_bytes_) + " bytes, " +
                                              std::to_string(file.file_bytes_ - 8) + " after the length)");
  file.data_offset_ = 8 + n;
  std::string_view header(reinterpret_cast<const char*>(file.map_ + 8), n);
  auto parsed = safetensors_parse_header(header, file.file_bytes_ - file.data_offset_);
  if (!parsed) return Status(parsed.status().code(), path + ": " + parsed.status().message());
  file.tensors_ = std::move(parsed->tensors);
  file.metadata_ = std::move(parsed->metadata);
  for (size_t i = 0; i < file.tensors_.size(); ++i) file.by_name_.emplace(file.tensors_[i].name, i);
  return Result<SafetensorsFile>(std::move(file));
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : path_(std::move(o.path_)),
      map_(std::exchange(o.map_, nullptr)),
      file_bytes_(std::exchange(o.file_bytes_, 0)),
      data_offset_(o.data_offset_),
      tensors_(std::move(o.tensors_)),
      by_name_(std::move(o.by_name_)),
      metadata_(std::move(o.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    unmap();
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    file_bytes_ = std::exchange(o.file_bytes_, 0);
    data_offset_ = o.data_offset_;
    tensors_ = std::move(o.tensors_);
    by_name_ = std::move(o.by_name_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

void SafetensorsFile::unmap() noexcept {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), file_bytes_);
  map_ = nullptr;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& kv : by_name_) out.push_back(kv.first);
  return out;
}

const void* SafetensorsFile::data(const TensorInfo& info) const { return map_ + data_offset_ + info.begin; }

}  // namespace amk::loader
