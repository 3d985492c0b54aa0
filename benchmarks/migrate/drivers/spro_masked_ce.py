"""spro/practical-pytorch, seq2seq-translation/masked_cross_entropy.py: the batched seq2seq loss, called as its
training script calls it (logits and targets moved with `.cuda()` when CUDA is available), fixed with the module."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from masked_cross_entropy import masked_cross_entropy  # noqa: E402

torch.manual_seed(0)
USE_CUDA = torch.cuda.is_available()
layer = torch.nn.Linear(8, 11)
if USE_CUDA:
    layer.cuda()
features = torch.randn(3, 5, 8)
target = torch.randint(0, 11, (3, 5))
if USE_CUDA:
    features = features.cuda()
    target = target.cuda()
for step in range(2):
    logits = layer(features)
    loss = masked_cross_entropy(logits.contiguous(), target.contiguous(), [5, 4, 2])
    loss.backward()
    print("step", step, "loss", round(loss.item(), 4), "on", logits.device.type)
