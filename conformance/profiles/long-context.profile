# long-context: nightly size. Sequence lengths up to 128k (2^17): decode against a 128k KV
# cache, a sliding-window chunk of 8k queries over a 128k cache, long causal and windowed
# prefills, with GQA/MQA and the LSE. A run takes minutes, most of it in the reference,
# whose cost grows with L*S even under a window (so no full 128k x 128k prefill here).
description: f16/bf16 long context: sliding windows, causal and decode at lengths up to 128k, GQA/MQA, LSE
require: dtype=f16 dtype=bf16 causal=tl causal=br window gqa decode varlen=padded lse layout=bshd
sample: 40 seed=3 max-work=33554432 max-len=16384

# family: long-sequences
b1.hq8.hkv1.l1.s131072.dqk128.{f16,bf16}.lse.seed301.gen=normal
b1.hq4.hkv1.l16.s131072.dqk128.bf16.causal=br.lse.seed302.gen=normal
b1.hq1.l8192.s131072.dqk64.bf16.win=256_0_br.lse.seed303.gen=normal
b1.hq2.hkv1.l32768.s32768.dqk128.f16.win=512_0_tl.seed304.gen=normal
b1.hq1.l16384.s16384.dqk64.{f16,bf16}.causal={tl,br}.lse.seed305.gen=normal
b2.hq2.hkv1.l1.s65536.dqk128.bf16.kvlen=65536_40000.lse.seed306.gen=normal
b1.hq2.l4096.s16384.dqk128.bf16.win=1024_64_br.lse.seed307.gen=normal
