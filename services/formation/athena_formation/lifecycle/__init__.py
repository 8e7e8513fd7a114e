"""What happens to chains after they are formed: heat, archiving, erasure.

`heat` (importance, recall and decay with time; hot, warm, cooling, cold), `archiver` (cold chains
lose their embedding, then are archived), `erasure` (formation's part of ForgetUser, and the
tombstone checks FormChain honours).
"""
