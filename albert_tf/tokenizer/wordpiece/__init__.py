"""The WordPiece vocabulary type (BERT's `vocab.txt`, Chinese ALBERT's).

`type` registers it; `vocab` reads the file; `chars` holds BERT's
`BasicTokenizer` as rules on single characters, which `graph` runs in the
graph for `layer.WordPieceTokenizer` and `host.HostWordPieceTokenizer` in
plain Python; `training` trains a vocabulary.
"""
