"""REINFORCE surrogate loss: returns computed backwards (running = r + gamma * running) per step."""
import numpy as np

GAMMA = 0.9


def discount(rewards, gamma=GAMMA):
    returns = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def policy(theta, state):
    logits = state @ theta
    logits = logits - np.max(logits)
    return np.exp(logits) / np.sum(np.exp(logits))


def reinforce_loss(theta, states, actions, rewards):
    returns = discount(rewards)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = 0.0
    for s, a, G in zip(states, actions, returns):
        probs = policy(theta, s)
        loss = loss - np.log(probs[a]) * G
    return loss


def example_args():
    rs = np.random.RandomState(54)
    return 0.1 * rs.randn(3, 2), rs.randn(6, 3), [0, 1, 1, 0, 1, 0], rs.rand(6)


CASE = dict(f=reinforce_loss, args=example_args, wrt=0)
