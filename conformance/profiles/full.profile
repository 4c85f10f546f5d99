# full: everything docs/SEMANTICS.md defines: every element type, mask kind and alignment,
# windows, GQA, Dv != Dqk, dropout, softcap, padded and packed varlen, decode, empty
# problems, the LSE and the weights, the backward with d bias, every layout; the ci tier (with its golden sets) as the
# frozen part, on top of training.
description: everything the contract defines: every dtype, mask, feature, layout and output; the ci tier
extends: training
require: dtype=f64 dtype=f32 dtype=f16 dtype=bf16 causal=tl causal=br window mask=bool mask=add gqa dv!=dqk dropout softcap varlen=padded varlen=packed decode empty lse weights backward dbias layout=bshd layout=strided
sample: 300 seed=4

include ci
