// ir/json_read_dom.cpp: the small objects read from a DOM: GpuTarget (spec 5.1) and ScheduleConfig
// (spec 5). They are tiny, so a DOM is simplest; the program reader captures them and calls these.
// Unknown keys are dropped (forward compatibility); every error starts with the JSON path.
#include <cmath>
#include <limits>

#include "ir/json.h"
#include "ir/json_read_internal.h"

namespace amk::ir {
namespace {

using json = nlohmann::json;

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::string: return json_detail::json_quoted(v.get_ref<const std::string&>());
    default: return v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

std::string join(const std::string& path, const std::string& key) { return json_detail::json_path_key(path, key); }

std::string shown(const std::string& path) { return path.empty() ? "(root)" : path; }

Status type_error(const std::string& path, const std::string& expected, const json& got) {
  return Status(StatusCode::InvalidArgument, shown(path) + ": expected " + expected + ", got " + describe(got));
}

bool get_int64(const json& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  return false;
}

Status read_int64(const json& j, const std::string& path, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::ok();
  if (!get_int64(*it, out)) return type_error(join(path, key), "an int64 integer", *it);
  return Status::ok();
}

Status read_real(const json& j, const std::string& path, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::ok();
  if (!it->is_number() || !std::isfinite(it->get<double>())) return type_error(join(path, key), "a finite number", *it);
  out = it->get<double>();
  return Status::ok();
}

Status read_bool(const json& j, const std::string& path, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::ok();
  if (!it->is_boolean()) return type_error(join(path, key), "a bool", *it);
  out = it->get<bool>();
  return Status::ok();
}

Status read_string(const json& j, const std::string& path, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::ok();
  if (!it->is_string()) return type_error(join(path, key), "a string", *it);
  out = it->get<std::string>();
  return Status::ok();
}

// Python's int() of a key that json.dumps wrote from an int.
bool parse_int_key(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  size_t pos = 0;
  try {
    out = std::stoll(s, &pos, 10);
  } catch (const std::exception&) {
    return false;
  }
  return pos == s.size() && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'));
}

Status read_tiling(const json& v, const std::string& path, ScheduleConfig& c) {
  if (!v.is_object()) return type_error(path, "an object of {name: {param: int}} tile sizes", v);
  for (const auto& [op, sizes] : v.items()) {
    const std::string op_path = join(path, op);
    if (!sizes.is_object()) return type_error(op_path, "an object of int64 tile sizes", sizes);
    auto& dst = c.tiling[op];
    for (const auto& [name, size] : sizes.items()) {
      int64_t n = 0;
      if (!get_int64(size, n)) return type_error(join(op_path, name), "an int64 integer", size);
      dst[name] = n;
    }
  }
  return Status::ok();
}

Status read_fusion(const json& v, const std::string& path, ScheduleConfig& c) {
  if (!v.is_array()) return type_error(path, "an array of arrays of op names", v);
  for (size_t g = 0; g < v.size(); ++g) {
    const std::string gp = path + "[" + std::to_string(g) + "]";
    if (!v[g].is_array()) return type_error(gp, "an array of op names", v[g]);
    std::vector<std::string> group;
    for (size_t i = 0; i < v[g].size(); ++i) {
      if (!v[g][i].is_string()) return type_error(gp + "[" + std::to_string(i) + "]", "a string", v[g][i]);
      group.push_back(v[g][i].get<std::string>());
    }
    c.fusion_grouping.push_back(std::move(group));
  }
  return Status::ok();
}

Status read_sm_assignment(const json& v, const std::string& path, ScheduleConfig& c) {
  if (v.is_string()) {
    c.sm_assignment = v.get<std::string>();
    return Status::ok();
  }
  if (!v.is_object()) return type_error(path, "a strategy name or an object {task id: sm}", v);
  std::map<int64_t, int64_t> explicit_map;
  for (const auto& [key, sm] : v.items()) {
    const std::string kp = join(path, key);
    int64_t task = 0, n = 0;
    if (!parse_int_key(key, task)) return type_error(kp, "an integer task id as the key", json(key));
    if (!get_int64(sm, n)) return type_error(kp, "an int64 integer", sm);
    explicit_map[task] = n;
  }
  c.sm_assignment = std::move(explicit_map);
  return Status::ok();
}

}  // namespace

Result<GpuTarget> gpu_target_from_json(const nlohmann::json& j, const std::string& path) {
  try {
    if (!j.is_object()) return type_error(path, "an object", j);
    GpuTarget t;
    auto name = j.find("name");
    if (name == j.end())
      return Status(StatusCode::InvalidArgument, shown(path) + ": missing required key \"name\"");
    if (Status s = read_string(j, path, "name", t.name); !s) return s;
    const std::pair<const char*, int64_t GpuTarget::*> ints[] = {
        {"sm_arch", &GpuTarget::sm_arch},
        {"num_sms", &GpuTarget::num_sms},
        {"smem_bytes_per_sm", &GpuTarget::smem_bytes_per_sm},
        {"smem_bytes_per_block_optin", &GpuTarget::smem_bytes_per_block_optin},
        {"regs_per_sm", &GpuTarget::regs_per_sm},
        {"max_threads_per_sm", &GpuTarget::max_threads_per_sm},
        {"max_regs_per_thread", &GpuTarget::max_regs_per_thread},
        {"l2_bytes", &GpuTarget::l2_bytes},
        {"hbm_bytes", &GpuTarget::hbm_bytes},
    };
    for (const auto& [key, member] : ints)
      if (Status s = read_int64(j, path, key, t.*member); !s) return s;
    const std::pair<const char*, double GpuTarget::*> reals[] = {
        {"hbm_bandwidth_gbs", &GpuTarget::hbm_bandwidth_gbs},
        {"fp16_tflops", &GpuTarget::fp16_tflops},
        {"clock_ghz", &GpuTarget::clock_ghz},
    };
    for (const auto& [key, member] : reals)
      if (Status s = read_real(j, path, key, t.*member); !s) return s;
    if (Status s = read_bool(j, path, "supports_cooperative", t.supports_cooperative); !s) return s;
    if (Status s = read_bool(j, path, "wddm_tdr", t.wddm_tdr); !s) return s;
    if (Status s = read_string(j, path, "note", t.note); !s) return s;
    return t;
  } catch (const std::exception& e) {
    return Status(StatusCode::Internal, shown(path) + ": cannot read the target: " + e.what());
  }
}

Result<ScheduleConfig> schedule_config_from_json(const nlohmann::json& j, const std::string& path) {
  try {
    if (!j.is_object()) return type_error(path, "an object", j);
    ScheduleConfig c;
    if (auto it = j.find("tiling"); it != j.end())
      if (Status s = read_tiling(*it, join(path, "tiling"), c); !s) return s;
    if (auto it = j.find("fusion_grouping"); it != j.end())
      if (Status s = read_fusion(*it, join(path, "fusion_grouping"), c); !s) return s;
    if (auto it = j.find("sm_assignment"); it != j.end())
      if (Status s = read_sm_assignment(*it, join(path, "sm_assignment"), c); !s) return s;
    if (Status s = read_int64(j, path, "fast_sms", c.fast_sms); !s) return s;
    if (Status s = read_real(j, path, "fast_sm_ratio", c.fast_sm_ratio); !s) return s;
    if (Status s = read_int64(j, path, "pipelining_depth", c.pipelining_depth); !s) return s;
    if (Status s = read_string(j, path, "page_allocation", c.page_allocation); !s) return s;
    if (Status s = read_int64(j, path, "threads_per_block", c.threads_per_block); !s) return s;
    if (Status s = read_int64(j, path, "smem_bytes_per_block", c.smem_bytes_per_block); !s) return s;
    return c;
  } catch (const std::exception& e) {
    return Status(StatusCode::Internal, shown(path) + ": cannot read the config: " + e.what());
  }
}

}  // namespace amk::ir
