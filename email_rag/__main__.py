import faulthandler
import sys

from .cli import main

# a crash in a C extension (the MariaDB connector) prints the Python stack instead of a
# process that just vanishes (a CI chaos run ended with no output and no traceback)
faulthandler.enable()
sys.exit(main())
