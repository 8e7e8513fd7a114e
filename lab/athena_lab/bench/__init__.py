"""`athena bench`: the benchmark suite (project issue 7).

Every stage starts what it needs itself (redis-server, nx-27017, Milvus Lite, the local stack) and
reports figures as the median of repeated runs with min/max, each beside a baseline measured in the
same run. Nothing here is asserted against a time limit; docs/benchmarks.md holds the method and the
figures of a real run.
"""

__all__: list[str] = []
