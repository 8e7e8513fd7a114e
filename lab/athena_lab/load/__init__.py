"""`athena load`: many tenants and users, one tenant noisy, against a running stack; then proof that nothing was lost."""

from athena_lab.load._local import local_target
from athena_lab.load._report import render_report
from athena_lab.load._run import LoadConfig, LoadProgress, LoadTarget, run_load

__all__ = ["LoadConfig", "LoadProgress", "LoadTarget", "local_target", "render_report", "run_load"]
