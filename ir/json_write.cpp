// ir/json_write.cpp: program_to_json and program_save (IR spec section 6).
// The program is streamed straight into a string in exactly the layout of nlohmann's dump(2) (also
// Python's json.dumps(indent=2), up to float spelling and \u escapes), so a million-task program
// needs no DOM and program_save needs no whole-file buffer. Small free-form parts (meta, decode,
// target, config) go through nlohmann and are re-indented in place.
// Invariant: program_to_json(program_from_json_text(program_to_json(p))) == program_to_json(p)
// for every p holding only finite reals (a NaN has no JSON spelling; nlohmann writes null).
#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "ir/json.h"

namespace amk::ir {
namespace {

using ojson = nlohmann::ordered_json;

// A streaming writer of indent-2 JSON: "{" then per element ",\n" + indent, then "\n" + indent + "}".
class Writer {
 public:
  /// `flush`, when given, is handed the text so far whenever it passes kFlushBytes.
  explicit Writer(std::string& out, std::function<void(std::string&)> flush = nullptr)
      : out_(out), flush_(std::move(flush)) {}

  // Called between list elements: keeps a streaming save's memory bounded.
  void maybe_flush() {
    if (flush_ && out_.size() >= kFlushBytes) flush_(out_);
  }

  void open(char c) {
    out_.push_back(c);
    first_.push_back(true);
  }
  void close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_.push_back(c);
  }
  // Call before every array element.
  Writer& item() {
    if (first_.back()) first_.back() = false;
    else out_.push_back(',');
    newline();
    return *this;
  }
  Writer& key(std::string_view k) {
    item();
    str(k);
    out_.append(": ");
    return *this;
  }

  void null() { out_.append("null"); }
  void boolean(bool b) { out_.append(b ? "true" : "false"); }
  void i64(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void real(double d) { out_.append(ojson(d).dump()); }  // nlohmann's shortest round-trip form
  void str(std::string_view s) {
    // Fast path for the common case (ids, labels): printable ASCII with nothing to escape.
    for (unsigned char c : s) {
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
        out_.append(ojson(std::string(s)).dump(-1, ' ', false, ojson::error_handler_t::replace));
        return;
      }
    }
    out_.push_back('"');
    out_.append(s);
    out_.push_back('"');
  }
  // A DOM value, laid out as if it had been written in place at the current depth.
  void dom(const ojson& j) {
    const std::string text = j.dump(2, ' ', false, ojson::error_handler_t::replace);
    const std::string indent(2 * first_.size(), ' ');
    for (char c : text) {  // strings never hold a raw newline, so every '\n' is layout
      out_.push_back(c);
      if (c == '\n') out_.append(indent);
    }
  }
  void param(const ParamValue& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) i64(*i);
    else if (const auto* d = std::get_if<double>(&v)) real(*d);
    else if (const auto* s = std::get_if<std::string>(&v)) str(*s);
    else boolean(std::get<bool>(v));
  }
  template <typename T>
  void id_list(const std::vector<T>& ids) {
    open('[');
    for (const T& id : ids) {
      item();
      i64(id.value);
    }
    close(']');
  }

 private:
  void newline() {
    out_.push_back('\n');
    out_.append(2 * first_.size(), ' ');
  }

  static constexpr size_t kFlushBytes = size_t{1} << 20;
  std::string& out_;
  std::function<void(std::string&)> flush_;
  std::vector<bool> first_;  ///< per open container: no element written yet
};

void write_buffer(Writer& w, const Buffer& b) {
  w.open('{');
  w.key("id").i64(b.id.value);
  w.key("name").str(b.name);
  w.key("kind").str(buffer_kind_name(b.kind));
  w.key("dtype").str(dtype_name(b.dtype));
  w.key("shape").open('[');
  for (int64_t d : b.shape) w.item().i64(d);
  w.close(']');
  w.key("space").str(mem_space_name(b.space));
  w.key("source");
  if (b.source) w.str(*b.source);
  else w.null();
  // Only stacked buffers carry the key, so every other program's text is unchanged.
  if (b.stacked()) {
    w.key("stack").open('[');
    for (const StackPart& part : b.stack) {
      w.item().open('{');
      w.key("source").str(part.source);
      w.key("transpose").boolean(part.transpose);
      w.close('}');
    }
    w.close(']');
  }
  // Likewise only permuted buffers carry "rope_pairs".
  if (b.rope_permuted()) w.key("rope_pairs").i64(b.rope_pairs);
  w.close('}');
}

void write_counter(Writer& w, const Counter& c) {
  w.open('{');
  w.key("id").i64(c.id.value);
  w.key("init").i64(c.init);
  w.key("note").str(c.note);
  w.close('}');
}

void write_task(Writer& w, const Task& t) {
  w.open('{');
  w.key("id").i64(t.id.value);
  w.key("op").str(opcode_name(t.op));
  w.key("inputs").id_list(t.inputs);
  w.key("outputs").id_list(t.outputs);
  w.key("out_counter").i64(t.out_counter.value);
  w.key("waits").open('[');
  for (const Wait& wt : t.waits) {
    w.item().open('{');
    w.key("counter").i64(wt.counter.value);
    w.key("threshold").i64(wt.threshold);
    w.close('}');
  }
  w.close(']');
  w.key("params").open('{');
  for (const auto& [k, v] : t.params.items()) w.key(k).param(v);
  w.close('}');
  w.key("sm");
  if (t.sm) w.i64(*t.sm);
  else w.null();
  w.key("est_bytes").i64(t.est_bytes);
  w.key("est_flops").i64(t.est_flops);
  w.key("label").str(t.label);
  w.close('}');
}

void write_pages(Writer& w, const PageAllocation& pa) {
  w.open('{');
  w.key("buffer_to_page").open('{');
  for (const auto& [buf, page] : pa.buffer_to_page) w.key(std::to_string(buf.value)).i64(page.value);
  w.close('}');
  w.key("pages").open('[');
  for (const Page& p : pa.pages) {
    w.item().open('{');
    w.key("id").i64(p.id.value);
    w.key("space").str(mem_space_name(p.space));
    w.key("nbytes").i64(p.nbytes);
    w.key("live_start").i64(p.live_start);
    w.key("live_end").i64(p.live_end);
    w.close('}');
  }
  w.close(']');
  w.close('}');
}

void write_program(Writer& w, const Program& p) {
  w.open('{');
  w.key("ir_version").str(p.ir_version);
  w.key("abi_version").str(p.abi_version);
  w.key("meta").dom(p.meta);
  w.key("target");
  if (p.target) w.dom(gpu_target_to_json(*p.target));
  else w.null();
  w.key("buffers").open('[');
  for (const Buffer& b : p.buffers) {
    write_buffer(w.item(), b);
    w.maybe_flush();
  }
  w.close(']');
  w.key("counters").open('[');
  for (const Counter& c : p.counters) {
    write_counter(w.item(), c);
    w.maybe_flush();
  }
  w.close(']');
  w.key("tasks").open('[');
  for (const Task& t : p.tasks) {
    write_task(w.item(), t);
    w.maybe_flush();
  }
  w.close(']');
  w.key("pages");
  if (p.pages) write_pages(w, *p.pages);
  else w.null();
  w.key("config");
  if (p.config) w.dom(schedule_config_to_json(*p.config));
  else w.null();
  if (!p.decode.is_null()) w.key("decode").dom(p.decode);
  w.close('}');
}

using Flush = std::function<void(std::string&)>;

// Writes what `produce` emits (through the Flush it is given) to a temporary file in the same
// directory, then renames it over `path`: readers see the old file or the new one, never a part.
Status write_file_atomic(const std::string& path, const std::function<void(const Flush&)>& produce) {
  std::string tmp;
  const int fd = temp_file_beside(path, &tmp);
  if (fd < 0) return Status(StatusCode::IoError, path + ": cannot create a temporary file: " + std::strerror(errno));
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot " + what + (err ? ": " + std::string(std::strerror(err)) : ""));
  };
  // mkstemp makes the file 0600; a program is not a secret, and an overwritten file keeps its mode.
  struct stat st {};
  const mode_t mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) return fail("set the mode of the temporary file", errno);
  int write_err = 0;  // the first write error; later flushes are dropped
  const Flush flush = [&](std::string& chunk) {
    size_t done = 0;
    while (write_err == 0 && done < chunk.size()) {
      const ssize_t n = ::write(fd, chunk.data() + done, chunk.size() - done);
      if (n < 0 && errno != EINTR) write_err = errno;
      if (n > 0) done += static_cast<size_t>(n);
    }
    chunk.clear();
  };
  try {
    produce(flush);
  } catch (const std::exception& e) {
    return fail(std::string("serialize the program: ") + e.what(), 0);
  }
  if (write_err != 0) return fail("write", write_err);
  if (::fsync(fd) != 0) return fail("flush", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot write: " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot rename the temporary file into place: " + std::strerror(err));
  }
  return Status::ok();
}

}  // namespace

nlohmann::ordered_json gpu_target_to_json(const GpuTarget& t) {
  ojson j = ojson::object();
  j["name"] = t.name;
  j["sm_arch"] = t.sm_arch;
  j["num_sms"] = t.num_sms;
  j["smem_bytes_per_sm"] = t.smem_bytes_per_sm;
  j["smem_bytes_per_block_optin"] = t.smem_bytes_per_block_optin;
  j["regs_per_sm"] = t.regs_per_sm;
  j["max_threads_per_sm"] = t.max_threads_per_sm;
  j["max_regs_per_thread"] = t.max_regs_per_thread;
  j["l2_bytes"] = t.l2_bytes;
  j["hbm_bytes"] = t.hbm_bytes;
  j["hbm_bandwidth_gbs"] = t.hbm_bandwidth_gbs;
  j["fp16_tflops"] = t.fp16_tflops;
  j["clock_ghz"] = t.clock_ghz;
  j["supports_cooperative"] = t.supports_cooperative;
  j["wddm_tdr"] = t.wddm_tdr;
  j["note"] = t.note;
  return j;
}

nlohmann::ordered_json schedule_config_to_json(const ScheduleConfig& c) {
  ojson j = ojson::object();
  ojson tiling = ojson::object();
  for (const auto& [op, sizes] : c.tiling) {
    ojson s = ojson::object();
    for (const auto& [k, v] : sizes) s[k] = v;
    tiling[op] = std::move(s);
  }
  j["tiling"] = std::move(tiling);
  ojson fusion = ojson::array();
  for (const auto& group : c.fusion_grouping) fusion.push_back(group);
  j["fusion_grouping"] = std::move(fusion);
  if (const auto* name = std::get_if<std::string>(&c.sm_assignment)) {
    j["sm_assignment"] = *name;
  } else {
    ojson m = ojson::object();
    for (const auto& [task, sm] : std::get<std::map<int64_t, int64_t>>(c.sm_assignment)) m[std::to_string(task)] = sm;
    j["sm_assignment"] = std::move(m);
  }
  // Written only when set, so programs without them read as before (the spec has neither).
  if (c.fast_sms != 0) j["fast_sms"] = c.fast_sms;
  if (c.fast_sm_ratio != 1.0) j["fast_sm_ratio"] = c.fast_sm_ratio;
  j["pipelining_depth"] = c.pipelining_depth;
  j["page_allocation"] = c.page_allocation;
  j["threads_per_block"] = c.threads_per_block;
  j["smem_bytes_per_block"] = c.smem_bytes_per_block;
  return j;
}

std::string program_to_json(const Program& p) {
  std::string out;
  try {
    out.reserve(256 + 128 * p.buffers.size() + 64 * p.counters.size() + 512 * p.tasks.size());
    Writer w(out);
    write_program(w, p);
  } catch (const std::exception&) {
    out.clear();  // only allocation can fail here
  }
  return out;
}

Status program_save(const Program& program, const std::string& path) {
  try {
    return write_file_atomic(path, [&](const Flush& flush) {
      std::string out;
      Writer w(out, flush);
      write_program(w, program);
      out.push_back('\n');
      flush(out);
    });
  } catch (const std::exception& e) {  // std::function copies can throw before the file exists
    return Status(StatusCode::Internal, path + ": cannot save the program: " + e.what());
  }
}

// A unique name, not a fixed "<path>.tmp": two writers of one path must not write into each
// other, nor overwrite whatever a user keeps under that name.
int temp_file_beside(const std::string& path, std::string* tmp) {
  std::string name = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd >= 0) *tmp = std::move(name);
  return fd;
}

Status text_save_atomic(const std::string& path, std::string_view text) {
  try {
    return write_file_atomic(path, [&](const Flush& flush) {
      std::string chunk(text);
      flush(chunk);
    });
  } catch (const std::exception& e) {  // out of memory copying `text`
    return Status(StatusCode::Internal, path + ": cannot save: " + e.what());
  }
}

}  // namespace amk::ir
