"""The processing pipeline of one mail: a sequence of steps with checkpoints."""
