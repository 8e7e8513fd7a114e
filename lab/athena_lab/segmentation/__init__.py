"""Offline evaluation and training of the chain-break detector on public segmentation data.

Dialogues are segmented by the product's `athena_cognition.detector.replay()`; the trained artifacts
are written into the product's detector package (athena_cognition/detector/), which runs them with
numpy alone (scikit-learn fits them here, never in a service).
"""
