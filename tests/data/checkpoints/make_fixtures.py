#!/usr/bin/python3
"""Writes the small torch.save fixtures that tests/model/checkpoint_loader_test.cpp reads.

Run with Debian's python3-torch (1.13): /usr/bin/python3 make_fixtures.py. Every value is
deterministic (arange-based), so the test can assert exact numbers.
"""
import collections

import torch
import torch.nn as nn


def state_dict():
    sd = collections.OrderedDict()
    sd["conv.weight"] = torch.arange(24, dtype=torch.float32).reshape(2, 3, 2, 2) / 8
    sd["conv.bias"] = torch.tensor([1.5, -2.0])
    sd["bn.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)
    sd["half"] = torch.tensor([1.0, -2.5, 65504.0], dtype=torch.float16)
    sd["bf16"] = torch.tensor([1.0, -5.0], dtype=torch.bfloat16)
    sd["double"] = torch.tensor([0.25], dtype=torch.float64)
    base = torch.arange(10, dtype=torch.float32)
    sd["view"] = base[2:5]                                       # storage offset 2
    sd["transposed"] = torch.arange(12.0).reshape(3, 4).t()      # strides (1, 4)
    return sd


def main():
    sd = state_dict()
    torch.save(sd, "plain.pt")
    torch.save({"state_dict": sd, "epoch": 3}, "wrapped_state_dict.pt")
    torch.save({"net": sd}, "wrapped_net.pt")
    torch.save(collections.OrderedDict(("module." + k, v) for k, v in sd.items()), "module_prefix.pt")
    torch.save(sd, "legacy.pt", _use_new_zipfile_serialization=False)
    torch.save({"epoch": 1, "lr": 0.5}, "no_state_dict.pt")
    # A real module's state_dict: Parameters, the OrderedDict's _metadata, BN buffers.
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor([0.5, -0.5]).reshape(2, 1, 1, 1))
        m[0].bias.copy_(torch.tensor([0.125, 0.25]))
    torch.save(m.state_dict(), "module_state_dict.pt")


if __name__ == "__main__":
    main()
