"""`python -m verify.peer`: the peer command (verify.commands.peer.main), as `python -m verify peer`."""

import sys

from verify.commands.peer import main

if __name__ == "__main__":
    sys.exit(main())
