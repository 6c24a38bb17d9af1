#pragma once
// ptk: portable transformer kernels. Include this for the tensor type and every op.
#include "ptk/core/compat.hpp"
#include "ptk/core/error.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/ops/activations.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/ops/cross_entropy.hpp"
#include "ptk/ops/embedding.hpp"
#include "ptk/ops/layernorm.hpp"
#include "ptk/ops/matmul.hpp"
#include "ptk/ops/rmsnorm.hpp"
#include "ptk/ops/rope.hpp"
#include "ptk/ops/softmax.hpp"
