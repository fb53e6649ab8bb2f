"""`token_classification`: a tag for every word (NER, POS tagging, chunking).

`data` reads CoNLL and CLUENER-style JSON-lines files, `tagging` the tagging
schemes, `features` the words on tokens and the tags back, `ner_eval` the
entity scores (`python -m albert_tf.tasks.token_classification.ner_eval`),
`task` the task.
"""

from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.token_classification.options import TokenOptions

DECLARED = (
    Declared("token_classification", f"{__name__}.task", TokenOptions,
             recipes=recipes_file(__file__)),
)
