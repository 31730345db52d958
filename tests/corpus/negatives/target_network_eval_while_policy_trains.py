# guards: TL104
"""DQN: the target network stays in eval mode; the online network trains.

Correct for TL104: ``target_net.eval()`` concerns a model the loop never
trains; the Q-network the optimizer updates is switched with ``train()``.
"""
import torch
import torch.nn.functional as F


def optimize(policy_net, target_net, memory, optimizer, episodes, batch_size=32, gamma=0.99):
    for episode in range(episodes):
        target_net.load_state_dict(policy_net.state_dict())
        target_net.eval()
        policy_net.train()
        for states, actions, rewards, next_states, dones in memory.batches(batch_size):
            q = policy_net(states).gather(1, actions)
            with torch.no_grad():
                q_next = target_net(next_states).max(1, keepdim=True).values
            target = rewards + gamma * q_next * (1 - dones)
            loss = F.smooth_l1_loss(q, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
