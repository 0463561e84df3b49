#include "pjrt/error.h"

namespace torch_tpu::pjrt {

const char* error_code_name(c::ErrorCode code) {
  switch (code) {
    case c::ErrorCode::kOk: return "OK";
    case c::ErrorCode::kCancelled: return "CANCELLED";
    case c::ErrorCode::kUnknown: return "UNKNOWN";
    case c::ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case c::ErrorCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case c::ErrorCode::kNotFound: return "NOT_FOUND";
    case c::ErrorCode::kAlreadyExists: return "ALREADY_EXISTS";
    case c::ErrorCode::kPermissionDenied: return "PERMISSION_DENIED";
    case c::ErrorCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case c::ErrorCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case c::ErrorCode::kAborted: return "ABORTED";
    case c::ErrorCode::kOutOfRange: return "OUT_OF_RANGE";
    case c::ErrorCode::kUnimplemented: return "UNIMPLEMENTED";
    case c::ErrorCode::kInternal: return "INTERNAL";
    case c::ErrorCode::kUnavailable: return "UNAVAILABLE";
    case c::ErrorCode::kDataLoss: return "DATA_LOSS";
    case c::ErrorCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

PjrtError consume_error(const c::Api* api, c::Error* error, const char* call) {
  auto message_args = c::make_args<c::ErrorMessageArgs>();
  message_args.error = error;
  api->Error_Message(&message_args);
  std::string message(message_args.message, message_args.message_size);

  auto code_args = c::make_args<c::ErrorGetCodeArgs>();
  code_args.error = error;
  c::ErrorCode code = c::ErrorCode::kUnknown;
  if (api->Error_GetCode(&code_args) == nullptr) code = code_args.code;

  auto destroy_args = c::make_args<c::ErrorDestroyArgs>();
  destroy_args.error = error;
  api->Error_Destroy(&destroy_args);

  return PjrtError(code, std::string(call) + " failed (" +
                             error_code_name(code) + "): " + message);
}

}  // namespace torch_tpu::pjrt
