// What a tpu storage holds. A PyTorch storage on the device has an ordinary
// StorageImpl whose DataPtr points to a pseudo-address (never dereferenced)
// and carries a StorageValue as its context: the storage's current device
// value. The value keeps the shape and element type of the tensor that last
// wrote the whole storage (on a TPU a reshape can cost a relayout), or is
// empty when nothing has written the storage yet.
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/device_buffer.h"

namespace torch_tpu::runtime {

// Held while an op reads storages' values, decides whether it may donate
// one, launches and puts its results in place (and by value() and
// set_value()): an in-place write is a read-modify-write of the whole
// storage, so two threads writing one storage, or one reading a value that
// another donates, would otherwise lose a write or read a donated buffer.
// Recursive: an op's lowering runs other ops, and a fused graph's
// materialization can start another's. Fused eager's recording and graph
// runs hold it too (backward records on autograd's device thread), so there
// is one lock and no order between locks. Launches are asynchronous, so it is held
// for host work only, not while the device computes.
std::recursive_mutex& values_mutex();

// Holds values_mutex() for a scope (every holder uses it), counting this
// thread's holds so that code can ask whether the thread holds it: the
// memory history must not wait for the GIL then (a thread holding the GIL
// may be waiting for the lock). An observer is told when the thread's
// outermost hold has ended, with no lock held: the memory history takes
// the Python stack of the op whose buffers were made under the lock there.
class ValuesLock {
 public:
  ValuesLock();
  ~ValuesLock();
  ValuesLock(const ValuesLock&) = delete;
  ValuesLock& operator=(const ValuesLock&) = delete;

  static bool held_by_this_thread();

  using ReleaseObserver = void (*)();
  // Set once, before ops run; null: none.
  static void set_release_observer(ReleaseObserver observer);
};

class StorageValue {
 public:
  StorageValue(int device, size_t nbytes, uintptr_t address)
      : device_(device), nbytes_(nbytes), address_(address) {}

  int device() const { return device_; }
  size_t nbytes() const { return nbytes_; }
  uintptr_t address() const { return address_; }

  // The current value; null when the storage was never written.
  DeviceBufferPtr value() const {
    ValuesLock lock;
    return value_;
  }
  // Replaces the value (a functional update: readers holding the old value
  // keep it alive until they finish).
  void set_value(DeviceBufferPtr value) {
    ValuesLock lock;
    value_ = std::move(value);
  }

 private:
  const int device_;
  const size_t nbytes_;
  const uintptr_t address_;
  DeviceBufferPtr value_;
};

// A pseudo-address range for a new storage of `nbytes`: unique,
// non-overlapping, in a reserved range no host pointer uses, so ATen's
// pointer arithmetic and comparisons on data_ptr() work.
uintptr_t reserve_address(size_t nbytes);

// True when `address` lies in the reserved range (getDeviceFromPtr).
bool is_device_address(uintptr_t address);

}  // namespace torch_tpu::runtime
