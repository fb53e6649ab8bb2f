"""Not a package: the root of albert_tf's repository.

Python reaches this file only from the folder above a clone that is named
`albert_tf` (the folder then shadows the installed package, as a package of
this name). Say so, instead of a half-empty namespace package whose
attributes are missing.
"""

import os

if __name__ == "albert_tf":  # (a tool that imports the folder by another name: nothing)
    raise ImportError(
        f"{os.path.dirname(os.path.abspath(__file__))} is a clone of albert_tf's "
        "repository, found because Python runs in the folder above it: run from another "
        "folder (the installed albert_tf is then imported) or from inside the clone (its "
        "albert_tf/ package), or clone it into a folder with another name (git clone ... "
        "albert-tf)")
