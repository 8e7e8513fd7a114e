"""Every MongoDB collection Athena uses, in one place (as athena.keys is for Redis).

Each collection has one owner module, the only code that reads or writes it; the others go through
that module. The fields of each document are listed in docs/architecture.md, "MongoDB collections".
"""

from __future__ import annotations

__all__ = ["CHAINS", "COMMITS", "ERASURES", "EVENTS", "MIGRATIONS", "OUTCOMES"]

EVENTS = "cognitive_events"
"""The durable event log, one document per stored event. Owner: athena.stores.EventLog."""
COMMITS = "ingest_commits"
"""Open group commits of ingest (a batch whose Redis step may not have run). Owner: athena.stores.EventLog."""
MIGRATIONS = "athena_migrations"
"""Records of one-time data migrations that finished. Owner: athena.stores.EventLog."""
CHAINS = "cognitive_chains"
"""The cognitive chains. Owner: athena_formation.store.chain_store.ChainStore."""
OUTCOMES = "formation_outcomes"
"""One formation record per segment (plan, then done). Owner: athena_formation.store.chain_store.ChainStore."""
ERASURES = "erasures"
"""The erasure tombstones, one per ForgetUser. Owner: athena.tombstones.MongoTombstones."""
