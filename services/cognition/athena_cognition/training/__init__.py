"""Offline training and evaluation of the chain-break detector on public segmentation data."""
