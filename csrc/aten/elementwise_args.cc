#include "aten/elementwise_args.h"

#include <c10/util/Exception.h>

namespace torch_tpu::aten {

ArgSlot add_arg(OpCall& call, const at::Tensor& t, ElementType scalar_type) {
  if (t.device().is_cpu() && t.dim() == 0) {
    call.scalars.push_back({scalar_type, t.item()});
    return {true, call.scalars.size() - 1};
  }
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, tpu and ",
              t.device(), "! (when checking arguments for ", call.name, ")");
  call.tensors.push_back(t);
  return {false, call.tensors.size() - 1};
}

void append_slot(std::string& attributes, const ArgSlot& slot) {
  attributes.push_back(slot.scalar ? 's' : 't');
}

}  // namespace torch_tpu::aten
