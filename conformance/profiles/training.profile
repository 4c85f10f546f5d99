# training: inference-core plus what training needs: dropout with the exact Philox keep-mask
# of the contract (docs/SEMANTICS.md "Dropout"), the attention weights, and the backward
# (dQ, dK, dV given dO, docs/SEMANTICS.md "Backward"), bitwise the same at any thread count.
description: inference-core plus dropout with the exact keep-mask, the attention weights output and the backward (deterministic)
extends: inference-core
require: dropout weights backward
sample: 150 seed=2

# family: dropout
b2.hq4.l{17,128}.s{64,200}.dqk64.{f16,bf16}.p{0.1,0.5}.dseed7.doff3.seed201.gen=normal
b2.hq8.hkv2.l64.s64.dqk128.{f16,bf16}.causal={tl,br}.p0.2.dseed11.lse.seed202.gen=normal
b3.hq4.hkv2.l64.s96.dqk64.bf16.qlen=64_1_33.kvlen=96_7_0.causal=br.p0.3.dseed5.lse.seed203.gen=normal
# family: outputs
b1.hq2.l{16,33}.s{16,65}.dqk{32,64}.{f16,bf16}.attnw.seed204.gen=normal
b1.hq4.hkv2.l24.s40.dqk64.bf16.causal=br.p0.25.dseed9.attnw.lse.seed205.gen=normal
# family: backward
# gradients over the inference-core features and dropout: causal both ways, GQA/MQA, decode,
# padded varlen, bshd, dropout past the first key block
b2.hq8.hkv{2,8}.l{1,64}.s{64,200}.dqk64.{f16,bf16}.causal={tl,br}.lse.bwd.seed206.gen=normal
b3.hq4.hkv2.l64.s96.dqk64.bf16.qlen=64_1_33.kvlen=96_7_0.causal=br.p0.3.dseed5.lse.bwd.seed207.gen=normal
b1.hq4.hkv1.l40.s300.dqk64.{f16,bf16}.lay=bshd.p0.2.dseed3.doff1.lse.bwd.seed208.gen=normal
