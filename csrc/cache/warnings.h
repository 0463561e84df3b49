// Warnings from the layers below Python (compile cache, disk tier).
//
// These layers cannot see Python, so they report through one replaceable
// handler: the default writes to stderr, and the Python module installs one
// that forwards to Python's `warnings` module.
#pragma once

#include <functional>
#include <string>

namespace torch_tpu::cache {

using WarningHandler = std::function<void(const std::string&)>;

// Replaces the handler; an empty function restores the default (stderr).
// The handler may be called from any thread, with no cache lock held.
void set_warning_handler(WarningHandler handler);

// Reports `message` through the current handler. Never throws: a handler
// that throws is bypassed and the message goes to stderr instead.
void warn(const std::string& message);

}  // namespace torch_tpu::cache
