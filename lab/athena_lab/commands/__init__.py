"""The lab's sub-commands of `athena`, registered through the `athena.commands` entry points
(pyproject.toml): `bench`, `load`, `eval` (segmentation, locomo) and `train`.

Each entry point names a typer command function (registered under the entry point's name) or a
`typer.Typer` group (added under it); athena_cli.main loads them and never imports this package.
Everything heavy is imported inside the commands, so listing them costs the CLI nothing.
"""
