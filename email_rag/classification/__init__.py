"""Classifying a mail: the allowed values (``values``), the no-reply and thank-you rules
(``rules``), the team's history model (``history_model``) and its use per mailbox with the
fit cache (``history``), the LLM classification task (``task``), and the classifier that
asks them in that order (``classifier``). The pipeline step (``pipeline/classify.py``) only
turns the classifier's decision into a checkpoint."""
