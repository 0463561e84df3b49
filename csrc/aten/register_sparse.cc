// Sparse layouts on tpu: refused, by name, with what to do instead.
//
// tpu has no sparse kernels (XLA programs take dense arrays). Without this
// file a sparse COO tensor failed with the dispatcher's generic "Could not
// run ... 'Sparsetpu' backend", and a compressed one (CSR, CSC, BSR, BSC)
// was made, its constructors being composite, and then failed at every use
// with messages such as "values expected sparse tensor layout but got
// SparseCsr" (composite kernels of `values` and others come before a
// fallback). So the compressed constructors and the conversions of dense
// tpu tensors are refused by name, and the fallbacks refuse every other op
// on a tpu tensor of a sparse layout, creation of COO ones included.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "aten/fallback.h"

namespace torch_tpu::aten {
namespace {

void refuse_sparse(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op_name(op),
                              ": sparse layouts (COO, CSR, CSC, BSR, BSC) are not supported on tpu; "
                              "keep sparse tensors on the CPU, or make them dense (.to_dense()) before "
                              "moving them to tpu; nn.Embedding and nn.EmbeddingBag need sparse=False");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
}

// A constructor's layout and device options select this key (BackendSelect).
TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  for (const char* op : {"_sparse_compressed_tensor_unsafe", "_sparse_compressed_tensor_with_dims",
                         "_sparse_csr_tensor_unsafe", "_sparse_csc_tensor_unsafe", "_sparse_bsr_tensor_unsafe",
                         "_sparse_bsc_tensor_unsafe", "sparse_compressed_tensor.comp_plain_value",
                         "sparse_compressed_tensor.comp_plain_value_size", "sparse_csr_tensor.crow_col_value",
                         "sparse_csr_tensor.crow_col_value_size", "sparse_csc_tensor.ccol_row_value",
                         "sparse_csc_tensor.ccol_row_value_size", "sparse_bsr_tensor.crow_col_value",
                         "sparse_bsr_tensor.crow_col_value_size", "sparse_bsc_tensor.ccol_row_value",
                         "sparse_bsc_tensor.ccol_row_value_size"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
  }
}

// Conversions of a dense tpu tensor to a sparse layout: refused in the same
// words (the generic fallback's message would offer a CPU fallback, which
// cannot make a sparse tpu tensor either).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : {"_to_sparse", "_to_sparse.sparse_dim", "_to_sparse_csr", "_to_sparse_csc",
                         "_to_sparse_bsr", "_to_sparse_bsc"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
  }
}

}  // namespace torch_tpu::aten
