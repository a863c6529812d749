"""Talking to the language model: policy, budget, slots, prompts, classification, draft checks."""
