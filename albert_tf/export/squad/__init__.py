"""Serving extractive question answering from raw text, in the graph.

`serving.SquadServing` is the serving module; `windows` slides windows over
a batch of tokenized contexts; `decode` picks each question's best span
and maps it back to characters of the context.
"""
