"""FormChain: a finished segment becomes a chain, or is merged into one, or is rejected.

`form_chain` runs the pipeline (`ChainFormer`): `analysis` (topics, entities, summary), then
`quality_gate` (is the segment worth a chain? with the signal of `personal_facts` and its
`self_description`), then `merge` (does the segment continue one of the user's recent chains?), then
the writes to the stores.
"""
