// tools/common/json_out.cpp: helpers of tools/common/json_out.h.
#include "tools/common/json_out.h"

#include <algorithm>
#include <numeric>

namespace amk::tools {

const char* amk_version() { return AMK_VERSION; }

Json json_document(const std::string& tool) {
  Json doc;
  doc["tool"] = tool;
  doc["version"] = amk_version();
  doc["ok"] = false;
  doc["exit_code"] = 0;
  doc["error"] = nullptr;
  return doc;
}

void json_succeed(Json& doc) {
  doc["ok"] = true;
  doc["exit_code"] = 0;
  doc["error"] = nullptr;
}

void json_fail(Json& doc, const std::string& code, const std::string& message, int exit_code) {
  doc["ok"] = false;
  doc["exit_code"] = exit_code;
  doc["error"] = {{"code", code}, {"message", message}};
}

void json_fail(Json& doc, const Status& status, int exit_code) {
  json_fail(doc, status_code_name(status.code()), status.message(), exit_code);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[idx];
}

Json json_latency_us(const std::vector<double>& samples_us) {
  const bool empty = samples_us.empty();
  Json j;
  j["median"] = percentile(samples_us, 0.5);
  j["p90"] = percentile(samples_us, 0.9);
  j["min"] = empty ? 0.0 : *std::min_element(samples_us.begin(), samples_us.end());
  j["max"] = empty ? 0.0 : *std::max_element(samples_us.begin(), samples_us.end());
  j["mean"] = empty ? 0.0
                    : std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / static_cast<double>(samples_us.size());
  j["count"] = samples_us.size();
  return j;
}

std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace amk::tools
