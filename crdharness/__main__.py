import sys

from crdharness.cli import main

sys.exit(main())
