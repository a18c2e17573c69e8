// tools/bench/bench_report.cpp: see bench_report.h.
#include "tools/bench/bench_report.h"

#include <iostream>

namespace amk::bench {

tools::Json bench_document(const char* bench) {
  tools::Json doc = tools::json_document("amk-bench");
  doc["bench"] = bench;
  doc["backend"] = "cuda";
  return doc;
}

tools::Json bench_model_document(const char* bench, const std::string& device, const std::string& model,
                                 const std::string& target) {
  tools::Json doc = bench_document(bench);
  tools::json_succeed(doc);
  doc["device"] = device;
  doc["model"] = model;
  doc["target"] = target;
  return doc;
}

const char* bench_error_code(int exit_code) {
  switch (exit_code) {
    case 1: return "InvalidArgument";
    case 3: return "GpuRuntime";
    case 4: return "Mismatch";
    default: return "Internal";
  }
}

int bench_fail(const char* bench, bool json, int exit_code, const std::string& code, const std::string& message) {
  std::cerr << "amk-bench " << bench << ": " << message << "\n";
  if (json) {
    tools::Json doc = bench_document(bench);
    tools::json_fail(doc, code, message, exit_code);
    std::cout << tools::json_text(doc);
  }
  return exit_code;
}

}  // namespace amk::bench
