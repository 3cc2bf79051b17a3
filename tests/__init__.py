"""The test suite.

Every test process imports the whole project, and so does every server, refit and command a
test starts. Where ``PYTHONDONTWRITEBYTECODE`` is set (as on some build machines), none of
them would keep what they compile: each would compile the project, and pytest rewrite every
test module, from source again (about 7 s of the suite's two minutes on two cores). So the
suite's processes write their compiled modules to ``__pycache__`` (ignored by git) whatever
that setting says, and the processes they start read them.
"""

import sys

sys.dont_write_bytecode = False
