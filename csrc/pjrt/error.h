// One exception type for every PJRT failure, carrying the plugin's message
// and status code, plus the helper that turns a PJRT_Error* into it.
#pragma once

#include <stdexcept>
#include <string>

#include "pjrt/c_api.h"

namespace torch_tpu::pjrt {

class PjrtError : public std::runtime_error {
 public:
  PjrtError(c::ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  c::ErrorCode code() const { return code_; }
  // Plugins report some exhaustion under other codes: the XLA CPU plugin's
  // failed allocation of a program's buffers is INTERNAL, "... Out of
  // memory ...".
  bool is_out_of_memory() const {
    if (code_ == c::ErrorCode::kResourceExhausted) return true;
    const std::string text = what();
    return text.find("Out of memory") != std::string::npos || text.find("out of memory") != std::string::npos ||
           text.find("RESOURCE_EXHAUSTED") != std::string::npos;
  }

 private:
  c::ErrorCode code_;
};

const char* error_code_name(c::ErrorCode code);

// Reads the message and code of `error`, destroys it and returns the
// exception to throw. `call` names the C API function that failed.
PjrtError consume_error(const c::Api* api, c::Error* error, const char* call);

// Throws when a PJRT call returned an error.
inline void check(const c::Api* api, c::Error* error, const char* call) {
  if (error != nullptr) throw consume_error(api, error, call);
}

}  // namespace torch_tpu::pjrt
