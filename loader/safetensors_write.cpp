// loader/safetensors_write.cpp: write small safetensors files (test fixtures, random-weight dumps).
// Tensors are laid out back to back in the given order; the header is padded with spaces so the
// data section starts 8-byte aligned, as the Hugging Face writer does.
#include <cstdio>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "loader/safetensors.h"

namespace amk::loader {

Status safetensors_write(const std::string& path, const std::vector<TensorBytes>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorBytes& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      return Status(StatusCode::InvalidArgument, "tensor \"" + t.name + "\": name is reserved or repeated");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) return Status(StatusCode::InvalidArgument, "tensor \"" + t.name + "\": negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * static_cast<uint64_t>(st_dtype_itemsize(t.dtype)) != t.bytes.size())
      return Status(StatusCode::InvalidArgument, "tensor \"" + t.name + "\": " + std::to_string(t.bytes.size()) +
                                                     " bytes given for " + std::to_string(numel) + " elements of " +
                                                     std::string(st_dtype_name(t.dtype)));
    header[t.name] = {{"dtype", std::string(st_dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return Status(StatusCode::IoError, path + ": cannot open for writing");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 && std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (const TensorBytes& t : tensors)
    ok = ok && (t.bytes.empty() || std::fwrite(t.bytes.data(), 1, t.bytes.size(), f.get()) == t.bytes.size());
  if (std::fclose(f.release()) != 0) ok = false;
  if (!ok) return Status(StatusCode::IoError, path + ": write failed");
  return Status::ok();
}

}  // namespace amk::loader
