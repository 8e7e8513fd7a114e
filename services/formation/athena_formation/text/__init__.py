"""Formation's text room: the messages of a segment, their sentences and words, stop words, names.

Every word formation counts comes from `athena.text` (one Unicode tokenizer, one stemmer, one
stop-word source for the whole project); these modules add what only formation needs: which words
carry content (`stopwords`), which capitalised words are first names (`gazetteer`), the months of
each language (`calendar_words`), and a segment's messages and sentences (`messages`).
"""
