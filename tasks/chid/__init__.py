"""CHID (Zheng et al. 2019, CLUE's idiom cloze): `--task=chid`.

`data` reads CLUE's and FewCLUE's files, one example a blank; `features`
packs each blank's rows as CLUE's baseline does (`albert_tf.steps.cloze`);
`task` scores them with the multiple-choice head, answers a passage group's
blanks (`albert_tf.steps.cloze_decode`) and writes the submission files;
`serving` answers raw passages.
"""

from albert_tf import datasets
from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.chid.options import ChidOptions

DECLARED = (
    Declared("chid", f"{__name__}.task", ChidOptions, recipes=recipes_file(__file__),
             data_folder="CLUE's CHID folder (train.json and train_answer.json, dev.json and "
                         "dev_answer.json, test1.1.json) or FewCLUE's (train_few_all.json, "
                         "dev_few_all.json, test.json)",
             data_source=datasets.clue_source("chid")),  # CLUE's chid_public.zip
)
