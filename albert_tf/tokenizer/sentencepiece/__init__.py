"""The SentencePiece vocabulary type (ALBERT's English models).

`type` registers it; `vocab` reads the model (special ids, casing, the
digit-comma rule); `layer.AlbertTokenizer` tokenizes in the graph (with
`graph_ops`, `graph_offsets`, `graph_ties`, `graph_viterbi`) and
`host.HostTokenizer` in plain Python; `training` trains a model with ALBERT's
settings.
"""
