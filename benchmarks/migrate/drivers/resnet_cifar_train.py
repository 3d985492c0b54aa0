"""akamaster/pytorch_resnet_cifar10: resnet20 (resnet.py) trained as trainer.py trains it (`DataParallel`, then
`model.cuda()`, the loss and inputs `.cuda()`, all unconditional), on random CIFAR-shaped batches: trainer.py
itself needs torchvision. Fixed with the repository's module."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resnet  # noqa: E402

torch.manual_seed(0)
model = torch.nn.DataParallel(resnet.__dict__["resnet20"]())
model.cuda()
criterion = nn.CrossEntropyLoss().cuda()
optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
model.train()
for step in range(3):
    input = torch.randn(8, 3, 32, 32)
    target = torch.randint(0, 10, (8,))
    target = target.cuda()
    input_var = input.cuda()
    target_var = target
    output = model(input_var)
    loss = criterion(output, target_var)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4), "on", output.device.type)
