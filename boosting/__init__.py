"""Boosting over fixed pools of pre-trained hypotheses (numpy only)."""
