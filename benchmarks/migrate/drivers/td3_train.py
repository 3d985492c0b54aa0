"""sfujim/TD3: the TD3 agent (TD3.py, module-level `device = "cuda" if available else "cpu"`) and its replay
buffer (utils.py), trained as main.py trains them, on random transitions instead of a gym environment."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import TD3  # noqa: E402
import utils  # noqa: E402

torch.manual_seed(0)
np.random.seed(0)
state_dim, action_dim, max_action = 3, 1, 2.0
policy = TD3.TD3(state_dim=state_dim, action_dim=action_dim, max_action=max_action, discount=0.99, tau=0.005,
                 policy_noise=0.2 * max_action, noise_clip=0.5 * max_action, policy_freq=2)
replay_buffer = utils.ReplayBuffer(state_dim, action_dim, max_size=100)
state = np.random.randn(state_dim)
for t in range(60):
    action = (policy.select_action(np.array(state)) + np.random.normal(0, max_action * 0.1, size=action_dim))
    action = action.clip(-max_action, max_action)
    next_state = np.random.randn(state_dim)
    reward = float(-np.square(next_state).sum())
    replay_buffer.add(state, action, next_state, reward, float(t % 20 == 19))
    state = next_state
    if t >= 40:
        policy.train(replay_buffer, batch_size=16)
print("action", np.round(policy.select_action(np.ones(state_dim)), 4))
print("actor param sum", round(sum(p.sum().item() for p in policy.actor.parameters()), 4))
print("on", next(policy.actor.parameters()).device.type)
