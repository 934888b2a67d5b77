"""Recall: config and recipes, the seed -> spread -> merge -> rerank plan, and its pure scoring functions."""
