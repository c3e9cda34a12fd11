"""python3 -m wharf.handler MODULE...: imports the modules, whose
@handler functions register, and serves them (wharf.handler.main)."""

import sys

from wharf.handler import main

sys.exit(main())
