# tiny.profile with the attention weights required (tests/cli/certify.sh): a backend without
# a weights output does not meet it.
description: f32, causal bottom-right, LSE and the weights (tests only)
require: dtype=f32 causal=br lse weights
sample: 2 seed=9 max-work=20000
b1.hq2.l9.s17.dqk8.f32.causal=br.lse.seed1.gen=normal
b1.hq2.l8.s8.dqk8.f32.attnw.seed9.gen=normal
