"""hunkim/PyTorchZeroToAll, seq2seq_models.py: a training step written as the course's scripts write it (the model
moved with `.cuda()` when CUDA is available, inputs through the module's own `str2tensor`/`cuda_variable`), fixed with
the repository's module."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seq2seq_models as sm  # noqa: E402

torch.manual_seed(0)
N_CHARS = 128
encoder = sm.EncoderRNN(N_CHARS, 16)
decoder = sm.DecoderRNN(16, N_CHARS)
if torch.cuda.is_available():
    encoder.cuda()
    decoder.cuda()
params = list(encoder.parameters()) + list(decoder.parameters())
optimizer = torch.optim.Adam(params, lr=0.01)
criterion = nn.CrossEntropyLoss()

for step in range(2):
    src, target = sm.str2tensor("hello", eos=True), sm.str2tensor("world", eos=True)
    encoder_hidden = encoder.init_hidden()
    _, encoder_hidden = encoder(src, encoder_hidden)
    hidden = encoder_hidden
    loss = 0
    decoder_in = sm.str2tensor("_")
    for c in range(len(target)):
        output, hidden = decoder(decoder_in, hidden)
        loss += criterion(output, target[c:c + 1])
        decoder_in = target[c]
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4), "on", output.device.type)
