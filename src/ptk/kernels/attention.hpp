#pragma once
// attention_forward: out[BH,T,D] = softmax(scale · q kᵀ, causal) · v and lse[BH,T] = log Σ_j exp(scale · q·k_j)
// over the attended keys, for q[BH,T,D], k and v [BH,S,D]; causal (needs T == S) lets query t see keys j <= t.
// attention_backward: dq += scale·dS·k, dk += scale·dSᵀ·q, dv += Pᵀ·dout with P = exp(scale·q kᵀ − lse) rebuilt from the
// forward's lse, dS = P ∘ (dout·vᵀ − Drow), Drow[t] = dout[t]·out[t]; shapes as the forward's, dout and out as q.
// The kernels: attention_forward.hpp, attention_backward.hpp; their tiles: tuning.hpp.
#include "ptk/kernels/attention_backward.hpp"
#include "ptk/kernels/attention_forward.hpp"
