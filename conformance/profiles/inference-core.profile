# inference-core: what an inference attention kernel (FlashAttention-style, f16/bf16) must
# compute: causal masks of both alignments, GQA/MQA, decode against a KV cache, padded
# variable lengths, the LSE, the [B, L, H, D] layout. Grammar: conformance/certification/profile.hpp (a tier
# file with description / require / sample lines). Frozen: these cases never change for a
# given file; the sampled part is fixed by the seed.
description: f16/bf16 inference: causal top-left and bottom-right, GQA/MQA, decode, padded varlen, LSE
require: dtype=f16 dtype=bf16 causal=tl causal=br gqa decode varlen=padded lse layout=bshd
sample: 150 seed=1

# family: dtype
# plain shapes around tile edges, the common head dims
b2.hq4.l{1,17,128}.s{64,513}.dqk{64,128,256}.{f16,bf16}.seed101.gen=normal
# family: masks
# causal, both alignments; L > S leaves bottom-right rows fully masked (O = 0, LSE = -inf)
b2.hq4.l{17,128}.s{128,300}.dqk{64,128}.{f16,bf16}.causal={tl,br}.seed102.gen=normal
b1.hq2.l300.s128.dqk64.bf16.causal=br.lse.seed103.gen=normal
# family: gqa
# grouped-query (8/2) and multi-query (8/1)
b2.hq8.hkv{1,2}.l64.s{64,200}.dqk{64,128}.{f16,bf16}.causal=br.seed104.gen=normal
# family: batch1-parallel
# decode: one query row against a KV cache, Llama-style GQA 32/8
b{1,4}.hq32.hkv8.l1.s{1,4097}.dqk128.{f16,bf16}.lse.seed105.gen=normal
b1.hq8.hkv1.l4.s8192.dqk128.bf16.causal=br.lse.seed106.gen=normal
# family: varlen
# padded variable lengths, with an empty sequence and a decode batch
b3.hq4.hkv2.l64.s96.dqk64.{f16,bf16}.qlen=64_1_33.kvlen=96_7_0.causal={tl,br}.lse.seed107.gen=normal
b3.hq8.hkv2.l1.s1000.dqk128.bf16.kvlen=1000_1_517.lse.seed108.gen=normal
# family: alignment
b2.hq4.hkv2.l33.s65.dqk64.{f16,bf16}.lay=bshd.causal=br.lse.seed109.gen=normal
# family: logits
# adversarial data: large logits, logits near exp overflow, V near the maximum, subnormals
b1.hq2.l64.s64.dqk64.{f16,bf16}.causal=br.lse.seed110.gen={large_logits,logits_88,negative_logits,v_near_max,denormals}
b2.hq2.l33.s47.dqk64.bf16.qlen=33_9.kvlen=47_13.lse.seed111.gen=nan_beyond
