"""Athena's durable stores: the MongoDB event log (and, with formation, chains and Milvus)."""

from athena.stores._event_log import EventLog, InsertOutcome, OpenCommit, metadata_filter_query
from athena.stores._mongo import connect_mongo, insert_own, mongo_unavailable

__all__ = [
    "EventLog",
    "InsertOutcome",
    "OpenCommit",
    "connect_mongo",
    "insert_own",
    "metadata_filter_query",
    "mongo_unavailable",
]
