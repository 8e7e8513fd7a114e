"""SearchMemory, GetChain and ListChains: finding chains, and the events in no chain yet.

`search_memory` answers the RPCs (`Recall`); `ranking` orders hits by the embedding's cosine and the
query's words (`lexicon`: the terms of a chain and of a query); `open_events` makes the scope's
events in no chain yet search candidates; `chain_message` turns a chain document into the public
Chain; `recall_warm_ups` writes what a recall changes on its chains (recall count, heat) behind
the answers.
"""
