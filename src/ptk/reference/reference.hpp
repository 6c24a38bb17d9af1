// Umbrella header for the ptk CPU reference oracle: plain C++17, double accumulation, float storage.
// Ops: matmul, softmax, layernorm, rmsnorm, gelu (tanh form), silu, attention; all in namespace ptk::reference.
#pragma once

#include "ptk/reference/attention.hpp"
#include "ptk/reference/gelu.hpp"
#include "ptk/reference/layernorm.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/rmsnorm.hpp"
#include "ptk/reference/silu.hpp"
#include "ptk/reference/softmax.hpp"
