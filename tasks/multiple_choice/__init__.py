"""Multiple choice: your own files (`multiple_choice`), RACE and C3.

`task` is the shared per-choice scorer (featurization, head, metrics,
predictions, serving) and the task on your own JSON-lines files; `race` and
`c3` read those data sets.
"""

from albert_tf.tasks.base import Declared, recipes_file
from albert_tf.tasks.multiple_choice.options import ChoiceOptions, MultipleChoiceOptions

_RECIPES = recipes_file(__file__)

DECLARED = (
    Declared("multiple_choice", f"{__name__}.task", MultipleChoiceOptions, recipes=_RECIPES),
    Declared("race", f"{__name__}.race", ChoiceOptions, recipes=_RECIPES,
             data_folder="the RACE folder with train/, dev/ and test/"),
    Declared("c3", f"{__name__}.c3", ChoiceOptions, recipes=_RECIPES,
             data_folder="the folder of c3-d-{train,dev,test}.json and c3-m-*.json"),
)
