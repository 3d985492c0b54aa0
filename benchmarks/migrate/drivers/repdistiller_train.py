"""HobbitLong/RepDistiller: one epoch of attention-transfer distillation with the repository's own loop
(helper/loops.py `train_distill`, which moves each batch with `.cuda()` when CUDA is available), models
(models/) and losses (distiller_zoo/), set up as train_student.py sets them up (`module_list.cuda()` when CUDA is
available), on random CIFAR-shaped batches: train_student.py itself needs torchvision and tensorboard_logger."""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.optim as optim
import torch.backends.cudnn as cudnn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import model_dict  # noqa: E402
from distiller_zoo import DistillKL, Attention  # noqa: E402
from helper.loops import train_distill, validate  # noqa: E402

torch.manual_seed(0)
opt = argparse.Namespace(distill="attention", gamma=1.0, alpha=1.0, beta=1000.0, print_freq=1, kd_T=4)
images = torch.randn(32, 3, 32, 32)
labels = torch.randint(0, 100, (32,))
train_loader = DataLoader(TensorDataset(images, labels, torch.arange(32)), batch_size=8, shuffle=False)
val_loader = DataLoader(TensorDataset(images, labels), batch_size=8, shuffle=False)

model_t = model_dict["resnet14"](num_classes=100)
model_s = model_dict["resnet8"](num_classes=100)
module_list = nn.ModuleList([model_s])
trainable_list = nn.ModuleList([model_s])
criterion_list = nn.ModuleList([nn.CrossEntropyLoss(), DistillKL(opt.kd_T), Attention()])
optimizer = optim.SGD(trainable_list.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
module_list.append(model_t)
if torch.cuda.is_available():
    module_list.cuda()
    criterion_list.cuda()
    cudnn.benchmark = True

train_acc, train_loss = train_distill(1, train_loader, module_list, criterion_list, optimizer, opt)
test_acc, test_acc_top5, test_loss = validate(val_loader, model_s, nn.CrossEntropyLoss(), opt)
print("train loss", round(float(train_loss), 4), "test loss", round(float(test_loss), 4))
print("on", next(model_s.parameters()).device.type)
