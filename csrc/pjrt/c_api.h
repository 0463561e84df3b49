// The project's own declarations of the part of the PJRT C API it uses.
//
// PJRT plugins (libtpu, the CUDA plugin, the XLA CPU plugin) export one C
// symbol, GetPjrtApi, which returns a table of function pointers. Every
// function takes one argument struct that starts with `struct_size` and an
// extension chain. The layouts below follow the published ABI field by field.
//
// Compatibility rules (see docs/pjrt.md):
//  * Argument structs are declared at the newest layout we know; plugins
//    accept a caller struct that is larger than theirs and ignore the tail.
//    We zero-fill them and set struct_size = sizeof (make_args<T>() below).
//  * Function slots are read only after checking that the plugin's table is
//    long enough to contain them (Plugin::has()).
//  * Slots we never call are declared as `UnusedSlot` to keep the offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace torch_tpu::pjrt::c {

struct Error;
struct Event;
struct Client;
struct Device;
struct DeviceDescription;
struct Memory;
struct Executable;
struct LoadedExecutable;
struct Buffer;
struct SerializedExecutable;
struct ExecuteContext;

struct ExtensionBase {
  size_t struct_size;
  int type;
  ExtensionBase* next;
};

// Zero-filled argument struct with struct_size set: the only way this
// project creates PJRT argument structs.
template <typename T>
inline T make_args() {
  T args;
  std::memset(&args, 0, sizeof(T));
  args.struct_size = sizeof(T);
  return args;
}

#define TORCH_TPU_PJRT_ARGS_HEADER \
  size_t struct_size;              \
  ExtensionBase* extension_start

struct ApiVersion {
  TORCH_TPU_PJRT_ARGS_HEADER;
  int major_version;
  int minor_version;
};

// ---- errors ---------------------------------------------------------------

enum class ErrorCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

struct ErrorDestroyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Error* error;
};
struct ErrorMessageArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const Error* error;
  const char* message;
  size_t message_size;
};
struct ErrorGetCodeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const Error* error;
  ErrorCode code;
};

// ---- named values (plugin attributes, client options) ---------------------

enum class NamedValueType : int {
  kString = 0,
  kInt64 = 1,
  kInt64List = 2,
  kFloat = 3,
  kBool = 4,
};

struct NamedValue {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const char* name;
  size_t name_size;
  NamedValueType type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;  // string length or list length; 1 for scalars
};

struct PluginInitializeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
};
struct PluginAttributesArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const NamedValue* attributes;
  size_t num_attributes;
};

// ---- events ---------------------------------------------------------------

struct EventDestroyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Event* event;
};
struct EventIsReadyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Event* event;
  bool is_ready;
};
struct EventErrorArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Event* event;
};
struct EventAwaitArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Event* event;
};
using EventCallback = void (*)(Error* error, void* user_arg);
struct EventOnReadyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Event* event;
  EventCallback callback;
  void* user_arg;
};

// ---- client ---------------------------------------------------------------

struct ClientCreateArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;  // distributed key-value store hooks: unused here
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  Client* client;  // out
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct ClientDestroyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
};
struct ClientStringArgs {  // PlatformName and PlatformVersion share a layout
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  const char* value;
  size_t value_size;
};
struct ClientProcessIndexArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  int process_index;
};
struct ClientDevicesArgs {  // Devices and AddressableDevices share a layout
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  Device* const* devices;
  size_t num_devices;
};

struct Program {
  TORCH_TPU_PJRT_ARGS_HEADER;
  char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
};
struct ClientCompileArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  const Program* program;
  const char* compile_options;
  size_t compile_options_size;
  LoadedExecutable* executable;  // out
};

enum class BufferType : int {
  kInvalid = 0,
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kF32,
  kF64,
  kBF16,
  kC64,
  kC128,
  kF8E5M2 = 16,
  kF8E4M3FN = 17,
  kF8E5M2FNUZ = 19,
  kF8E4M3FNUZ = 20,
};

enum class HostBufferSemantics : int {
  kImmutableOnlyDuringCall = 0,
  kImmutableUntilTransferCompletes = 1,
  kImmutableZeroCopy = 2,
  kMutableZeroCopy = 3,
};

struct ClientBufferFromHostArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  const void* data;
  BufferType type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;
  size_t num_byte_strides;
  HostBufferSemantics host_buffer_semantics;
  Device* device;
  Memory* memory;
  void* device_layout;
  Event* done_with_host_buffer;  // out
  Buffer* buffer;                // out
};

// ---- devices --------------------------------------------------------------

struct DeviceGetDescriptionArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Device* device;
  DeviceDescription* description;
};
struct DeviceLocalHardwareIdArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Device* device;
  int local_hardware_id;
};
struct DeviceDescriptionIdArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  DeviceDescription* description;
  int id;
};
struct DeviceDescriptionStringArgs {  // Kind, DebugString, ToString
  TORCH_TPU_PJRT_ARGS_HEADER;
  DeviceDescription* description;
  const char* value;
  size_t value_size;
};

struct DeviceMemoryStatsArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Device* device;
  int64_t bytes_in_use;
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
};

// ---- executables ----------------------------------------------------------

struct ExecutableDestroyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
};
struct LoadedExecutableDestroyArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  LoadedExecutable* executable;
};
struct LoadedExecutableGetExecutableArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  LoadedExecutable* loaded_executable;
  Executable* executable;  // out, owned by the caller
};
struct ExecutableNameArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  const char* name;
  size_t name_size;
};
struct ExecutableCountArgs {  // NumReplicas, NumPartitions, NumOutputs
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  size_t count;
};
struct ExecutableCodeSizeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  int64_t size_in_bytes;
};
struct ExecutableOutputTypesArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  BufferType* output_types;
  size_t num_output_types;
};
struct ExecutableOutputDimensionsArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  size_t num_outputs;
  const int64_t* dims;  // all outputs' dims, concatenated
  const size_t* dim_sizes;
};
struct ExecutableFingerprintArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  const char* fingerprint;
  size_t fingerprint_size;
};
// Mirrors xla::CompiledMemoryStats: what one execution takes on the device
// (and on the host, for programs that keep data there).
struct ExecutableMemoryStatsArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Executable* executable;
  int64_t generated_code_size_in_bytes;
  int64_t argument_size_in_bytes;
  int64_t output_size_in_bytes;
  int64_t alias_size_in_bytes;  // argument bytes reused as outputs
  int64_t temp_size_in_bytes;
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  // Later minor versions; a plugin older than them ignores the extra bytes.
  int64_t peak_memory_in_bytes;
  int64_t total_size_in_bytes;
};
struct ExecutableSerializeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  const Executable* executable;
  const char* bytes;
  size_t bytes_size;
  SerializedExecutable* serialized;
  void (*serialized_deleter)(SerializedExecutable*);
};
struct ExecutableDeserializeAndLoadArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Client* client;
  const char* serialized;
  size_t serialized_size;
  LoadedExecutable* loaded_executable;  // out
  const char* overridden_compile_options;
  size_t overridden_compile_options_size;
};

struct ExecuteOptions {
  TORCH_TPU_PJRT_ARGS_HEADER;
  void** send_callbacks;
  void** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  ExecuteContext* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
struct LoadedExecutableExecuteArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;    // [num_devices][num_outputs], out
  Event** device_complete_events;  // [num_devices], out, may be null
  Device* execute_device;
};

// ---- buffers --------------------------------------------------------------

struct BufferArgs {  // Destroy, Delete, IncreaseExternalReferenceCount, ...
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
};
struct BufferElementTypeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  BufferType type;
};
struct BufferDimensionsArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  const int64_t* dims;
  size_t num_dims;
};
struct BufferOnDeviceSizeArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  size_t on_device_size_in_bytes;
};
struct BufferDeviceArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  Device* device;
};
struct BufferIsDeletedArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  bool is_deleted;
};
struct BufferCopyToDeviceArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  Device* dst_device;
  Buffer* dst_buffer;  // out
};
struct BufferToHostArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* src;
  void* host_layout;  // null: dense row-major
  void* dst;          // null: only query dst_size
  size_t dst_size;
  Event* event;  // out
};
struct BufferReadyEventArgs {
  TORCH_TPU_PJRT_ARGS_HEADER;
  Buffer* buffer;
  Event* event;  // out
};

#undef TORCH_TPU_PJRT_ARGS_HEADER

// ---- the function table ---------------------------------------------------

template <typename Args>
using Fn = Error* (*)(Args*);
using UnusedSlot = void (*)();

struct Api {
  size_t struct_size;
  ExtensionBase* extension_start;
  ApiVersion pjrt_api_version;

  void (*Error_Destroy)(ErrorDestroyArgs*);
  void (*Error_Message)(ErrorMessageArgs*);
  Fn<ErrorGetCodeArgs> Error_GetCode;

  Fn<PluginInitializeArgs> Plugin_Initialize;
  Fn<PluginAttributesArgs> Plugin_Attributes;

  Fn<EventDestroyArgs> Event_Destroy;
  Fn<EventIsReadyArgs> Event_IsReady;
  Fn<EventErrorArgs> Event_Error;
  Fn<EventAwaitArgs> Event_Await;
  Fn<EventOnReadyArgs> Event_OnReady;

  Fn<ClientCreateArgs> Client_Create;
  Fn<ClientDestroyArgs> Client_Destroy;
  Fn<ClientStringArgs> Client_PlatformName;
  Fn<ClientProcessIndexArgs> Client_ProcessIndex;
  Fn<ClientStringArgs> Client_PlatformVersion;
  Fn<ClientDevicesArgs> Client_Devices;
  Fn<ClientDevicesArgs> Client_AddressableDevices;
  UnusedSlot Client_LookupDevice;
  UnusedSlot Client_LookupAddressableDevice;
  UnusedSlot Client_AddressableMemories;
  Fn<ClientCompileArgs> Client_Compile;
  UnusedSlot Client_DefaultDeviceAssignment;
  Fn<ClientBufferFromHostArgs> Client_BufferFromHostBuffer;

  Fn<DeviceDescriptionIdArgs> DeviceDescription_Id;
  UnusedSlot DeviceDescription_ProcessIndex;
  UnusedSlot DeviceDescription_Attributes;
  Fn<DeviceDescriptionStringArgs> DeviceDescription_Kind;
  Fn<DeviceDescriptionStringArgs> DeviceDescription_DebugString;
  Fn<DeviceDescriptionStringArgs> DeviceDescription_ToString;

  Fn<DeviceGetDescriptionArgs> Device_GetDescription;
  UnusedSlot Device_IsAddressable;
  Fn<DeviceLocalHardwareIdArgs> Device_LocalHardwareId;
  UnusedSlot Device_AddressableMemories;
  UnusedSlot Device_DefaultMemory;
  Fn<DeviceMemoryStatsArgs> Device_MemoryStats;

  UnusedSlot Memory_Id;
  UnusedSlot Memory_Kind;
  UnusedSlot Memory_DebugString;
  UnusedSlot Memory_ToString;
  UnusedSlot Memory_AddressableByDevices;

  Fn<ExecutableDestroyArgs> Executable_Destroy;
  Fn<ExecutableNameArgs> Executable_Name;
  Fn<ExecutableCountArgs> Executable_NumReplicas;
  Fn<ExecutableCountArgs> Executable_NumPartitions;
  Fn<ExecutableCountArgs> Executable_NumOutputs;
  Fn<ExecutableCodeSizeArgs> Executable_SizeOfGeneratedCodeInBytes;
  UnusedSlot Executable_GetCostAnalysis;
  UnusedSlot Executable_OutputMemoryKinds;
  UnusedSlot Executable_OptimizedProgram;
  Fn<ExecutableSerializeArgs> Executable_Serialize;

  Fn<LoadedExecutableDestroyArgs> LoadedExecutable_Destroy;
  Fn<LoadedExecutableGetExecutableArgs> LoadedExecutable_GetExecutable;
  UnusedSlot LoadedExecutable_AddressableDevices;
  UnusedSlot LoadedExecutable_Delete;
  UnusedSlot LoadedExecutable_IsDeleted;
  Fn<LoadedExecutableExecuteArgs> LoadedExecutable_Execute;
  Fn<ExecutableDeserializeAndLoadArgs> Executable_DeserializeAndLoad;
  UnusedSlot LoadedExecutable_Fingerprint;

  Fn<BufferArgs> Buffer_Destroy;
  Fn<BufferElementTypeArgs> Buffer_ElementType;
  Fn<BufferDimensionsArgs> Buffer_Dimensions;
  UnusedSlot Buffer_UnpaddedDimensions;
  UnusedSlot Buffer_DynamicDimensionIndices;
  UnusedSlot Buffer_GetMemoryLayout;
  Fn<BufferOnDeviceSizeArgs> Buffer_OnDeviceSizeInBytes;
  Fn<BufferDeviceArgs> Buffer_Device;
  UnusedSlot Buffer_Memory;
  Fn<BufferArgs> Buffer_Delete;
  Fn<BufferIsDeletedArgs> Buffer_IsDeleted;
  Fn<BufferCopyToDeviceArgs> Buffer_CopyToDevice;
  Fn<BufferToHostArgs> Buffer_ToHostBuffer;
  UnusedSlot Buffer_IsOnCpu;
  Fn<BufferReadyEventArgs> Buffer_ReadyEvent;
  UnusedSlot Buffer_UnsafePointer;
  UnusedSlot Buffer_IncreaseExternalReferenceCount;
  UnusedSlot Buffer_DecreaseExternalReferenceCount;
  UnusedSlot Buffer_OpaqueDeviceMemoryDataPointer;

  UnusedSlot CopyToDeviceStream_Destroy;
  UnusedSlot CopyToDeviceStream_AddChunk;
  UnusedSlot CopyToDeviceStream_TotalBytes;
  UnusedSlot CopyToDeviceStream_GranuleSize;
  UnusedSlot CopyToDeviceStream_CurrentBytes;

  UnusedSlot TopologyDescription_Create;
  UnusedSlot TopologyDescription_Destroy;
  UnusedSlot TopologyDescription_PlatformName;
  UnusedSlot TopologyDescription_PlatformVersion;
  UnusedSlot TopologyDescription_GetDeviceDescriptions;
  UnusedSlot TopologyDescription_Serialize;
  UnusedSlot TopologyDescription_Attributes;

  UnusedSlot Compile;  // ahead-of-time compile against a topology

  // Slots appended in later minor versions: check Plugin::has() first.
  Fn<ExecutableOutputTypesArgs> Executable_OutputElementTypes;
  Fn<ExecutableOutputDimensionsArgs> Executable_OutputDimensions;
  UnusedSlot Buffer_CopyToMemory;
  UnusedSlot Client_CreateViewOfDeviceBuffer;
  Fn<ExecutableFingerprintArgs> Executable_Fingerprint;
  UnusedSlot Client_TopologyDescription;
  Fn<ExecutableMemoryStatsArgs> Executable_GetCompiledMemoryStats;
  UnusedSlot Memory_Kind_Id;
  UnusedSlot ExecuteContext_Create;
  UnusedSlot ExecuteContext_Destroy;
  UnusedSlot Buffer_CopyRawToHost;
};

// The entry point every plugin exports.
using GetPjrtApiFn = const Api* (*)();

}  // namespace torch_tpu::pjrt::c
