// Umbrella header for the ptk CPU reference oracle: plain C++17, double accumulation, float storage.
// Ops: matmul, softmax, layernorm, rmsnorm, gelu (tanh form), silu, attention; all in namespace ptk::reference.
// Backward passes (templated on float/double, accumulating +=) in *_backward.hpp; embedding, cross_entropy, rope.
#pragma once

#include "ptk/reference/add.hpp"
#include "ptk/reference/attention.hpp"
#include "ptk/reference/gelu.hpp"
#include "ptk/reference/layernorm.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/rmsnorm.hpp"
#include "ptk/reference/silu.hpp"
#include "ptk/reference/softmax.hpp"
#include "ptk/reference/activations_backward.hpp"
#include "ptk/reference/attention_backward.hpp"
#include "ptk/reference/cross_entropy.hpp"
#include "ptk/reference/embedding.hpp"
#include "ptk/reference/layernorm_backward.hpp"
#include "ptk/reference/matmul_backward.hpp"
#include "ptk/reference/rmsnorm_backward.hpp"
#include "ptk/reference/rope.hpp"
#include "ptk/reference/softmax_backward.hpp"
