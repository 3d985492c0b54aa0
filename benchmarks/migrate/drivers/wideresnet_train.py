"""xternalz/WideResNet-pytorch: the model (wideresnet.py) trained as train.py trains it (`model.cuda()`, the loss
`.cuda()`, inputs `.cuda(non_blocking=True)`, all unconditional), on random CIFAR-shaped batches: train.py itself
needs torchvision and tensorboard_logger. Fixed with the repository's module."""
import os
import sys

import torch
import torch.nn as nn
import torch.backends.cudnn as cudnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wideresnet import WideResNet  # noqa: E402

torch.manual_seed(0)
model = WideResNet(10, 10, 1, dropRate=0.0)
model = model.cuda()
cudnn.benchmark = True
criterion = nn.CrossEntropyLoss().cuda()
optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
for step in range(3):
    input = torch.randn(8, 3, 32, 32)
    target = torch.randint(0, 10, (8,))
    target = target.cuda(non_blocking=True)
    input = input.cuda(non_blocking=True)
    output = model(input)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4), "on", output.device.type)
