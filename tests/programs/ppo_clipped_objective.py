"""PPO's clipped surrogate loss: a softmax policy, log-probs gathered with
np.take_along_axis, ratio = exp(new - old), np.clip(ratio, 1 - eps, 1 + eps), np.minimum,
GAE advantages computed backwards in a Python loop, an entropy bonus."""
import numpy as np


def compute_gae(rewards, values, dones, gamma=0.99, lam=0.95):
    advantages = np.zeros_like(rewards)
    lastgaelam = 0.0
    T = len(rewards)
    for t in reversed(range(T)):
        next_value = values[t + 1] if t + 1 < T else 0.0
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nonterminal * lastgaelam
    return advantages


def log_softmax(logits):
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def ppo_loss(theta, obs, actions, old_logp, rewards, values, dones, clip_eps=0.2, ent_coef=0.01):
    adv = compute_gae(rewards, values, dones)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    logp_all = log_softmax(obs @ theta)
    logp = np.take_along_axis(logp_all, actions[:, None], axis=1).squeeze(1)
    ratio = np.exp(logp - old_logp)
    surr1 = ratio * adv
    surr2 = np.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    policy_loss = -np.minimum(surr1, surr2).mean()
    entropy = -(np.exp(logp_all) * logp_all).sum(axis=-1).mean()
    return policy_loss - ent_coef * entropy


def example_args():
    rs = np.random.RandomState(8)
    T, obs_dim, n_actions = 12, 3, 4
    theta = rs.randn(obs_dim, n_actions) * 0.5
    obs = rs.randn(T, obs_dim)
    actions = rs.randint(n_actions, size=T)
    old_theta = theta + 0.1 * rs.randn(obs_dim, n_actions)
    old_logp = log_softmax(obs @ old_theta)[np.arange(T), actions]
    rewards = rs.randn(T)
    values = rs.randn(T)
    dones = (rs.rand(T) < 0.15).astype(float)
    return theta, obs, actions, old_logp, rewards, values, dones


CASE = dict(f=ppo_loss, args=example_args, wrt=0)
