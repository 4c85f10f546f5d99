# A tiny certification profile for the tests of certify (tests/cli/certify.sh): f32 with
# causal bottom-right and the LSE; the weights case is outside its features.
description: f32, causal bottom-right, LSE (tests only)
require: dtype=f32 causal=br lse
sample: 4 seed=9 max-work=20000
b1.hq2.l9.s17.dqk8.f32.causal=br.lse.seed1.gen=normal
b2.hq4.hkv4.l33.s47.dqk64.dv64.f32.causal=br.lse.seed2.gen=normal
b1.hq2.l5.s5.dqk8.f32.seed1.gen=normal
b1.hq2.l8.s8.dqk8.f32.attnw.seed9.gen=normal
