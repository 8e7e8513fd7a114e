"""The Athena lab: everything that measures, drives or trains the product, and ships in no service image.

- `athena_lab.bench`: `athena bench`, the benchmark suite (docs/benchmarks.md);
- `athena_lab.load`: `athena load`, many tenants, one noisy, and the loss check (docs/reliability.md);
- `athena_lab.locomo`: `athena eval locomo`, SearchMemory's evidence recall on LoCoMo (docs/formation.md);
- `athena_lab.segmentation`: `athena eval segmentation` and `athena train continuity|opener`, the
  chain-break detector's offline evaluation and training on public data (docs/segmentation.md);
- `athena_lab.commands`: those sub-commands, registered with `athena` through the `athena.commands`
  entry points (pyproject.toml).

The lab imports the product (athena, athena_cli's local stack, the services' packages); the product
never imports the lab (tests/test_lab_boundary.py holds that). scikit-learn, which fits the
detector's models, is the lab's own dependency (the `lab` extra).
"""
