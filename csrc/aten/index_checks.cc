#include "aten/index_checks.h"

#include <utility>

namespace torch_tpu::aten {

void append_int(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

at::Tensor run_checked(const OpCall& call, const CheckedBody& body, CheckError error, std::string message) {
  auto outs = run_op(call, [body](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    ops::Checked r = body(b, t, s);
    return std::vector<hlo::Value>{r.value, r.violated};
  });
  defer_check(outs.at(1), error, std::move(message));
  return outs.at(0);
}

void run_checked_into(const OpCall& call, const CheckedBody& body, const at::Tensor& dst, CheckError error,
                      std::string message) {
  auto extras = run_op_into(
      call,
      [body](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
        ops::Checked r = body(b, t, s);
        return std::vector<hlo::Value>{r.value, r.violated};
      },
      std::vector<at::Tensor>{dst});
  defer_check(extras.at(0), error, std::move(message));
}

void defer_target_check(const at::Tensor& target, int64_t classes, int64_t ignore_index) {
  if (target.numel() == 0) return;
  std::string key;
  append_int(key, classes);
  append_int(key, ignore_index);
  OpCall call{"aten::nll_loss_forward", "target_check" + key, {target}, {}};
  auto flag = run_op(call, [classes, ignore_index](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                  const std::vector<hlo::Value>&) {
    const hlo::Value v = b.convert(t[0], ElementType::kS64);
    const hlo::TensorType type = v.type();
    const hlo::Value outside = b.or_(b.compare(v, b.constant_splat_int(0, type), "LT"),
                                     b.compare(v, b.constant_splat_int(classes, type), "GE"));
    const hlo::Value counted = b.compare(v, b.constant_splat_int(ignore_index, type), "NE");
    return std::vector<hlo::Value>{ops::any_true(b, b.and_(outside, counted))};
  });
  defer_check(flag.at(0), CheckError::kIndex, "Target is out of bounds (a class target outside [0, " +
                                                  std::to_string(classes) + ") in nll_loss).");
}

}  // namespace torch_tpu::aten
